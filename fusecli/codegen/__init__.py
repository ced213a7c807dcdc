"""CUDA C kernels generated per segment, for the CuPy executor.

``generate(segment, sizes, inputs)`` returns a ``Kernel`` (source, launch, argument plan,
heuristics) or ``Unsupported(reason)``; the runtime compiles the first and falls back to ATen
on the second. ``fusecli.codegen.nvrtc.compile_source`` compiles a kernel without a GPU,
``fusecli.app.codegen_check.check_fusion`` does so for every segment of a fusion, and
``fusecli.codegen.emulate`` runs a kernel on the CPU (tests).

Segments with reductions get ``reduction.py``'s kernels (inner reductions and normalizations);
the others ``transpose.py``'s, which is the pointwise kernel unless an input is transposed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusecli.codegen.context import KernelContext, Sizes
from fusecli.codegen.kernel import ArgKind, Kernel, KernelArg, Unsupported, UnsupportedError
from fusecli.codegen.reduction import build_reduction
from fusecli.codegen.transpose import build_transpose

# Schedulers whose segments run on ATen by design: matmuls and attention through cuBLAS and
# cuDNN, as nvFuser's expr_eval does, and segments that compute nothing new (no_op).
ATEN_SCHEDULERS = ("expr_eval", "matmul", "no_op")


def generate(segment: Any, sizes: Sizes, inputs: Sequence[Any]) -> Kernel | Unsupported:
    """A kernel for ``segment`` specialized to ``sizes`` and the ``inputs`` tensors (in
    ``segment.inputs`` order), or why there is none."""
    if segment.scheduler in ATEN_SCHEDULERS:
        return Unsupported(f"{segment.scheduler} segments run on ATen")
    name = f"fusecli_{segment.scheduler}_s{segment.id}"
    try:
        ctx = KernelContext(segment, sizes, inputs)
        if segment.candidate.reduction_exprs:
            return build_reduction(ctx, name)
        return build_transpose(ctx, name)  # the pointwise kernel unless an input is transposed
    except UnsupportedError as error:
        return Unsupported(error.reason)


__all__ = ["ArgKind", "Kernel", "KernelArg", "Sizes", "Unsupported", "generate"]
