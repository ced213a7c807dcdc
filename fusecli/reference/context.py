"""What a reference rule sees besides its operands: the expr, the dtypes, the run's settings.

A rule is ``rule(ctx, *operands) -> value or tuple of values``. Operands arrive as the
environment holds them: tensors, Python numbers for scalars, lists of ints for vectors. The
context turns a scalar operand into a 0-dim tensor of its IR dtype when a torch function needs a
tensor, and says which torch dtype an output is computed in (float64 mode widens floats).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr


def compute_dtype(dtype: DataType, float64: bool) -> torch.dtype:
    """The torch dtype a value of IR dtype ``dtype`` is held in.

    In float64 mode every floating-point value is held in float64 and every complex value in
    complex128, so that the whole fusion is evaluated at the higher precision; integers and
    booleans are unchanged.
    """
    if float64 and dt.is_floating(dtype):
        return torch.float64
    if float64 and dt.is_complex(dtype):
        return torch.complex128
    return dt.to_torch(dtype)


def python_scalar(value: object, dtype: torch.dtype) -> bool | int | float | complex:
    """``value`` (a Python number or 0-dim tensor) as the Python number of torch dtype ``dtype``.

    Going through torch rounds exactly as a tensor of that dtype would: a Float scalar holds
    the float32 value, an Int scalar wraps like int64.
    """
    # Straight to ``dtype``: a Python float through torch's default float32 would round.
    return torch.as_tensor(value, dtype=dtype).item()


@dataclass(frozen=True, slots=True)
class OpContext:
    expr: Expr
    float64: bool
    device: torch.device
    seed: int  # the run's seed, for random exprs without their own
    random_offset: int  # this expr's position among the fusion's random exprs

    def dtype(self, index: int = 0) -> torch.dtype:
        """The torch dtype output ``index`` is computed in."""
        return compute_dtype(self.expr.outputs[index].dtype, self.float64)

    def operand_dtype(self, index: int) -> torch.dtype:
        return compute_dtype(self.expr.inputs[index].dtype, self.float64)

    def tensor(self, value: object, index: int) -> torch.Tensor:
        """Operand ``index`` as a tensor: a scalar becomes a 0-dim tensor of its own IR dtype."""
        if isinstance(value, torch.Tensor):
            return value
        return torch.tensor(value, dtype=self.operand_dtype(index), device=self.device)

    def tensors(self, values: tuple[object, ...]) -> list[torch.Tensor]:
        return [self.tensor(value, index) for index, value in enumerate(values)]

    def attr(self, name: str) -> object:
        if name not in self.expr.attrs:
            raise KeyError(f"the expr has no attribute {name!r}")
        return self.expr.attrs[name]


def with_stride_order(tensor: torch.Tensor, stride_order: tuple[int, ...]) -> torch.Tensor:
    """A copy of ``tensor`` laid out in memory with nvFuser's ``stride_order``; values unchanged.

    ``stride_order[i]`` is dim i's rank by stride, 0 the innermost: walking the dims from the
    innermost out, each dim's stride is the number of elements of the dims inside it (a size 0
    or 1 counts as 1, as torch's dense layouts do).
    """
    if not stride_order:
        return tensor
    strides = [0] * tensor.dim()
    elements_inside = 1
    for axis in sorted(range(tensor.dim()), key=lambda axis: stride_order[axis]):
        strides[axis] = elements_inside
        elements_inside *= max(tensor.shape[axis], 1)
    laid_out = torch.empty_strided(
        tensor.shape, strides, dtype=tensor.dtype, device=tensor.device
    )
    return laid_out.copy_(tensor)
