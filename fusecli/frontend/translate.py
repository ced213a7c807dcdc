"""A fusion printed as nvFuser's direct frontend prints it: ``repr(fd)`` of ``nvfuser_direct``.

nvFuser's direct frontend keeps no records: ``translate_fusion`` (its
``python/python_direct/python_translate.cpp``) writes a definition back from the Fusion IR.
This module does the same from fusecli's IR, by the same rules:

- the function is ``def nvfuser_fusion(fd : FusionDefinition) -> None :``; the fusion's inputs
  come first (``define_tensor``, ``define_scalar(None, dtype=...)``), then every expr that an
  output depends on, in the order of a depth-first walk from the terminating outputs (inputs of
  an expr in order), then ``fd.add_output`` per output;
- tensors are ``tvN``, N counting the fusion's tensors in creation order; a scalar is written
  inline when Python can spell it (Bool, Int, Double, ComplexDouble constants), and is ``cN``
  otherwise: ``cN = fd.define_scalar(1.50000, dtype=DataType.Float)`` for other constants, and
  ``cN = fd.ops.size(tvM, dim=d)`` for a tensor's size (N is the scalar's number in fusecli's
  printed IR, ``i3`` there is ``c3`` here);
- ``define_tensor`` leaves out a row-major ``stride_order``; ops leave out keyword arguments
  equal to their defaults (``translate_ops``).

fusecli's IR has two kinds of exprs nvFuser's has not, and they print as nvFuser's IR would
have them: a cast of a scalar within its category, other than a fusion output (nvFuser's
``optionalCast`` leaves a Double multiplying a Float tensor as it is: ``mul(tv2, 3.00000)``),
and ``size`` of a fusion input's dimension (in nvFuser, ``fd.ops.size`` is the dimension's
extent itself). Both are read through to the value they stand for.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence

from fusecli.frontend.records import format_double
from fusecli.frontend.translate_ops import DIRECT_PRINTERS, unused_results
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import (
    Expr,
    Extent,
    Fusion,
    Scalar,
    ScalarExtent,
    SymbolicExtent,
    TensorView,
    Val,
)
from fusecli.ir.optype import OpType
from fusecli.ir.order import operands, post_order, terminating_outputs
from fusecli.ir.printer import Namer

HEADER = "def nvfuser_fusion(fd : FusionDefinition) -> None :"
INDENT = "    "
# Constants Python spells without a dtype (python_translate.cpp isPythonScalar).
PYTHON_SCALAR_DTYPES = frozenset(
    {DataType.Bool, DataType.Int, DataType.Double, DataType.ComplexDouble}
)

Node = Val | Expr | SymbolicExtent


def translate_fusion(fusion: Fusion) -> str:
    """The definition ``repr(fd)`` prints for ``fusion``, ending with a newline."""
    text = fusion.memo.get("direct_definition")
    if text is None:  # a fusion never changes: printed once (scripts print each execute's)
        text = fusion.memo["direct_definition"] = Translator(fusion).translate()
    return text


class Translator:
    """One fusion's printing: the names given so far and the lines written so far.

    Op rules (``translate_ops``) call ``value``, ``values`` and ``shape``, which write the
    lines that define a scalar the first time it is needed, before the op's own line.
    """

    def __init__(self, fusion: Fusion) -> None:
        self.fusion = fusion
        self._namer = Namer(fusion)
        self._tensor_names = {
            tv.uid: f"tv{number}" for number, tv in enumerate(_tensors_by_creation(fusion))
        }
        self._input_extents = {  # the sizes fd.ops.size can always name: the inputs'
            id(domain.logical_extent)
            for tv in fusion.inputs if isinstance(tv, TensorView) for domain in tv.logical
            if isinstance(domain.logical_extent, SymbolicExtent)
        }
        self._output_ids = {id(v) for v in fusion.output_values}
        self._defined: dict[int, str] = {}  # id of a (canonical) value -> its name
        self._tensors: list[TensorView] = []  # defined tensors, in the order of their lines
        self._lines: list[str] = []

    # -- the whole definition ------------------------------------------------------------------

    def translate(self) -> str:
        for value in self.fusion.inputs:
            self._define_input(value)
        for expr in self._expr_order():
            self._emit_expr(expr)
        for output in self.fusion.outputs:
            arguments = [self.value(output.value)]
            if output.alias_input is not None:
                arguments.append(self.value(output.alias_input))
            if output.stride_order:  # fusecli's add_output takes it; nvFuser's direct one not
                arguments.append(f"stride_order={list(output.stride_order)}")
            self._lines.append(f"fd.add_output({', '.join(arguments)})")
        return "\n".join([HEADER, *(INDENT + line for line in self._lines)]) + "\n"

    def _define_input(self, value: Val) -> None:
        if isinstance(value, TensorView):
            self._bind(value, self._tensor_names[value.uid])
            self._lines.append(f"{self._tensor_names[value.uid]} = {define_tensor_call(value)}")
        elif isinstance(value, Scalar):
            name = self._scalar_name(value)
            self._bind(value, name)
            self._lines.append(f"{name} = fd.define_scalar(None, dtype={dtype_text(value.dtype)})")

    def _emit_expr(self, expr: Expr) -> None:
        if self._is_alias(expr):
            return
        printer = DIRECT_PRINTERS.get(expr.op)
        if printer is None:
            raise NotImplementedError(
                f"printing fd.ops.{expr.op.value} for nvfuser_direct: no rule in "
                "fusecli/frontend/translate_ops.py"
            )
        call = printer(expr, self)
        names = []
        for output in expr.outputs:
            name = (
                self._tensor_names[output.uid] if isinstance(output, TensorView)
                else self._scalar_name(output)
            )
            self._bind(output, name)
            names.append(name)
        names += ["_"] * unused_results(expr)
        self._lines.append(f"{', '.join(names)} = {call}")

    # -- values, for op rules ------------------------------------------------------------------

    def value(self, value: Val | Extent) -> str:
        """How an argument is written: ``tv3``, ``c5``, or a Python literal such as ``3.00000``.
        A scalar not defined yet gets its defining line first."""
        value = self.canonical(value)
        if isinstance(value, int):
            return str(value)
        if isinstance(value, Scalar) and value.is_constant and value.dtype in PYTHON_SCALAR_DTYPES:
            return literal(value.value, value.dtype)
        name = self._defined.get(id(value))
        if name is not None:
            return name
        if isinstance(value, SymbolicExtent):
            return self._define_size(value) or "-1"
        if isinstance(value, Scalar) and value.is_constant:
            return self.handle(value)
        raise ValueError(f"printing nvfuser_direct: {value!r} is used before it is defined")

    def handle(self, value: Val) -> str:
        """``value`` where nvFuser's frontend wants a scalar handle, not a Python number: a
        constant gets a line of its own (``c4 = fd.define_scalar(2, dtype=DataType.Int)``)."""
        value = self.canonical(value)
        if not (isinstance(value, Scalar) and value.is_constant):
            return self.value(value)
        name = self._defined.get(id(value))
        if name is None:
            name = self._scalar_name(value)
            self._lines.append(
                f"{name} = fd.define_scalar({literal(value.value, value.dtype)}, "
                f"dtype={dtype_text(value.dtype)})"
            )
            self._bind(value, name)
        return name

    def values(self, values: Iterable[Val | Extent]) -> str:
        """``[a, b, c]``."""
        return "[" + ", ".join(self.value(v) for v in values) + "]"

    def shape(self, tv: TensorView) -> str:
        """The sizes of ``tv`` as a shape argument (reshape, expand, full, random ops): a size
        fusecli computed from others (a reshape's -1) is written -1, which asks for the same."""
        entries = []
        for domain in tv.logical:
            extent = self.canonical(domain.logical_extent)
            known = isinstance(extent, int | Scalar | SymbolicExtent)
            entries.append(self.value(extent) if known else "-1")
        return "[" + ", ".join(entries) + "]"

    def canonical(self, value: Val | Extent) -> Val | Extent:
        """The value nvFuser's IR would hold where fusecli's holds ``value``."""
        while True:
            if isinstance(value, ScalarExtent):
                value = value.scalar
                continue
            if not isinstance(value, Scalar):
                return value
            expr = self.fusion.definition(value)
            if expr is None or not self._is_alias(expr):
                return value
            if expr.op is OpType.size:
                value = expr.inputs[0].logical[expr.attr("dim")].logical_extent
            else:
                value = expr.inputs[0]

    def _is_alias(self, expr: Expr) -> bool:
        """A size of an input's dimension, or a cast of a scalar within its category."""
        if expr.op is OpType.size:
            extent = expr.inputs[0].logical[expr.attr("dim")].logical_extent
            return id(extent) in self._input_extents or isinstance(extent, ScalarExtent)
        if expr.op is OpType.cast and isinstance(expr.output, Scalar):
            source, target = expr.inputs[0].dtype, expr.output.dtype
            return (
                source is not DataType.Bool and target is not DataType.Bool
                and dt.category(source) is dt.category(target)
                and id(expr.output) not in self._output_ids  # an output keeps its dtype
            )
        return False

    # -- names -----------------------------------------------------------------------------

    def _bind(self, value: Val | SymbolicExtent, name: str) -> None:
        self._defined[id(value)] = name
        if isinstance(value, TensorView):
            self._tensors.append(value)

    def _scalar_name(self, value: Scalar | SymbolicExtent) -> str:
        return "c" + self._namer.scalar_name(value).lstrip(string.ascii_letters)

    def _define_size(self, extent: SymbolicExtent) -> str | None:
        """``cN = fd.ops.size(tvM, dim=d)`` for the first defined tensor of that size."""
        for tv in self._tensors:
            for dim, domain in enumerate(tv.logical):
                if domain.logical_extent is extent:
                    name = self._scalar_name(extent)
                    self._lines.append(
                        f"{name} = fd.ops.size({self._defined[id(tv)]}, dim={dim})"
                    )
                    self._bind(extent, name)
                    return name
        return None

    # -- order -----------------------------------------------------------------------------

    def _expr_order(self) -> list[Expr]:
        """nvFuser's ``Fusion::exprs()``: a depth-first walk from the terminating outputs,
        each expr after its inputs, the inputs in order."""

        def children(node: Node) -> Sequence[Node]:
            if isinstance(node, Expr):
                return [self.canonical(v) for v in operands(node)]
            definition = self.fusion.definition(node) if isinstance(node, Val) else None
            return [definition] if definition is not None else []

        visited = post_order(self._terminating_outputs(), children)
        return [node for node in visited if isinstance(node, Expr)]

    def _terminating_outputs(self) -> list[Val]:
        """Outputs that no other output depends on (``Fusion::getTerminatingOutputs``)."""
        return terminating_outputs(self.fusion)


def _tensors_by_creation(fusion: Fusion) -> list[TensorView]:
    seen: dict[int, TensorView] = {}
    for value in (*fusion.inputs, *(o for e in fusion.exprs for o in e.outputs)):
        if isinstance(value, TensorView):
            seen.setdefault(value.uid, value)
    return sorted(seen.values(), key=lambda tv: tv.uid)


# ---------------------------------------------------------------------------------------------
# Text of values
# ---------------------------------------------------------------------------------------------


def literal(value: bool | int | float | complex, dtype: DataType) -> str:
    """A constant as nvFuser's translator writes it (doubles with six significant digits)."""
    if dtype is DataType.Bool:
        return "True" if value else "False"
    if dt.is_integral(dtype):
        return str(int(value))
    if dt.is_complex(dtype):
        value = complex(value)
        real, imag = format_double(value.real), format_double(value.imag)
        if "float(" in real + imag:
            return f"complex({real}, {imag})"
        return f"{real}+{imag}j"
    return format_double(float(value))


def dtype_text(dtype: DataType) -> str:
    return f"DataType.{dtype.name}"


def define_tensor_call(tv: TensorView) -> str:
    """``fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=..., is_cpu=False)``;
    the stride order only when it is not row-major (nvFuser then has no allocation domain)."""
    shape = [extent if isinstance(extent, int) else -1 for extent in tv.shape]
    contiguity = "[" + ", ".join(str(c) for c in tv.contiguity) + "]"
    text = (
        f"fd.define_tensor(shape={shape}, contiguity={contiguity}, dtype={dtype_text(tv.dtype)}"
        f", is_cpu={tv.is_cpu}"
    )
    if tv.stride_order and list(tv.stride_order) != list(range(tv.ndim - 1, -1, -1)):
        text += f", stride_order={list(tv.stride_order)}"
    return text + ")"
