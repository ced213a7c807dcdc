"""Does ``fusecli run --engine nvfuser`` agree with plain nvFuser, fusion by fusion?

    python3 scripts/hunt-vs-run.py HUNT_DIR RUN_JSON

``HUNT_DIR/hunt.json`` is ``scripts/nvfuser-hunt.py``'s record of each plain nvfuser_direct
script (``direct/fuzz_SEED.py``); ``RUN_JSON`` is ``fusecli run HUNT_DIR/fusecli --engine
nvfuser --json`` over the same fusions as fusecli repros. A fusion where the two disagree
(one passes, the other fails; or both fail at different assert locations) is what fusecli's
engine path changed: the translation's fault. Prints the counts and each disagreement.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _seed(path: str) -> str:
    match = re.search(r"fuzz_(\d+)", path)
    return match.group(1) if match else path


def _location(text: str) -> str:
    match = re.search(r"([\w/]+\.(?:cpp|h|cu)):(\d+)", text or "")
    return f"{match.group(1).split('csrc/')[-1]}:{match.group(2)}" if match else ""


def main() -> int:
    hunt = json.loads((Path(sys.argv[1]) / "hunt.json").read_text(encoding="utf-8"))
    try:
        run = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
    except ValueError as error:
        print(f"run --json: NOT one JSON document ({error})")
        return 1
    plain = {_seed(r["file"]): r for r in hunt}
    ours = {_seed(f.get("file") or f.get("path") or ""): f for f in run["fusions"]}
    agree, differ = 0, []
    for seed, record in sorted(plain.items(), key=lambda kv: int(kv[0])):
        mine = ours.get(seed)
        if mine is None:
            differ.append((seed, record["status"], "missing from the run"))
            continue
        plain_ok = record["status"] == "pass"
        mine_ok = mine["status"] in ("pass", "mismatch")
        same = plain_ok == mine_ok
        if same and not plain_ok:
            where = _location(record.get("tail", ""))
            mine_where = _location(json.dumps(mine))
            same = not where or not mine_where or where == mine_where
        if same:
            agree += 1
        else:
            detail = str(mine.get("error") or mine.get("message") or mine.get("detail") or "")
            differ.append((seed, record["status"], f"{mine['status']}: {detail[:160]}"))
    print(f"{len(plain)} fusions: engine path agrees with plain nvFuser on {agree}, "
          f"differs on {len(differ)}")
    for seed, status, mine in differ:
        print(f"  fuzz_{seed}: plain {status}; fusecli run --engine nvfuser: {mine}")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
