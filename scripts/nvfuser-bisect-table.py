"""The table of ``scripts/gpu-nvfuser-bisect``: one row per bisected nvFuser failure.

    python3 scripts/nvfuser-bisect-table.py OUTDIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    out = Path(sys.argv[1])
    rows = []
    for path in sorted(out.glob("*.json")):
        if path.name == "run.json":
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            err = path.with_suffix(".err")
            tail = err.read_text(errors="replace").strip().splitlines()[-1:] if err.exists() else []
            rows.append((path.stem, "no JSON document", "", "", "", "", " ".join(tail)[:120]))
            continue
        original = record.get("original") or {}
        minimized = record.get("minimized") or {}
        where = original.get("location") or original.get("status") or "?"
        before = minimized.get("ops_before", "")
        after = len(minimized.get("exprs", [])) if minimized else ""
        opinion = ""
        report = Path(record.get("report_md") or "")
        if not report.is_file():  # read elsewhere than where it was written: beside the JSON
            report = path.parent / path.stem / "report.md"
        if report.is_file():
            text = report.read_text(encoding="utf-8")
            opinion = text.split("## A second opinion: fusecli's model", 1)[-1].strip()
            opinion = opinion.splitlines()[0] if opinion else ""
        rows.append((path.stem, where, f"{before} -> {after}", str(record.get("queries", "")),
                     f"{record.get('seconds', 0):.0f}",
                     "yes" if minimized.get("verified") else "NO", opinion[:110]))
    print("| repro | failure | ops | questions | seconds | minimized.py fails alone | fusecli |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    verified = sum(1 for r in rows if r[5] == "yes")
    small = sum(1 for r in rows if r[2] and r[2].split("->")[-1].strip().isdigit()
                and int(r[2].split("->")[-1]) <= 6)
    print(f"\n{len(rows)} failures bisected; {verified} minimized repros fail alone under plain "
          f"nvFuser; {small} minimized to at most 6 ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
