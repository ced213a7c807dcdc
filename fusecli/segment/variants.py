"""Variants of a segment's heuristic parameters: what ``benchmarks/sweep.py`` times and what the
measured table (``tuning.py``) may choose.

A variant changes only the launch knobs (``KNOBS``) of the default params and the fields that
follow from them (``slots``, ``max_vectorize``, ``max_blocks``), within the block shapes the
generators accept at the segment's sizes: ``variant_grid`` lists them, the default first. A
choice is made per size class (``size_class``), the same string for the sweep and for the
heuristics that read its table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fusecli.segment import heuristics as h
from fusecli.segment.candidate import Candidate

POINTWISE_THREADS, POINTWISE_UNROLLS = (128, 256, 512), (1, 2, 4)
POINTWISE_LANE_WIDTHS = 3  # the default's lanes and two halvings (all divide the row)
TRANSPOSE_TILES, TRANSPOSE_ROWS = ((64, 32), (64,), (32,)), (4, 8, 16)  # 32-column blocks
ROW_LANE_WIDTHS = 2  # a reduction's default lanes and half of them
ROW_THREADS = tuple(1 << k for k in range(11))  # 1 to 1024 threads per row
MAX_SLOTS = 16  # vectors per thread: fewer threads per row are not tried
SHARED_BLOCKS = (128, 256, 512)  # block sizes where rows of at most 32 threads share one
OUTER_ROWS_PER_BLOCK = (64, 128, 256, 512)  # a thread per row: rows (threads) per block
# outer_reduction.py's tiling (heuristics.outer_tiling): row groups per block, rows' loads in
# flight, and how many times over the column tiles and row splits fill the GPU
OUTER_GROUPS, OUTER_UNROLLS, OUTER_WAVES = (4, 8, 16), (2, 4, 8), (1, 2, 4, 8)

KNOBS: dict[type, tuple[str, ...]] = {  # the fields swept: a variant's name in every segment
    h.PointwiseParams: ("vectorize", "threads", "unroll"),
    h.TransposeParams: ("tiles", "rows"),  # and its pointwise kernel's, where no tile fits
    h.ReductionParams: ("vectorize", "threads", "rows_per_block", "persistent"),
}
OUTER_KNOBS = ("groups", "unroll", "waves")  # an outer reduction's, besides those


def knobs(params: h.HeuristicParams) -> dict[str, Any]:
    """The swept fields by name; a transpose's pointwise kernel's as ``pointwise.<field>``."""
    found = {name: getattr(params, name) for name in KNOBS[type(params)]}
    if isinstance(params, h.ReductionParams) and not params.inner:
        found.update({name: getattr(params, name) for name in OUTER_KNOBS})
    if isinstance(params, h.TransposeParams):
        found.update({f"pointwise.{k}": v for k, v in knobs(params.pointwise).items()})
    return found


def label(params: h.HeuristicParams) -> str:
    """``threads=256 unroll=2 vectorize=8``: the variant, the same in every segment."""
    return " ".join(f"{name}={value}" for name, value in sorted(knobs(params).items()))


def _halvings(value: int, count: int) -> list[int]:
    return [value >> step for step in range(count) if value >> step >= 1]


def _pointwise_grid(params: h.PointwiseParams, scheduler: str) -> list[h.PointwiseParams]:
    found = []
    for lanes in _halvings(params.vectorize, POINTWISE_LANE_WIDTHS):
        # the default's widest lanes keep its max_vectorize (other loops divide it down)
        widest = params.max_vectorize if lanes == params.vectorize else lanes
        found += [replace(params, vectorize=lanes, max_vectorize=widest, threads=threads,
                          unroll=unroll)
                  for threads in POINTWISE_THREADS for unroll in POINTWISE_UNROLLS]
    return found


def _transpose_grid(params: h.TransposeParams, scheduler: str) -> list[h.TransposeParams]:
    tiled = [replace(params, tiles=tiles, rows=rows) for tiles in TRANSPOSE_TILES
             for rows in TRANSPOSE_ROWS if all(tile % rows == 0 for tile in tiles)]
    return tiled + [replace(params, pointwise=pointwise)
                    for pointwise in _pointwise_grid(params.pointwise, scheduler)]


def _reduction_grid(params: h.ReductionParams, scheduler: str) -> list[h.ReductionParams]:
    """Block shapes the generator accepts: a power of two of threads per row; rows share a
    block only below a warp (``block_reduce`` combines a row within one warp there), a block
    is whole warps, at most 1024 threads; inner_outer keeps its rows in registers."""
    if not params.inner:  # outer_reduction.py's tiling; a thread per row where it declines
        return [*(replace(params, groups=groups, unroll=unroll, waves=waves)
                  for groups in OUTER_GROUPS for unroll in OUTER_UNROLLS for waves in OUTER_WAVES),
                *(replace(params, rows_per_block=rows) for rows in OUTER_ROWS_PER_BLOCK)]
    inner_outer = scheduler == "inner_outer_persistent"
    found = []
    for lanes in _halvings(params.vectorize, ROW_LANE_WIDTHS):
        vectors = params.row_size // lanes
        for threads in ROW_THREADS:
            slots = -(-vectors // threads)
            if threads > vectors or slots > MAX_SLOTS:
                continue
            shared = (1,) if threads > 32 else tuple(b // threads for b in SHARED_BLOCKS)
            fits = slots * lanes <= h.MAX_PERSISTENT_ELEMENTS
            found += [replace(params, vectorize=lanes, threads=threads, slots=slots,
                              rows_per_block=rows, persistent=persistent)
                      for rows in shared for persistent in (True, False)
                      if (fits or not persistent) and (persistent or not inner_outer)]
    if inner_outer:  # each block shape with the grid h.inner_outer gives it
        found = [replace(v, max_blocks=h.inner_outer_blocks(v)) for v in found]
    return found


GRIDS: dict[type, Callable[[Any, str], list]] = {
    h.PointwiseParams: _pointwise_grid,
    h.TransposeParams: _transpose_grid,
    h.ReductionParams: _reduction_grid,
}


def variant_grid(params: h.HeuristicParams, scheduler: str) -> list[h.HeuristicParams]:
    """The default first, then its variants, one per label."""
    found: dict[str, h.HeuristicParams] = {label(params): params}
    for variant in GRIDS[type(params)](params, scheduler):
        found.setdefault(label(variant), variant)
    return list(found.values())


def size_class(candidate: Candidate, params: h.HeuristicParams, sizes: h.Sizes) -> str:
    """What a choice may depend on: log2 elements (of a row too), the widest dtype, rows."""
    shapes = h.segment_shapes(candidate, sizes) or ((1,),)
    elements = max(h.numel(shape) for shape in shapes)
    widest = max((h.itemsize(t) for t in (*candidate.inputs, *candidate.outputs)), default=1)
    parts = [f"2^{int(math.log2(max(1, elements)))} elements", f"{widest}-byte"]
    if isinstance(params, h.ReductionParams):
        where = "inner" if params.inner else "outer"
        parts.insert(1, f"{where} rows of 2^{int(math.log2(max(1, params.row_size)))}")
    return ", ".join(parts)
