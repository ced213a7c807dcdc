"""Where tensors live, as nvFuser sees it: CUDA tensors, and CPU scalar tensors.

nvFuser takes CUDA tensors, and 0-dim CPU tensors (``is_cpu=True`` inputs); ``from_pytorch``
refuses any other CPU tensor. While CUDA is mapped to the CPU (``fusecli.load.devices``) every
tensor is on the CPU, so the mapping marks what a script placed on the CPU itself
(``device='cpu'``, ``.cpu()``, ``.to('cpu')``): those are the CPU tensors a GPU machine would
have, and the rest stand for CUDA tensors. Without the mapping, a CPU tensor is a CPU tensor
where torch has CUDA, and stands for a CUDA one where it has not (``session``).

A kernel cannot write a CPU tensor: a fusion output computed only from CPU scalar inputs (an
expr whose tensor operands are all ``is_cpu`` inputs) is refused as nvFuser's KernelExecutor
refuses it (``check_kernel_outputs``).
"""

from __future__ import annotations

from typing import Any

from fusecli.frontend import session
from fusecli.ir import nodes

# The attribute the CUDA-to-CPU mapping sets on tensors a script put on the CPU itself.
HOST_MARK = "_fusecli_placed_on_cpu"

KERNEL_REFUSES = "KernelExecutor does not support the Fusion provided."


def mark_placed_on_cpu(tensor: Any) -> Any:
    """``tensor``, marked as one the script asked to have on the CPU."""
    try:
        setattr(tensor, HOST_MARK, True)
    except (AttributeError, TypeError):  # not a tensor: nothing to mark
        pass
    return tensor


def unmarked(tensor: Any) -> Any:
    """``tensor``, no longer marked as placed on the CPU."""
    if getattr(tensor, HOST_MARK, False):
        delattr(tensor, HOST_MARK)
    return tensor


def on_cpu(tensor: Any) -> bool:
    """Whether nvFuser would find ``tensor`` on the CPU (see the module's docstring)."""
    if not getattr(tensor, "is_cpu", False):
        return False
    if getattr(tensor, HOST_MARK, False):
        return True
    return not session.cpu_tensors_allowed()


def check_from_pytorch(tensor: Any) -> bool:
    """nvFuser's check in ``from_pytorch``: a CUDA tensor or a CPU scalar. Returns whether the
    tensor is a CPU scalar (``is_cpu``); ValueError for a CPU tensor of rank 1 or more."""
    if not on_cpu(tensor):
        return False
    if tensor.dim() != 0:
        raise ValueError(
            "Found unsupported device cpu, only scalar CPU or CUDA tensors are supported"
        )
    return True


def check_kernel_outputs(fusion: nodes.Fusion) -> None:
    """RuntimeError where an output is computed from CPU scalar inputs alone: no kernel can
    write it (nvFuser's ``KernelExecutor::supported``)."""
    refused = fusion.memo.get("cpu_scalar_outputs")
    if refused is None:
        refused = fusion.memo["cpu_scalar_outputs"] = _has_cpu_scalar_outputs(fusion)
    if refused:
        raise RuntimeError(KERNEL_REFUSES)


def _has_cpu_scalar_outputs(fusion: nodes.Fusion) -> bool:
    cpu_inputs = {v.uid for v in fusion.inputs
                  if isinstance(v, nodes.TensorView) and v.is_cpu}
    if not cpu_inputs:
        return False
    on_host: set[int] = set()
    for expr in fusion.exprs:
        operands = expr.tensor_inputs()
        if operands and all(t.uid in cpu_inputs for t in operands):
            on_host.update(t.uid for t in expr.tensor_outputs())
    return any(uid in on_host for uid in (v.uid for v in fusion.output_values))
