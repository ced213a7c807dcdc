"""Summarize a ``fusecli run --json`` document: does it parse, statuses, failure clusters.

    python3 scripts/run-json-summary.py run.json
    python3 scripts/run-json-summary.py run.json --smallest 8   # paths to bisect, one a line

``--smallest N`` prints instead the file of each of the first N clusters' smallest member
(clusters come largest first), for ``scripts/gpu-nvfuser-bisect``.
"""

from __future__ import annotations

import argparse
import json
import sys


def smallest_file(cluster: dict) -> str | None:
    """The file of the cluster's smallest member (``smallest`` is ``PATH: NAME``)."""
    smallest = str(cluster.get("smallest") or "")
    return next((f for f in cluster.get("files", []) if smallest.startswith(f"{f}: ")), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("document")
    parser.add_argument("--smallest", type=int, metavar="N")
    args = parser.parse_args()
    try:
        with open(args.document, encoding="utf-8") as handle:
            doc = json.load(handle)
    except ValueError as error:
        print(f"run --json: NOT one JSON document ({error})")
        return 1
    clusters = doc.get("clusters", [])
    if args.smallest is not None:
        for cluster in clusters[:args.smallest]:
            path = smallest_file(cluster)
            if path:
                print(path)
        return 0
    statuses = [f["status"] for f in doc["fusions"]]
    print(f"run --json: one document, {len(statuses)} fusions, "
          + ", ".join(f"{s} {statuses.count(s)}" for s in sorted(set(statuses))))
    for cluster in clusters:
        print(f"  {cluster.get('count')} x {str(cluster.get('signature', ''))[:110]}"
              f"  [{cluster.get('attribution', '-')}]  smallest: {cluster.get('smallest')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
