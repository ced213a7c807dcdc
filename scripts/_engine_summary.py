import collections
import glob
import json
import sys

c = collections.Counter(); errs = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    text = open(f).read()
    try:
        doc = json.loads(text)
    except Exception:
        i = text.find('{"ok"')
        try:
            doc = json.loads(text[i:]) if i >= 0 else None
        except Exception:
            doc = None
    if doc is None:
        c["nojson"] += 1; errs["nojson: " + text[-200:]].append(f); continue
    for fu in doc["fusions"]:
        c[fu["status"]] += 1
        if fu["status"] != "pass":
            errs[(fu.get("error") or "mismatch")[:150]].append(f)
print("engine path:", dict(c))
for k, v in sorted(errs.items(), key=lambda kv: -len(kv[1]))[:25]:
    print(f"{len(v):4d} {k}\n      e.g. {v[0]}")
