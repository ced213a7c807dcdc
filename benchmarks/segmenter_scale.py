"""How segmentation time grows with fusion size (nvFuser issue #3510: ~300 s at 30 layers).

Builds synthetic Thunder-like fusions of about N expressions: blocks of a pointwise chain
followed by an RMSNorm-style normalization (cast, mul, sum, broadcast, rsqrt, mul, cast), each
block feeding the next, and times ``segment_fusion`` with and without the decision log.

    python benchmarks/segmenter_scale.py              # 1,000 / 5,000 / 20,000 exprs
    python benchmarks/segmenter_scale.py --sizes 500 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time

from fusecli.frontend import DataType, FusionDefinition
from fusecli.segment.segmenter import segment_fusion

HIDDEN, ROWS = 1024, 512
EXPRS_PER_BLOCK = 33  # measured: 4 x (tanh, mul, add) pointwise steps, then the norm


def build(target_exprs: int) -> FusionDefinition:
    """A chain of blocks: a pointwise chain then a normalization, about N exprs in all."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[ROWS, HIDDEN], contiguity=[True, True],
                             dtype=DataType.BFloat16)
        weight = fd.define_tensor(shape=[HIDDEN], contiguity=[True], dtype=DataType.BFloat16)
        half = fd.define_scalar(0.5, dtype=DataType.Double)
        eps = fd.define_scalar(1e-6, dtype=DataType.Double)
        width = fd.define_scalar(float(HIDDEN), dtype=DataType.Double)
        current = fd.ops.cast(x, dtype=DataType.Float)
        w = fd.ops.broadcast_in_dim(
            fd.ops.cast(weight, dtype=DataType.Float), shape=[ROWS, HIDDEN], broadcast_dims=[1]
        )
        for _ in range(max(1, target_exprs // EXPRS_PER_BLOCK)):
            for _ in range(4):  # a GELU-ish pointwise chain, 3 exprs per step
                current = fd.ops.mul(fd.ops.tanh(current), half)
                current = fd.ops.add(current, half)
            squares = fd.ops.mul(current, current)
            total = fd.ops.sum(squares, dims=[1], keepdim=False, dtype=DataType.Null)
            mean = fd.ops.div(total, width)
            inv = fd.ops.rsqrt(fd.ops.add(mean, eps))
            inv = fd.ops.broadcast_in_dim(inv, shape=[ROWS, HIDDEN], broadcast_dims=[0])
            current = fd.ops.mul(fd.ops.mul(current, inv), w)
            current = fd.ops.cast(fd.ops.cast(current, dtype=DataType.BFloat16),
                                  dtype=DataType.Float)
        fd.add_output(fd.ops.cast(current, dtype=DataType.BFloat16))
    return fd


def time_segmentation(fd: FusionDefinition, keep_log: bool, repeat: int) -> tuple[float, int]:
    timings, segments = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = segment_fusion(fd.fusion, None, keep_log=keep_log)
        timings.append(time.perf_counter() - started)
        segments = len(result.segments)
    return statistics.median(timings), segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"{'exprs':>8} {'segments':>9} {'no log (s)':>11} {'with log (s)':>13} {'us/expr':>8}")
    for size in args.sizes:
        fd = build(size)
        count = len(fd.fusion.exprs)
        plain, segments = time_segmentation(fd, False, args.repeat)
        logged, _ = time_segmentation(fd, True, args.repeat)
        print(f"{count:>8} {segments:>9} {plain:>11.3f} {logged:>13.3f} "
              f"{plain / count * 1e6:>8.1f}")


if __name__ == "__main__":
    main()
