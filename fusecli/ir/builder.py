"""Building a Fusion one op at a time, with nvFuser's checks at the moment an op is defined.

``FusionBuilder`` owns the growing lists of inputs, exprs and outputs. The op constructors in
``fusecli.ir.ops_*`` validate their arguments, infer the output dtype and domain, and append one
or more exprs through ``builder.emit``. A bad argument raises ``DefinitionError`` naming the op
and what was wrong, at the line of the definition that caused it.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import (
    Expr,
    Extent,
    Fusion,
    FusionOutput,
    IterDomain,
    IterType,
    Scalar,
    ScalarExtent,
    SymbolicExtent,
    TensorView,
    Val,
    Vector,
)
from fusecli.ir.optype import OpType


class DefinitionError(ValueError, RuntimeError):
    """A fusion definition is invalid: rank or shape mismatch, bad dims, bad dtype...

    A ``RuntimeError`` as nvFuser's definition errors are (and a ``ValueError`` for callers
    that catch bad values). Where nvFuser checks the same thing, the message carries
    nvFuser's own text, so that scripts matching it keep working.
    """

    def __init__(self, op: str, message: str) -> None:
        super().__init__(f"{op}: {message}")
        self.op = op
        self.detail = message


class FusionBuilder:
    def __init__(self) -> None:
        self.inputs: list[Val] = []
        self.exprs: list[Expr] = []
        self.outputs: list[FusionOutput] = []

    # -- values ----------------------------------------------------------------------------

    def define_tensor(
        self,
        shape: Sequence[int],
        contiguity: Sequence[bool | None],
        dtype: DataType,
        stride_order: Sequence[int] = (),
        is_cpu: bool = False,
    ) -> TensorView:
        """A fusion input tensor; ``shape`` entries: -1 symbolic, 1 broadcast, else static.

        A dimension whose contiguity is None but whose shape entry is not 1 is an expanded
        broadcast (a stride-0 dimension), as nvFuser's getExpanded decides.
        """
        rank = len(shape)
        if len(contiguity) != rank:
            raise DefinitionError(
                "define_tensor",
                f"Length of contiguity argument ({len(contiguity)}) must match that of shape "
                f"argument ({rank})",
            )
        stride_order = normalize_stride_order("define_tensor", stride_order, rank)
        # contiguity is listed in allocation order: dim i sits at rank-1-stride_order[i].
        logical_contiguity = [
            contiguity[rank - 1 - stride_order[i]] if stride_order else contiguity[i]
            for i in range(rank)
        ]
        domain = []
        for index, (size, contiguous) in enumerate(zip(shape, logical_contiguity)):
            if size < -1:
                raise DefinitionError("define_tensor", invalid_size_text(size, index))
            if size == 1:
                domain.append(IterDomain.broadcast())
            elif contiguous is None:
                expanded = SymbolicExtent() if size == -1 else size
                domain.append(IterDomain.broadcast(expanded=expanded))
            else:
                extent = SymbolicExtent() if size == -1 else size
                domain.append(IterDomain.iteration(extent))
        if is_cpu and rank != 0:
            raise DefinitionError("define_tensor", "CPU non-scalar tensor is not supported!")
        tensor = TensorView(
            dtype=dtype,
            domain=tuple(domain),
            contiguity=tuple(contiguity),
            stride_order=tuple(stride_order),
            is_cpu=is_cpu,
        )
        self.inputs.append(tensor)
        return tensor

    def define_input_scalar(self, dtype: DataType) -> Scalar:
        scalar = Scalar(dtype=dtype)
        self.inputs.append(scalar)
        return scalar

    @staticmethod
    def constant(value: bool | int | float | complex, dtype: DataType) -> Scalar:
        return Scalar(dtype=dtype, value=value, is_constant=True)

    def add_output(
        self,
        value: Val,
        alias_input: TensorView | None = None,
        stride_order: Sequence[int] = (),
    ) -> None:
        if isinstance(value, TensorView) and stride_order:
            stride_order = normalize_stride_order("add_output", stride_order, value.ndim)
        if alias_input is not None and alias_input not in self.inputs:
            raise DefinitionError("add_output", "alias_input must be an input of the fusion")
        if alias_input is not None:
            _check_alias(value, alias_input, self.inputs.index(alias_input))
        self.outputs.append(FusionOutput(value, alias_input, tuple(stride_order)))

    # -- exprs -----------------------------------------------------------------------------

    def emit(
        self,
        op: OpType,
        inputs: Sequence[Val],
        outputs: Sequence[Val],
        **attrs: object,
    ) -> Expr:
        expr = Expr(op=op, inputs=tuple(inputs), outputs=tuple(outputs), attrs=attrs)
        self.exprs.append(expr)
        return expr

    def build(self) -> Fusion:
        return Fusion(
            inputs=tuple(self.inputs), outputs=tuple(self.outputs), exprs=tuple(self.exprs)
        )


# ---------------------------------------------------------------------------------------------
# Helpers shared by the op constructors
# ---------------------------------------------------------------------------------------------


def invalid_size_text(size: int, index: int) -> str:
    """nvFuser's words for a shape entry below -1 (``verifyShape``)."""
    return (
        f"The value {size} at index {index} was neither symbolic(-1), zero_element(0), "
        "broadcast(1), or static(>1)."
    )


def normalize_dim(op: str, dim: int, rank: int, *, scalar_ok: bool = True) -> int:
    """``dim`` in ``[0, rank)``; negative dims count from the end. A 0-dim tensor takes dim 0
    where ``scalar_ok`` (reductions, as torch), never where nvFuser's ``wrapDim`` checks it."""
    if not -rank <= dim < (max(rank, 1) if scalar_ok else rank):
        raise DefinitionError(op, out_of_range_text(op, dim, rank))
    return dim % rank if rank else 0


def out_of_range_text(op: str, dim: int, rank: int) -> str:
    """nvFuser's words for a dim out of range, by op (``wrapDim`` in ``csrc/base.h`` unless the
    op checks it itself)."""
    wrapped = dim + rank if dim < 0 else dim
    if op == "cat":
        return f"Invalid dimension to cat: {dim} (a tensor of rank {rank})"
    if op in ("gather", "take_along_axis", "scatter"):
        return (
            f"Tensor arguments have dimension {rank} so dim argument must satisfy "
            f"{-rank} <= dim < {rank}, but received {dim}"
        )
    if op == "squeeze":
        return f"Squeeze dim is outside of Tensor size! Tensor Size: {rank} Dim: {wrapped}"
    if op == "permute":
        bound = f">= -{rank}" if dim < 0 else f"< {rank}"
        return f"dims argument is out of range, expects {bound}, but got: {dim}"
    if op == "broadcast_in_dim":
        return f"Invalid broadcast_dims value. {dim} is not a dimension of an output of rank {rank}"
    return (
        f"Tried to access out of boundary index {wrapped}. total index: {rank} "
        f"(dim {dim} is out of range for a tensor of rank {rank})"
    )


def normalize_dims(op: str, dims: Sequence[int], rank: int) -> tuple[int, ...]:
    normalized = tuple(normalize_dim(op, d, rank) for d in dims)
    if len(set(normalized)) != len(normalized):
        raise DefinitionError(
            op, f"got duplicated dimension entries: {', '.join(map(str, dims))}"
        )
    return normalized


def normalize_stride_order(op: str, stride_order: Sequence[int], rank: int) -> tuple[int, ...]:
    if not stride_order:
        return ()
    if len(stride_order) != rank:
        raise DefinitionError(
            op, f"stride_order has {len(stride_order)} entries for a tensor of rank {rank}"
        )
    for entry in stride_order:  # nvFuser's normalizeStrideOrder
        if not -rank <= entry < rank:
            bound = f">= {-rank}" if entry < 0 else f"< {rank}"
            raise DefinitionError(
                op, f"stride_order argument is out of range, expects {bound}, but got: {entry}"
            )
    normalized = tuple(s % rank for s in stride_order)
    if sorted(normalized) != list(range(rank)):
        raise DefinitionError(
            op, "got duplicated stride_order entries: " + ", ".join(map(str, stride_order))
        )
    return normalized


def copy_domain(domain: Sequence[IterDomain], keep_rfactor: bool = False) -> tuple[IterDomain, ...]:
    """Fresh IterDomains with the same types and extents (a consumer's view of a producer)."""
    return tuple(
        IterDomain(d.iter_type, d.extent, d.expanded, rfactor=keep_rfactor and d.rfactor)
        for d in domain
    )


def same_extent(a: Extent, b: Extent) -> bool | None:
    """True if provably equal, False if provably different, None if unknown until run time."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if a is b:
        return True
    return None


def extent_from_scalar(scalar: Scalar) -> Extent:
    if scalar.is_constant:
        return int(scalar.value)
    return ScalarExtent(scalar)


def shape_entries(op: str, shape: Vector) -> list[Extent | None]:
    """Extents of a shape vector; ``None`` for a -1 entry (keep or infer)."""
    entries: list[Extent | None] = []
    for element in shape.elements:
        if element.is_constant:
            value = int(element.value)
            if value < -1:
                raise DefinitionError(op, f"shape entry {value} is negative")
            entries.append(None if value == -1 else value)
        else:
            entries.append(ScalarExtent(element))
    return entries


def broadcast_domains(op: str, tensors: Sequence[TensorView]) -> tuple[IterDomain, ...]:
    """The output domain of an elementwise op over ``tensors``.

    Lower-rank operands get leading broadcast dimensions (nvFuser's maybeBroadcast). A
    dimension is iteration if any operand iterates there; static extents must agree.
    """
    rank = max(t.ndim for t in tensors)
    aligned = [(rank - t.ndim) * (None,) + t.logical for t in tensors]
    out: list[IterDomain] = []
    for axis in range(rank):
        iterating = [
            ds[axis] for ds in aligned if ds[axis] is not None and not ds[axis].is_broadcast
        ]
        if iterating:
            extent = iterating[0].extent
            for other in iterating[1:]:
                if same_extent(extent, other.extent) is False:
                    raise DefinitionError(
                        op,
                        f"operands have sizes {extent} and {other.extent} in dimension {axis}",
                    )
                if isinstance(other.extent, int) and not isinstance(extent, int):
                    extent = other.extent
            for bcast in (ds[axis] for ds in aligned if ds[axis] is not None):
                if bcast.is_broadcast and bcast.expanded is not None:
                    if same_extent(bcast.expanded, extent) is False:
                        raise DefinitionError(
                            op,
                            f"expanded size {bcast.expanded} does not match {extent} in "
                            f"dimension {axis}",
                        )
            out.append(IterDomain.iteration(extent))
        else:
            expanded = [ds[axis].expanded for ds in aligned if ds[axis] is not None]
            expanded = [e for e in expanded if e is not None]
            out.append(IterDomain.broadcast(expanded[0] if expanded else None))
    return tuple(out)


def _check_alias(value: Val, alias_input: Val, position: int) -> None:
    """An output written into input ``position`` must be a tensor of its dtype and shape
    (sizes known only at run time are checked when the inputs are bound)."""
    where = f"output aliased to input {position}"
    if not isinstance(value, TensorView) or not isinstance(alias_input, TensorView):
        raise DefinitionError("add_output", f"{where}: only a tensor can alias a tensor input")
    if value.dtype is not alias_input.dtype:
        raise DefinitionError(
            "add_output", f"{where}: the output is {value.dtype.name}, the input "
            f"{alias_input.dtype.name}"
        )
    differs = value.ndim != alias_input.ndim or any(
        isinstance(a, int) and isinstance(b, int) and a != b
        for a, b in zip(value.shape, alias_input.shape)
    )
    if differs:
        raise DefinitionError(
            "add_output", f"{where}: the output's shape {shape_text(value)} is not the input's "
            f"{shape_text(alias_input)}"
        )


def extent_text(extent: object) -> str:
    """An extent as an error message shows it: its number, or ``?`` where only the inputs
    will tell (never an internal name)."""
    return str(extent) if isinstance(extent, int) else "?"


def shape_text(value: TensorView) -> str:
    return "[" + ", ".join(extent_text(e) for e in value.shape) + "]"


def describe(value: Val) -> str:
    """A short description of a value for error messages: ``bfloat16 tensor of rank 3``."""
    if isinstance(value, TensorView):
        return f"{value.dtype.name} tensor of rank {value.ndim}"
    if isinstance(value, Scalar):
        return f"{value.dtype.name} scalar"
    return f"vector of size {value.size}"


__all__ = [
    "DefinitionError",
    "FusionBuilder",
    "IterType",
    "broadcast_domains",
    "copy_domain",
    "describe",
    "extent_from_scalar",
    "extent_text",
    "normalize_dim",
    "normalize_dims",
    "out_of_range_text",
    "invalid_size_text",
    "normalize_stride_order",
    "same_extent",
    "shape_entries",
    "shape_text",
]
