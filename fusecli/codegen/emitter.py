"""Emitting C for the values of a segment, backwards from the index where each is needed.

``Emitter.value(tensor, index)`` returns a C expression for ``tensor`` at ``index`` (one
``Index`` per logical dimension), writing the statements that compute it first. It asks for
each operand at the index the op maps it to (a permute swaps positions, a broadcast drops
them, a reshape divides a linear position, a pad subtracts its left width), so shape ops are
index arithmetic and never copies. Results are remembered per (value, index) within a scope:
a value needed twice at one index is computed once, and a reduction kernel keeps a row in
registers this way.

The op handlers are one table, ``HANDLERS``, keyed by op kind; elementwise ops render through
``render.C_OPS``. Random ops are ``codegen.random_ops``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from fusecli.codegen import cdtypes, gather, powers, random_ops, render, resize
from fusecli.codegen.context import KernelContext
from fusecli.codegen.indexing import (
    LANE,
    Index,
    IndexSpace,
    add,
    const,
    contiguous_strides,
    scale,
)
from fusecli.codegen.kernel import ArgKind, UnsupportedError
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Scalar, TensorView
from fusecli.ir.optype import OpKind, OpType

Handler = Callable[["Emitter", Expr, TensorView, tuple[Index, ...]], str]


class Emitter:
    def __init__(self, ctx: KernelContext, space: IndexSpace, vector_width: int = 1) -> None:
        self.ctx = ctx
        self.space = space
        self.vector_width = vector_width
        self.lines: list[str] = []
        self.depth = 1
        self.lane = 0  # the vector lane being emitted, substituted for LANE
        self.reduced: dict[int, tuple[str, tuple[str, ...]]] = {}  # uid -> (C name, row index)
        self.vector_accesses: set[str] = set()  # pointers read or written a vector at a time
        # Inputs parked in shared memory: uid -> the tile element at an index, or None.
        self.staged: dict[int, Callable[[tuple[Index, ...]], str | None]] = {}
        # Values rounded to half or bfloat16 right after computing: name -> (dtype, the value
        # before rounding). Storing one converts the unrounded value: the same bits, and the
        # rounding itself is left unused.
        self.unrounded: dict[str, tuple[DataType, str]] = {}
        self._scopes: list[dict[object, str]] = [{}]
        self._names: set[str] = set()
        self.philox: dict[int, str] = {}  # random expr uid -> its PhiloxState

    # -- statements ---------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """``header { ... }``; values computed inside are forgotten after it."""
        self.line(header + " {")
        self.depth += 1
        self._scopes.append({})
        try:
            yield
        finally:
            self._scopes.pop()
            self.depth -= 1
            self.line("}")

    def fresh(self, base: str) -> str:
        name, count = base, 0
        while name in self._names:
            count += 1
            name = f"{base}_{count}"
        self._names.add(name)
        return name

    def bind(self, ctype: str, base: str, expression: str, comment: str = "") -> str:
        name = self.fresh(base)
        note = f"  // {comment}" if comment else ""
        self.line(f"const {ctype} {name} = {expression};{note}")
        return name

    def remember(self, key: object, name: str) -> str:
        self._scopes[-1][key] = name
        return name

    def recall(self, key: object) -> str | None:
        for scope in reversed(self._scopes):
            if key in scope:
                return scope[key]
        return None

    def text(self, index: Index) -> str:
        return index.text(self.lane)

    # -- values -------------------------------------------------------------------------------

    def value(self, tensor: TensorView, index: tuple[Index, ...]) -> str:
        """C expression of ``tensor`` (register type) at ``index``."""
        shape = self.ctx.shape(tensor)
        if len(index) != len(shape):
            raise UnsupportedError(f"{self.ctx.name(tensor)} is read with {len(index)} "
                                   f"indices but has {len(shape)} dimensions")
        index = tuple(const(0) if size == 1 else i for i, size in zip(index, shape))
        key = (tensor.uid, tuple(self.text(i) for i in index))
        found = self.recall(key)
        if found is not None:
            return found
        staged = self.staged.get(tensor.uid)
        result = staged(index) if staged else None
        return self.remember(key, result or self._compute(tensor, index))

    def _compute(self, tensor: TensorView, index: tuple[Index, ...]) -> str:
        if self.ctx.candidate.is_input(tensor):
            return self._load_input(tensor, index)
        expr = self.ctx.candidate.definition(tensor)
        handler = HANDLERS.get(expr.op.kind)
        if handler is None:
            raise UnsupportedError(f"no CUDA generator for {expr.op.value} ({tensor.dtype.name})")
        return handler(self, expr, tensor, index)

    def scalar(self, scalar: Scalar, dtype: DataType | None = None) -> str:
        """C expression of ``scalar``, converted to ``dtype`` (default: its own)."""
        dtype = dtype or scalar.dtype
        folded = self.ctx.constant_of(scalar, dtype)
        if folded is not None:
            return cdtypes.literal(folded, dtype)
        return render.cast(self.ctx.scalar_param(scalar).name, scalar.dtype, dtype)

    def operand(self, value: object, out_index: tuple[Index, ...]) -> str:
        """An elementwise operand: a tensor read right-aligned at ``out_index``, or a scalar."""
        if isinstance(value, TensorView):
            rank = len(self.ctx.shape(value))
            return self.value(value, out_index[len(out_index) - rank:] if rank else ())
        return self.scalar(value)

    def named(self, value: str, ctype: str, base: str) -> str:
        """``value`` as a C name (binding it to one if it is an expression)."""
        return value if value.isidentifier() else self.bind(ctype, base, value)

    # -- memory -------------------------------------------------------------------------------

    def offset(self, strides: tuple[int, ...], index: tuple[Index, ...]) -> Index:
        total = const(0)
        for stride, position in zip(strides, index):
            total = add(total, scale(position, stride))
        return total

    def vectorizable(self, offset: Index, alignment_bytes: int, dtype: DataType) -> bool:
        """Whether the lanes of ``offset`` are consecutive and aligned for one access."""
        width = self.vector_width
        if width == 1 or offset.coefficient(LANE) != 1:
            return False
        base = offset.without(LANE)
        if base.mentions(LANE) or base.const % width:
            return False
        if any(coefficient % width for _, coefficient in base.terms):
            return False
        return alignment_bytes % (width * cdtypes.itemsize(dtype)) == 0

    def _load_input(self, tensor: TensorView, index: tuple[Index, ...]) -> str:
        param = self.ctx.input_param(tensor)
        name = self.ctx.name(tensor).lower()
        if param.kind is ArgKind.HOST_SCALAR:
            return param.name
        layout = self.ctx.layouts[tensor.uid]
        offset = self.offset(layout.strides, index)
        return self.load(param.name, tensor.dtype, offset, layout.alignment, name)

    def load(self, pointer: str, dtype: DataType, offset: Index, alignment: int, base: str) -> str:
        ctype = cdtypes.register_type(dtype)
        if not self.vectorizable(offset, alignment, dtype):
            element = f"{pointer}[{self.text(offset)}]"
            return self.bind(ctype, base, cdtypes.load(dtype, element))
        vector = self._vector(pointer, dtype, offset, base)
        return self.bind(ctype, base, cdtypes.load(dtype, f"{vector}.v[{self.lane}]"))

    def _vector(self, pointer: str, dtype: DataType, offset: Index, base: str) -> str:
        """The vector of lanes at ``offset`` (vectorizable), loaded once per scope."""
        start = offset.without(LANE)
        key = ("vector", pointer, start.text(None))
        vector = self.recall(key)
        if vector is None:
            self.vector_accesses.add(pointer)
            vtype = f"Vec<{cdtypes.storage_type(dtype)}, {self.vector_width}>"
            vector = self.bind(vtype, f"{base}_vec",
                               f"*reinterpret_cast<const {vtype}*>(&{pointer}[{start.text()}])")
            self.remember(key, vector)
        return vector

    def preload(self, tensor: TensorView, index: tuple[Index, ...]) -> None:
        """Issue the vector load of input ``tensor`` at ``index`` here, ahead of its first use:
        reads in this scope and the ones inside it take the loaded vector. Does nothing for
        an access that is not one vector (those load where they are used)."""
        param = self.ctx.input_param(tensor)
        if param.kind is ArgKind.HOST_SCALAR:
            return
        shape = self.ctx.shape(tensor)
        index = tuple(const(0) if size == 1 else i for i, size in zip(index, shape))
        layout = self.ctx.layouts[tensor.uid]
        offset = self.offset(layout.strides, index)
        if self.vectorizable(offset, layout.alignment, tensor.dtype):
            self._vector(param.name, tensor.dtype, offset, self.ctx.name(tensor).lower())

    def result(self, out: TensorView, expression: str, comment: str) -> str:
        name = self.bind(cdtypes.register_type(out.dtype), self.ctx.name(out).lower(),
                         expression, comment)
        inner = cdtypes.unrounded(out.dtype, expression)
        if inner is not None:
            self.unrounded[name] = (out.dtype, inner)
        return name


# -- handlers -----------------------------------------------------------------------------------


def _elementwise(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    args = [emitter.operand(value, index) for value in expr.inputs]
    compute = expr.inputs[1].dtype if expr.op is OpType.where else expr.inputs[0].dtype
    expression = _constant_power(emitter, expr, args, compute) or render.render(
        expr.op, args, compute)
    if expr.op.value in emitter.ctx.faults:
        expression = render.injected_fault(expression, out.dtype)
    if expr.op is not OpType.where:
        expression = cdtypes.rounded(out.dtype, expression)
    return emitter.result(out, expression, expr.op.value)


def _constant_power(emitter: Emitter, expr: Expr, args: list[str], compute: DataType,
                    ) -> str | None:
    """``pow`` by a constant exponent as products or roots (``codegen.powers``), else None."""
    if expr.op is not OpType.pow or not isinstance(expr.inputs[1], Scalar):
        return None
    exponent = emitter.ctx.constant_of(expr.inputs[1], compute)
    return powers.lowered_power(args[0], exponent, compute)


def _cast(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    (source,) = expr.inputs
    value = emitter.operand(source, index)
    same_register = cdtypes.register_type(source.dtype) == cdtypes.register_type(out.dtype)
    if OpType.cast.value in emitter.ctx.faults:
        converted = render.injected_fault(render.cast(value, source.dtype, out.dtype), out.dtype)
        return emitter.result(out, cdtypes.rounded(out.dtype, converted), "cast (faulted)")
    if source.dtype is out.dtype or same_register and not cdtypes.is_reduced(out.dtype):
        return value  # e.g. bfloat16 -> float: the register already holds the float
    return emitter.result(out, render.cast(value, source.dtype, out.dtype),
                          f"cast to {out.dtype.name}")


def _copy(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    return emitter.value(expr.inputs[0], index)


def _broadcast(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    flags = expr.attr("is_broadcast_dim")
    return emitter.value(expr.inputs[0], tuple(i for i, new in zip(index, flags) if not new))


def _permute(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    source = [const(0)] * len(index)
    for position, dim in enumerate(expr.attr("dims")):
        source[dim] = index[position]
    return emitter.value(expr.inputs[0], tuple(source))


def _squeeze(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    source = list(index)
    for dim in sorted(expr.attr("dims")):
        source.insert(dim, const(0))
    return emitter.value(expr.inputs[0], tuple(source))


def _reshape(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    """The linear position in ``out`` (row-major), divided back into the input's index."""
    source = expr.inputs[0]
    linear = emitter.offset(contiguous_strides(emitter.ctx.shape(out)), index)
    source_shape = emitter.ctx.shape(source)
    source_index = []
    for size, stride in zip(source_shape, contiguous_strides(source_shape)):
        quotient = emitter.space.divide(linear, stride)
        source_index.append(emitter.space.remainder(quotient, size))
    return emitter.value(source, tuple(source_index))


def _by_op(table: dict[OpType, Handler]) -> Handler:
    def handle(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
        handler = table.get(expr.op)
        if handler is None:
            raise UnsupportedError(f"no CUDA generator for {expr.op.value}")
        return handler(emitter, expr, out, index)

    return handle


def _create(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    if expr.op is OpType.full:
        return emitter.scalar(expr.inputs[1])
    _, start, step = expr.inputs  # iota: start + step * position, in the output dtype
    ctype = cdtypes.register_type(out.dtype)
    position = f"({ctype})({emitter.text(index[0])})"
    return emitter.result(
        out, f"{position} * {emitter.scalar(step)} + {emitter.scalar(start)}", "iota"
    )


def _reduced(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    found = emitter.reduced.get(out.uid)
    if found is None:
        raise UnsupportedError(f"{expr.op.value} needs a reduction kernel")
    name, row = found
    if tuple(emitter.text(i) for i in index) != row:
        raise UnsupportedError(
            f"{emitter.ctx.name(out)} is read at another row than the one it reduces"
        )
    return name


HANDLERS: dict[OpKind, Handler] = {
    OpKind.UNARY: _elementwise,
    OpKind.BINARY: _elementwise,
    OpKind.TERNARY: _elementwise,
    OpKind.CAST: _cast,
    OpKind.SET: _copy,
    OpKind.BROADCAST: _broadcast,
    OpKind.EXPAND: lambda e, expr, out, index: e.value(expr.inputs[0], index),
    OpKind.PERMUTE: _permute,
    OpKind.SQUEEZE: _squeeze,
    OpKind.RESHAPE: _reshape,
    OpKind.RESIZE: _by_op(resize.HANDLERS),
    OpKind.INDEX: _by_op(gather.HANDLERS),
    OpKind.CREATE: _create,
    OpKind.RANDOM: random_ops.random,
    OpKind.REDUCTION: _reduced,
    OpKind.NORMALIZATION: _reduced,
}
