"""The IR's values and expressions.

A fusion is a list of typed expressions over values. Values are tensors (``TensorView``), scalars
(``Scalar``) and vectors of scalars (``Vector``). A tensor's shape is a tuple of ``IterDomain``
(iteration, broadcast or reduction, with a symbolic or concrete extent), in logical order.

All nodes are immutable and compare by identity: two tensors with the same dtype and shape are
still two tensors. Names (``T3``, ``iS7``, ``i0``) are assigned by printers, not stored here.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType

# What nvFuser prints after scheduling and lowering (its scheduled IR, its generated CUDA):
# the text of nvFuser's own scheduler and code generator, which fusecli does not reproduce.
LOWERED_TEXT_SCOPE = (
    "nvFuser's scheduled IR and generated CUDA kernel text are outside fusecli's scope: "
    "fusecli executes the fusion's math and does not lower it as nvFuser does"
)

_uids = itertools.count()


def _next_uid() -> int:
    return next(_uids)


# ---------------------------------------------------------------------------------------------
# Extents
# ---------------------------------------------------------------------------------------------


class ExtentOp(enum.Enum):
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    CEIL_DIV = "ceilDiv"


@dataclass(frozen=True, slots=True, eq=False)
class SymbolicExtent:
    """The size of an input dimension, known only when the fusion executes."""

    uid: int = field(default_factory=_next_uid)


@dataclass(frozen=True, slots=True)
class ExtentExpr:
    """An extent computed from others, e.g. ``( i1 * i0 )`` after a reshape."""

    op: ExtentOp
    lhs: Extent
    rhs: Extent


@dataclass(frozen=True, slots=True, eq=False)
class ScalarExtent:
    """An extent given by a scalar value of the fusion (a reshape to a computed size)."""

    scalar: Scalar


Extent = int | SymbolicExtent | ExtentExpr | ScalarExtent


def extent_op(op: ExtentOp, lhs: Extent, rhs: Extent) -> Extent:
    """Build ``lhs op rhs``, folding constants and the identities x*1, x+0, x/1."""
    if isinstance(lhs, int) and isinstance(rhs, int):
        return _EXTENT_FOLD[op](lhs, rhs)
    if op is ExtentOp.MUL and rhs == 1 or op in (ExtentOp.DIV, ExtentOp.CEIL_DIV) and rhs == 1:
        return lhs
    if (
        op is ExtentOp.DIV
        and isinstance(lhs, ExtentExpr)
        and lhs.op is ExtentOp.MUL
        and isinstance(rhs, int)
        and lhs.rhs == rhs
    ):
        return lhs.lhs  # ( x * c ) / c, from a reshape with -1
    if op is ExtentOp.MUL and lhs == 1:
        return rhs
    if op in (ExtentOp.ADD, ExtentOp.SUB) and rhs == 0:
        return lhs
    if op is ExtentOp.ADD and lhs == 0:
        return rhs
    return ExtentExpr(op, lhs, rhs)


_EXTENT_FOLD = {
    ExtentOp.ADD: lambda a, b: a + b,
    ExtentOp.SUB: lambda a, b: a - b,
    ExtentOp.MUL: lambda a, b: a * b,
    ExtentOp.DIV: lambda a, b: a // b,
    ExtentOp.CEIL_DIV: lambda a, b: -(-a // b),
}


def evaluate_extent(extent: Extent, bindings: Mapping[object, int]) -> int:
    """The concrete value of ``extent`` given bindings for symbolic extents and scalars."""
    if isinstance(extent, int):
        return extent
    if isinstance(extent, SymbolicExtent):
        return bindings[extent]
    if isinstance(extent, ScalarExtent):
        return int(bindings[extent.scalar])
    return _EXTENT_FOLD[extent.op](
        evaluate_extent(extent.lhs, bindings), evaluate_extent(extent.rhs, bindings)
    )


def _fold(op: ExtentOp, identity: int, extents: Sequence[Extent]) -> Extent:
    total: Extent = identity
    for extent in extents:
        total = extent_op(op, total, extent)
    return total


def extent_product(extents: Sequence[Extent]) -> Extent:
    return _fold(ExtentOp.MUL, 1, extents)


def extent_sum(extents: Sequence[Extent]) -> Extent:
    return _fold(ExtentOp.ADD, 0, extents)


def static_value(extent: Extent) -> int | None:
    return extent if isinstance(extent, int) else None


# ---------------------------------------------------------------------------------------------
# Iteration domains and tensors
# ---------------------------------------------------------------------------------------------


class IterType(enum.Enum):
    ITERATION = "i"
    BROADCAST = "b"
    REDUCTION = "r"


@dataclass(frozen=True, slots=True, eq=False)
class IterDomain:
    """One dimension of a tensor.

    A broadcast domain has extent 1; an expanded broadcast (a stride-0 dimension of size n) also
    records ``expanded``. ``rfactor`` marks dimensions produced by reshape, pad, slice or cat, as
    nvFuser's ``rf`` suffix does.
    """

    iter_type: IterType
    extent: Extent
    expanded: Extent | None = None
    rfactor: bool = False
    uid: int = field(default_factory=_next_uid)

    @property
    def is_broadcast(self) -> bool:
        return self.iter_type is IterType.BROADCAST

    @property
    def is_reduction(self) -> bool:
        return self.iter_type is IterType.REDUCTION

    @property
    def logical_extent(self) -> Extent:
        """The size this dimension has in the tensor's shape (the expanded size if expanded)."""
        return self.expanded if self.expanded is not None else self.extent

    @staticmethod
    def iteration(extent: Extent, rfactor: bool = False) -> IterDomain:
        return IterDomain(IterType.ITERATION, extent, rfactor=rfactor)

    @staticmethod
    def broadcast(expanded: Extent | None = None) -> IterDomain:
        if expanded == 1:
            expanded = None
        return IterDomain(IterType.BROADCAST, 1, expanded=expanded)

    @staticmethod
    def reduction(extent: Extent) -> IterDomain:
        return IterDomain(IterType.REDUCTION, extent)


@dataclass(frozen=True, slots=True, eq=False)
class TensorView:
    """A tensor: dtype and logical domain, reduction domains included (as nvFuser keeps them).

    ``contiguity`` and ``stride_order`` describe fusion inputs as ``define_tensor`` did (contiguity
    in allocation order; stride_order[i] is dim i's rank by stride, 0 the innermost); other
    tensors leave them empty.
    """

    dtype: DataType
    domain: tuple[IterDomain, ...]
    contiguity: tuple[bool | None, ...] = ()
    stride_order: tuple[int, ...] = ()
    is_cpu: bool = False
    uid: int = field(default_factory=_next_uid)

    @property
    def logical(self) -> tuple[IterDomain, ...]:
        """The dimensions a torch tensor of this value has: the domain less reductions."""
        return tuple(d for d in self.domain if not d.is_reduction)

    @property
    def ndim(self) -> int:
        return len(self.logical)

    @property
    def shape(self) -> tuple[Extent, ...]:
        return tuple(d.logical_extent for d in self.logical)

    def __repr__(self) -> str:
        return f"TensorView(uid={self.uid}, dtype={self.dtype.name}, ndim={self.ndim})"


@dataclass(frozen=True, slots=True, eq=False)
class Scalar:
    """A scalar: a constant (``value`` set), a fusion input, or the result of a scalar expr."""

    dtype: DataType
    value: bool | int | float | complex | None = None
    is_constant: bool = False
    uid: int = field(default_factory=_next_uid)

    def __repr__(self) -> str:
        if self.is_constant:
            return f"Scalar({self.value!r}, {self.dtype.name})"
        return f"Scalar(uid={self.uid}, {self.dtype.name})"


@dataclass(frozen=True, slots=True, eq=False)
class Vector:
    """A vector of Int scalars: a shape argument."""

    elements: tuple[Scalar, ...]
    uid: int = field(default_factory=_next_uid)

    @property
    def size(self) -> int:
        return len(self.elements)


Val = TensorView | Scalar | Vector


# ---------------------------------------------------------------------------------------------
# Expressions and fusions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Expr:
    """One operation: ``outputs = op(inputs, **attrs)``.

    ``attrs`` holds the op's non-value arguments (dims, keepdim, target dtype, slice bounds...).
    Attribute values are plain Python data (ints, tuples, DataType, bools) so that exprs can be
    printed, serialized and compared without knowing the op.
    """

    op: OpType
    inputs: tuple[Val, ...]
    outputs: tuple[Val, ...]
    attrs: Mapping[str, object] = field(default_factory=dict)
    uid: int = field(default_factory=_next_uid)

    @property
    def output(self) -> Val:
        return self.outputs[0]

    def attr(self, name: str, default: object = None) -> object:
        return self.attrs.get(name, default)

    def tensor_inputs(self) -> list[TensorView]:
        return [v for v in self.inputs if isinstance(v, TensorView)]

    def tensor_outputs(self) -> list[TensorView]:
        return [v for v in self.outputs if isinstance(v, TensorView)]

    def __repr__(self) -> str:
        return f"Expr({self.op.value}, uid={self.uid})"


@dataclass(frozen=True, slots=True)
class FusionOutput:
    """An output of the fusion: the value, and how nvFuser was asked to produce it."""

    value: Val
    alias_input: TensorView | None = None  # written into this input, hidden from results
    stride_order: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Fusion:
    """A complete fusion: inputs in definition order, outputs, and exprs in topological order."""

    inputs: tuple[Val, ...]
    outputs: tuple[FusionOutput, ...]
    exprs: tuple[Expr, ...]
    _definition: dict[int, Expr] = field(default_factory=dict, repr=False)
    _uses: dict[int, list[Expr]] = field(default_factory=dict, repr=False)
    # what is derived from the fusion once and reused per call (fusecli.runtime.cache)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for expr in self.exprs:
            for out in expr.outputs:
                self._definition[out.uid] = expr
            for value in _expr_operands(expr):
                self._uses.setdefault(value.uid, []).append(expr)

    def definition(self, value: Val) -> Expr | None:
        return self._definition.get(value.uid)

    def uses(self, value: Val) -> list[Expr]:
        return self._uses.get(value.uid, [])

    def upstream(self, values: Sequence[Val]) -> set[int]:
        """Uids of the exprs ``values`` depend on, transitively (a vector is read through its
        elements)."""
        exprs: set[int] = set()
        stack, seen = list(values), set()
        while stack:
            value = stack.pop()
            if value.uid in seen:
                continue
            seen.add(value.uid)
            definition = self._definition.get(value.uid)
            if definition is not None and definition.uid not in exprs:
                exprs.add(definition.uid)
                for operand in definition.inputs:
                    stack.extend(operand.elements if isinstance(operand, Vector) else (operand,))
        return exprs

    @property
    def output_values(self) -> list[Val]:
        return [out.value for out in self.outputs]

    def vals(self) -> list[Val]:
        """Every value, inputs first then outputs of each expr in order."""
        seen: dict[int, Val] = {}
        for value in self.inputs:
            seen.setdefault(value.uid, value)
        for expr in self.exprs:
            for value in (*_expr_operands(expr), *expr.outputs):
                seen.setdefault(value.uid, value)
        return list(seen.values())

    def print_math(self) -> str:
        """nvfuser_direct's ``Fusion.print_math()``: the math as ``Fusion::printMath`` prints
        it (``fusecli.ir.printer``)."""
        from fusecli.ir.printer import print_fusion

        return print_fusion(self, math=True)

    def print_kernel(self, *args: object, **kwargs: object) -> str:
        """nvfuser_direct's ``Fusion.print_kernel()`` prints the CUDA nvFuser lowers this fusion
        to; fusecli does not lower as nvFuser does, and says so."""
        raise NotImplementedError(f"print_kernel: {LOWERED_TEXT_SCOPE}")

    def tensor_exprs(self) -> list[Expr]:
        """Exprs that produce tensors (scalar arithmetic excluded), as segmenters see them."""
        return [e for e in self.exprs if any(isinstance(o, TensorView) for o in e.outputs)]


def _expr_operands(expr: Expr) -> list[Val]:
    """Inputs of ``expr``, with vectors' element scalars too (they are used through the vector)."""
    operands: list[Val] = []
    for value in expr.inputs:
        operands.append(value)
        if isinstance(value, Vector):
            operands.extend(value.elements)
    return operands


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def flatten_inputs(inputs: Sequence[Any]) -> list[Any]:
    """The values of a fusion's inputs as a call gives them, nested lists and tuples
    (``torch.Size`` included, a ``define_vector(n)`` input's values) flattened in order."""
    flat: list[Any] = []
    for value in inputs:
        if isinstance(value, list | tuple):
            flat.extend(flatten_inputs(value))
        else:
            flat.append(value)
    return flat
