"""``check_fusion``: generate and compile (NVRTC, no GPU needed) every segment's kernel.

This is what ``fusecli codegen --check`` and CI run over the corpus: a generator that emits C
NVRTC rejects fails here, long before a GPU sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fusecli.codegen import Kernel, generate
from fusecli.codegen.nvrtc import DEFAULT_ARCH, CompileError, compile_source
from fusecli.ir.nodes import Fusion, TensorView
from fusecli.runtime.bind import flatten_inputs
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.heuristics import Sizes
from fusecli.segment.segmenter import segment_fusion


@dataclass(frozen=True, slots=True)
class SegmentCheck:
    segment_id: int
    scheduler: str
    status: str  # "compiled", "generated" (not compiled), "skipped" (runs on ATen) or "failed"
    message: str  # the launch and heuristics, the reason for skipping, or NVRTC's error
    kernel: Kernel | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"


def check_fusion(fusion: Fusion, inputs: Sequence[Any], profile: str = "nvfuser",
                 arch: str = DEFAULT_ARCH, compile: bool = True) -> list[SegmentCheck]:
    """Segment ``fusion`` for ``inputs``, then generate (and compile) each segment's kernel."""
    segmented = segment_fusion(fusion, inputs, profile=profile)
    sizes = RuntimeInfo(segmented.fusion, inputs)
    known = _segment_inputs(segmented.fusion, inputs)
    results = []
    for segment in segmented.segments:
        tensors = [known[value.uid] if value.uid in known else _Placeholder(value, sizes)
                   for value in segment.inputs]
        kernel = generate(segment, sizes, tensors)
        if not isinstance(kernel, Kernel):
            results.append(SegmentCheck(segment.id, segment.scheduler, "skipped", kernel.reason))
            continue
        if not compile:
            results.append(SegmentCheck(segment.id, segment.scheduler, "generated",
                                        kernel.describe(), kernel))
            continue
        try:
            compile_source(kernel.source, kernel.name, arch)
        except CompileError as error:
            results.append(SegmentCheck(segment.id, segment.scheduler, "failed",
                                        f"{error}\n{error.log}", kernel))
            continue
        results.append(SegmentCheck(segment.id, segment.scheduler, "compiled",
                                    kernel.describe(), kernel))
    return results


def _segment_inputs(fusion: Fusion, inputs: Sequence[Any]) -> dict[int, Any]:
    return {value.uid: actual for value, actual in zip(fusion.inputs, flatten_inputs(inputs))
            if hasattr(actual, "stride")}


class _Placeholder:
    """An intermediate's stand-in: contiguous and aligned, of its shape (layout is all that
    generation reads from an input)."""

    def __init__(self, value: TensorView, sizes: Sizes) -> None:
        self.shape = tuple(sizes.extent(d.logical_extent) or 1 for d in value.logical)

    def stride(self) -> tuple[int, ...]:
        strides, running = [], 1
        for size in reversed(self.shape):
            strides.append(running)
            running *= size
        return tuple(reversed(strides))

    def data_ptr(self) -> int:
        return 0

    def dim(self) -> int:
        return len(self.shape)
