"""Summarize a ``fusecli run --json`` document: does it parse, statuses, failure clusters.

    python3 scripts/run-json-summary.py run.json
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    try:
        with open(sys.argv[1], encoding="utf-8") as handle:
            doc = json.load(handle)
    except ValueError as error:
        print(f"run --json: NOT one JSON document ({error})")
        return 1
    statuses = [f["status"] for f in doc["fusions"]]
    print(f"run --json: one document, {len(statuses)} fusions, "
          + ", ".join(f"{s} {statuses.count(s)}" for s in sorted(set(statuses))))
    for cluster in doc.get("clusters", []):
        print(f"  {cluster.get('count')} x {str(cluster.get('signature', ''))[:110]}"
              f"  [{cluster.get('attribution', '-')}]  smallest: {cluster.get('smallest')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
