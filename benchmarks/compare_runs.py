"""Two runs of ``vs_nvfuser.py --json`` side by side: an A/B of one setting, in one GPU call.

    python3 benchmarks/compare_runs.py A.json B.json [--bins 24,40] [--worst 12]

For each run: the geometric mean of fusecli's speed against nvFuser's over the fusions both
runs measured, and how many fall below 0.8x. Then, per bin of MiB moved per output (rows of
``vs_nvfuser.py`` since ``moved`` and ``outputs`` were added), how A's ratio compares with
B's (the geometric mean of A's ratio over B's), and the fusions where A and B differ most.
Both runs share nothing but the machine, so a bin no setting touches shows the noise between
them. Runs on any machine.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def ratios(path: Path) -> dict[str, tuple[float, float | None]]:
    """Per fusion: fusecli's GB/s over nvFuser's, and MiB moved per output (None where the
    run did not record them)."""
    found = {}
    for row in json.loads(path.read_text())["rows"]:
        gbps = row.get("gbps") or {}
        if gbps.get("fusecli") and gbps.get("nvfuser"):
            per_output = (row["moved"] / 2**20 / max(1, row["outputs"])
                          if row.get("moved") else None)
            found[row["fusion"]] = (gbps["fusecli"] / gbps["nvfuser"], per_output)
    return found


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--bins", default="24,40", help="MiB per output where bins split")
    parser.add_argument("--worst", type=int, default=12, help="fusions listed")
    args = parser.parse_args()
    try:
        a, b = ratios(args.a), ratios(args.b)
        edges = [float(edge) for edge in args.bins.split(",") if edge]
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"compare_runs: {error}", file=sys.stderr)
        return 2
    both = sorted(set(a) & set(b))
    for name, run in ((args.a, a), (args.b, b)):
        values = [run[k][0] for k in both]
        print(f"{name}: {geometric_mean(values):.3f}x over {len(values)}, "
              f"{sum(v < 0.8 for v in values)} below 0.8x")
    bounds = [0.0, *edges, math.inf]
    for low, high in zip(bounds, bounds[1:]):
        inside = [k for k in both if a[k][1] is not None and low <= a[k][1] < high]
        if inside:
            change = geometric_mean([a[k][0] / b[k][0] for k in inside])
            print(f"{low:g}-{high:g} MiB per output: {len(inside)} fusions, A/B {change:.3f}")
    print("largest differences (A/B):")
    for k in sorted(both, key=lambda k: abs(math.log(a[k][0] / b[k][0])), reverse=True)[
            :args.worst]:
        size = f"{a[k][1]:.1f} MiB/output" if a[k][1] is not None else ""
        print(f"  {k:42s} A {a[k][0]:.2f} B {b[k][0]:.2f} {size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
