"""``check_fusion``: generate and compile (NVRTC, no GPU needed) every segment's kernel.

This is what ``fusecli codegen --check`` and CI run over the corpus: a generator that emits C
NVRTC rejects fails here, long before a GPU sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from fusecli.codegen import Kernel, generate
from fusecli.codegen.nvrtc import DEFAULT_ARCH, CompileError, compile_source
from fusecli.ir.nodes import Fusion, TensorView
from fusecli.runtime.bind import flatten_inputs
from fusecli.runtime.parts import kernel_parts
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.heuristics import Sizes
from fusecli.segment.result import Segment
from fusecli.segment.segmenter import segment_fusion


@dataclass(frozen=True, slots=True)
class SegmentCheck:
    segment_id: int
    scheduler: str
    status: str  # "compiled", "generated" (not compiled), "skipped" (runs on ATen) or "failed"
    message: str  # the launch and heuristics, the reason for skipping, or NVRTC's error
    kernel: Kernel | None = None
    part: str | None = None  # "1/2": a part of a segment run as parts (runtime.parts)
    whole: str | None = None  # on a first part: why the segment as a whole has no kernel

    @property
    def label(self) -> str:
        """The segment's id, and which part of it this is where it runs as parts."""
        return str(self.segment_id) + (f" part {self.part}" if self.part else "")

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
        whole, splittable = _check(segment, sizes, known, arch, compile)
        parts = kernel_parts(segment) if splittable else None
        if parts is None:
            results.append(whole)
            continue
        for number, part in enumerate(parts, 1):  # what the runtime runs instead
            check, _ = _check(part, sizes, known, arch, compile)
            results.append(replace(check, part=f"{number}/{len(parts)}",
                                   whole=whole.message if number == 1 else None))
    return results


def _check(segment: Segment, sizes: Sizes, known: dict[int, Any], arch: str,
           compile: bool) -> tuple[SegmentCheck, bool]:
    """The segment's check, and whether its generator refused it whole (``splittable``)."""
    tensors = [known[value.uid] if value.uid in known else _Placeholder(value, sizes)
               for value in segment.inputs]
    kernel = generate(segment, sizes, tensors)
    if not isinstance(kernel, Kernel):
        return (SegmentCheck(segment.id, segment.scheduler, "skipped", kernel.reason),
                kernel.splittable)
    if not compile:
        return SegmentCheck(segment.id, segment.scheduler, "generated", kernel.describe(),
                            kernel), False
    try:
        compile_source(kernel.source, kernel.name, arch)
    except CompileError as error:
        return SegmentCheck(segment.id, segment.scheduler, "failed", f"{error}\n{error.log}",
                            kernel), False
    return SegmentCheck(segment.id, segment.scheduler, "compiled", kernel.describe(),
                        kernel), False


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
