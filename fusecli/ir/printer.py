"""Printing fusions as nvFuser's IR printer does (``Fusion::print``, ``Expr::toString``).

Names are assigned here, at print time, never stored in the IR. A ``Namer`` numbers a whole
fusion once, in nvFuser's order of first appearance: tensors ``T0, T1, ...`` (inputs first, then
each expr's outputs), iteration domains ``iS0, iS1, ...`` (each tensor's domain in order, when the
tensor is named) and scalars ``i0, d1, ...`` (symbolic extents and non-constant scalars share one
counter; the prefix is the dtype's). A tensor input takes the numbers nvFuser's ``define_tensor``
takes, constants it makes included (``Namer._define_tensor``). Printing any subset of exprs with
the same namer keeps the whole fusion's names, as nvFuser's segmenter log does for the segments
it considers.

The text of each kind of expr lives in ``printer_exprs``; this module formats values and lays out
whole fusions::

    Inputs:
      T0_g_float[iS0{i0}, iS1{i1}]
    Outputs:
      T1_g_float[iS2{i0}, iS3{i1}]

    %kernel {
    T1_g_float[iS2{i0}, iS3{i1}]
       = relu(T0_g_float[iS0{i0}, iS1{i1}]);
    } // %kernel
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import (
    Expr,
    Extent,
    ExtentExpr,
    ExtentOp,
    Fusion,
    IterDomain,
    Scalar,
    ScalarExtent,
    SymbolicExtent,
    TensorView,
    Val,
)
from fusecli.ir.printer_exprs import EXPR_PRINTERS

GLOBAL = "g"  # memory type of fusion (or segment) inputs and outputs
LOCAL = "l"  # memory type of intermediates

# Significant digits nvFuser prints floating constants with (csrc/type.cpp max_digits10).
_MAX_DIGITS10: dict[DataType, int] = {
    DataType.Double: 17,
    DataType.ComplexDouble: 17,
    DataType.Float: 9,
    DataType.ComplexFloat: 9,
    DataType.Half: 5,
    DataType.BFloat16: 4,
    DataType.Float8_e4m3fn: 3,
    DataType.Float8_e5m2: 2,
    DataType.Float8_e8m0fnu: 2,
    DataType.Float4_e2m1fn: 2,
    DataType.Float4_e2m1fn_x2: 2,
}


class Namer:
    """Print-time names for the values of one fusion, stable across print calls.

    ``Namer(fusion)`` names every value of ``fusion`` up front, so that printing a segment later
    uses the complete fusion's names. A value the namer has not seen gets the next free name
    when it is first printed.
    """

    def __init__(self, fusion: Fusion | None = None) -> None:
        self._tensors: dict[int, str] = {}
        self._iter_domains: dict[int, int] = {}
        self._scalars: dict[int, str] = {}  # Scalar and SymbolicExtent uids
        self._scalar_count = 0
        self.global_uids: frozenset[int] = frozenset()
        if fusion is None:
            return
        self.global_uids = fusion_global_uids(fusion)
        made = set()  # the fusion's oneVal and zeroVal, once made
        for value in fusion.inputs:
            if isinstance(value, TensorView):
                self._define_tensor(value, made)
            self._visit(value)
        for expr in fusion.exprs:
            for value in (*expr.inputs, *expr.outputs):
                self._visit(value)
        for value in fusion.output_values:
            self._visit(value)

    def tensor_name(self, tv: TensorView) -> str:
        """``T3``; naming a tensor names its iteration domains, in order."""
        name = self._tensors.get(tv.uid)
        if name is None:
            name = self._tensors[tv.uid] = f"T{len(self._tensors)}"
            for domain in tv.domain:
                self.iter_domain_number(domain)
        return name

    def iter_domain_number(self, domain: IterDomain) -> int:
        """The ``7`` of ``iS7{i0}``; naming a domain names the scalars of its extents."""
        number = self._iter_domains.get(domain.uid)
        if number is None:
            number = self._iter_domains[domain.uid] = len(self._iter_domains)
            self._visit_extent(domain.extent)
            if domain.expanded is not None:
                self._visit_extent(domain.expanded)
        return number

    def scalar_name(self, scalar: Scalar | SymbolicExtent) -> str:
        """``i0``, ``d3``, ``b5``: a non-constant scalar or a symbolic extent (an Int)."""
        name = self._scalars.get(scalar.uid)
        if name is None:
            prefix = dt.info(scalar.dtype).scalar_prefix if isinstance(scalar, Scalar) else "i"
            name = self._scalars[scalar.uid] = f"{prefix}{self._scalar_count}"
            self._scalar_count += 1
        return name

    def _define_tensor(self, tv: TensorView, made: set[str]) -> None:
        """Take the scalar names nvFuser's ``define_tensor`` takes, in its order.

        Every scalar nvFuser makes takes the next number of one counter, constants included
        (``IrContainer::registerVal``); constants print as their value, so their numbers show
        only as gaps. ``TensorViewBuilder::shape`` makes each dimension's size first: a new
        symbolic extent for -1, the fusion's ``oneVal()``/``zeroVal()`` for 1/0 (made once per
        fusion), a new constant otherwise. ``build()`` then goes over the dimensions: an
        expanded one takes ``oneVal()`` as its extent; ``SimplifyingIrBuilder::maybeCastExpr``
        makes a new constant for a constant size; every IterDomain starts at ``zeroVal()``.
        So ``define_tensor(shape=[-1])`` names its extent ``i0`` and the zero takes 1: the next
        scalar defined is ``d2`` (csrc/tensor_view.cpp, csrc/ir/builder.cpp)."""
        sizes = [d.expanded if d.expanded is not None else d.extent for d in tv.domain]

        def shared(name: str) -> None:
            if name not in made:
                made.add(name)
                self._scalar_count += 1

        for size in sizes:
            if isinstance(size, int):
                if size in (0, 1):
                    shared("zero" if size == 0 else "one")
                else:
                    self._scalar_count += 1
            else:
                self._visit_extent(size)
        for domain, size in zip(tv.domain, sizes):
            if domain.expanded is not None:
                shared("one")
            if isinstance(size, int):
                self._scalar_count += 1
            shared("zero")

    def _visit(self, value: Val) -> None:
        if isinstance(value, TensorView):
            self.tensor_name(value)
        elif isinstance(value, Scalar):
            if not value.is_constant:
                self.scalar_name(value)
        else:
            for element in value.elements:
                self._visit(element)

    def _visit_extent(self, extent: Extent) -> None:
        if isinstance(extent, SymbolicExtent):
            self.scalar_name(extent)
        elif isinstance(extent, ScalarExtent):
            self._visit(extent.scalar)
        elif isinstance(extent, ExtentExpr):
            self._visit_extent(extent.lhs)
            self._visit_extent(extent.rhs)


def fusion_global_uids(fusion: Fusion) -> frozenset[int]:
    """Uids of the tensors that live in global memory: the fusion's inputs and outputs."""
    return frozenset(v.uid for v in (*fusion.inputs, *fusion.output_values))


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def constant_str(value: bool | int | float | complex, dtype: DataType) -> str:
    """A constant as nvFuser prints it: ``float(0)``, ``double(-inf)``, ``4096``, ``true``."""
    if dtype is DataType.Bool:
        return "true" if value else "false"
    if dt.is_floating(dtype) or dt.is_complex(dtype):
        digits = _MAX_DIGITS10[dtype]
        if isinstance(value, complex):
            text = f"({_general(value.real, digits)},{_general(value.imag, digits)})"
        else:
            text = _general(value, digits)
        return f"{dt.ir_name(dtype)}({text})"
    return str(int(value))


def _general(value: float, digits: int) -> str:
    # C++ streams print doubles like printf's %g at the stream's precision.
    return format(float(value), f".{digits}g")


def scalar_str(scalar: Scalar, namer: Namer) -> str:
    if scalar.is_constant:
        return constant_str(scalar.value, scalar.dtype)
    return namer.scalar_name(scalar)


def extent_str(extent: Extent, namer: Namer) -> str:
    """``16``, ``i0``, ``( i1 * i0 )``, ``( ceilDiv(i1, 4) )``, as IterDomain extents print."""
    if isinstance(extent, int):
        return str(extent)
    if isinstance(extent, SymbolicExtent):
        return namer.scalar_name(extent)
    if isinstance(extent, ScalarExtent):
        return scalar_str(extent.scalar, namer)
    lhs, rhs = extent_str(extent.lhs, namer), extent_str(extent.rhs, namer)
    if extent.op is ExtentOp.CEIL_DIV:
        return f"( ceilDiv({lhs}, {rhs}) )"
    return f"( {lhs} {extent.op.value} {rhs} )"


def iter_domain_str(domain: IterDomain, namer: Namer) -> str:
    """``iS0{i0}``, ``rS5{i1}``, ``bS7{1 ex 4}``, ``iS9{16}rf``: all serial before scheduling."""
    extent = extent_str(domain.extent, namer)
    if domain.expanded is not None:
        extent += f" ex {extent_str(domain.expanded, namer)}"
    suffix = "rf" if domain.rfactor else ""
    number = namer.iter_domain_number(domain)
    return f"{domain.iter_type.value}S{number}{{{extent}}}{suffix}"


def tensor_str(tv: TensorView, namer: Namer, memory_type: str = LOCAL) -> str:
    """``T3_l_float[iS6{i0}, rS7{i1}]``; ``memory_type`` is ``g`` (global) or ``l`` (local)."""
    domains = ", ".join(iter_domain_str(d, namer) for d in tv.domain)
    return f"{namer.tensor_name(tv)}_{memory_type}_{dt.ir_name(tv.dtype)}[{domains}]"


class ValuePrinter:
    """What expr printers need: each value's text, with the memory type of tensors decided."""

    def __init__(self, namer: Namer, global_uids: Collection[int]) -> None:
        self.namer = namer
        self.global_uids = global_uids

    def value(self, value: Val) -> str:
        if isinstance(value, TensorView):
            memory = GLOBAL if value.uid in self.global_uids else LOCAL
            return tensor_str(value, self.namer, memory)
        if isinstance(value, Scalar):
            return scalar_str(value, self.namer)
        return "{" + ", ".join(scalar_str(e, self.namer) for e in value.elements) + "}"

    def constant(self, value: bool | int | float | complex, dtype: DataType) -> str:
        return constant_str(value, dtype)

    def extent(self, extent: Extent) -> str:
        return extent_str(extent, self.namer)

    def iter_domain(self, domain: IterDomain) -> str:
        return iter_domain_str(domain, self.namer)


# ---------------------------------------------------------------------------------------------
# Exprs and fusions
# ---------------------------------------------------------------------------------------------


def print_exprs(
    exprs: Iterable[Expr], namer: Namer, memory: Collection[int] | None = None
) -> str:
    """Exprs in the given order, one after the other.

    ``memory`` holds the uids of the tensors printed as global (``T5_g``): a segment's inputs and
    outputs. By default they are the namer's fusion's inputs and outputs.
    """
    printer = ValuePrinter(namer, namer.global_uids if memory is None else memory)
    return "".join(EXPR_PRINTERS[expr.op](expr, printer) for expr in exprs)


def print_fusion(fusion: Fusion, *, math: bool = False, namer: Namer | None = None) -> str:
    """``Fusion::print`` (``%kernel``) or, with ``math``, ``Fusion::printMath`` (``%kernel_math``).

    Pass the namer of a complete fusion to print a part of it with the complete fusion's names.
    """
    namer = namer if namer is not None else Namer(fusion)
    global_uids = fusion_global_uids(fusion)
    printer = ValuePrinter(namer, global_uids)
    lines = ["Inputs:"]
    lines += [f"  {printer.value(v)}" for v in fusion.inputs]
    lines.append("Outputs:")
    lines += [f"  {printer.value(v)}" for v in fusion.output_values]
    header = "\n".join(lines) + "\n"
    body = print_exprs(fusion.exprs, namer, memory=global_uids)
    if math:
        return f"{header}\n%kernel_math {{\n{body}}} // %kernel_math \n\n"
    return f"{header}\n%kernel {{\n{body}}} // %kernel\n"
