"""Decisions fusecli cannot follow exactly: where nvFuser asks the GPU.

Some run-time checks compare a segment's needs with what ``at::cuda::getCurrentDeviceProperties``
reports for the GPU nvFuser runs on (SM count, registers, shared memory per block) and with
heuristic constants tuned per architecture. fusecli answers them for one modelled device
(``rules.Device``, an H200) and says so on the verdict: a note naming what nvFuser queries,
where (the file), and the numbers fusecli compared. ``CLOSE`` marks a decision within a factor
of two of its limit, the ones most likely to go the other way on another GPU or release.
"""

from __future__ import annotations

from dataclasses import dataclass

CLOSE = 2.0  # needed/available within this factor either way: the answer may differ


@dataclass(frozen=True, slots=True)
class Query:
    """What one scheduler's run-time check asks of the device, and where nvFuser does it."""

    asks: str
    where: str


QUERIES: dict[str, Query] = {
    "inner_persistent": Query(
        "the register file, sharedMemPerBlockOptin and multiProcessorCount "
        "(persistent buffers in registers or shared memory, rows per SM)",
        "csrc/scheduler/normalization_inner.cpp, normalization_utils.cpp",
    ),
    "outer_persistent": Query(
        "the register file and multiProcessorCount (persistence across the grid)",
        "csrc/scheduler/normalization_outer.cpp, normalization_utils.cpp",
    ),
    "inner_outer_persistent": Query(
        "the register file, sharedMemPerBlockOptin and multiProcessorCount (where the "
        "persistent buffers fit, getPersistentBufferStorageParams)",
        "csrc/scheduler/normalization_inner_outer.cpp",
    ),
    "transpose": Query(
        "multiProcessorCount (a transpose must fill the SMs with tiles)",
        "csrc/scheduler/transpose.cpp",
    ),
}


def note(scheduler: str, needed: int, available: int, unit: str, device: str) -> str:
    """``depends on the GPU: ...`` for a check that compared ``needed`` with ``available``."""
    query = QUERIES[scheduler]
    ratio = needed / available if available else float("inf")
    close = 1 / CLOSE <= ratio <= CLOSE
    verdict = "close to the limit, may go the other way on another GPU" if close else \
        "far from the limit"
    return (
        f"depends on the GPU: nvFuser queries {query.asks} ({query.where}); fusecli assumes "
        f"an {device}: {needed} {unit} needed, {available} available ({verdict})"
    )


def is_close(text: str) -> bool:
    """Whether a note marks a decision near its limit."""
    return "close to the limit" in text
