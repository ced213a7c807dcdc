"""The handles a definition works with: ``Tensor``, ``Scalar`` and ``Vector``.

Each handle has nvFuser's state index (``T3``, ``S4``, ``V5`` share one counter) and wraps one IR
value. Python operators on handles call the matching ``fd.ops`` function, as nvFuser's bindings
do; ``/`` is ``div`` (C-style, truncating for integers), not ``truediv``.

A tensor of the direct frontend (``nvfuser_direct``) is the IR value itself there
(``DirectTensor``): ``tv.dtype()`` is a method, ``str(tv)`` prints it as the fusion's IR does
(``T0_g_float[iS0{2}, iS1{4}]``), ``tv.domain()`` and ``tv.axis(i)`` give its domain and
iteration domains, and ``axis(i).extent()`` their extents, printed the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir import nodes

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition
    from fusecli.ir.dtype import DataType


class State:
    prefix = "?"
    __slots__ = ("fd", "index", "val")

    def __init__(self, fd: FusionDefinition, index: int, val: nodes.Val) -> None:
        self.fd = fd
        self.index = index
        self.val = val

    @property
    def name(self) -> str:
        return f"{self.prefix}{self.index}"

    def __str__(self) -> str:
        return self.name


class _Arithmetic(State):
    """Operator overloads shared by tensors and scalars."""

    __slots__ = ()

    def _binary(self, op: str, other: object) -> State:
        return getattr(self.fd.ops, op)(self, other)

    def __add__(self, other):
        return self._binary("add", other)

    def __sub__(self, other):
        return self._binary("sub", other)

    def __mul__(self, other):
        return self._binary("mul", other)

    def __truediv__(self, other):
        return self._binary("div", other)

    def __mod__(self, other):
        return self._binary("fmod", other)

    def __pow__(self, other):
        return self._binary("pow", other)

    def __eq__(self, other):  # noqa: D105 - nvFuser semantics: an elementwise comparison
        return self._binary("eq", other)

    def __ne__(self, other):
        return self._binary("ne", other)

    def __lt__(self, other):
        return self._binary("lt", other)

    def __le__(self, other):
        return self._binary("le", other)

    def __gt__(self, other):
        return self._binary("gt", other)

    def __ge__(self, other):
        return self._binary("ge", other)

    def __and__(self, other):
        return self._binary("bitwise_and", other)

    def __or__(self, other):
        return self._binary("bitwise_or", other)

    def __xor__(self, other):
        return self._binary("bitwise_xor", other)

    def __lshift__(self, other):
        return self._binary("bitwise_left_shift", other)

    def __rshift__(self, other):
        return self._binary("bitwise_right_shift", other)

    def __neg__(self):
        return self.fd.ops.neg(self)

    def __abs__(self):
        return self.fd.ops.abs(self)

    __hash__ = State.__hash__


class Tensor(_Arithmetic):
    prefix = "T"
    __slots__ = ()

    @property
    def ndim(self) -> int:
        return self.val.ndim

    @property
    def dtype(self):
        return self.val.dtype

    def shape(self) -> Vector:
        return self.fd.ops.shape(self)

    def size(self, dim: int) -> Scalar:
        return self.fd.ops.size(self, dim)

    def is_tensor(self) -> bool:  # nvfuser_direct's Val API
        return True

    def __repr__(self) -> str:
        return f"Tensor(index={self.index}, ndim={self.ndim})"


class DirectTensor(Tensor):
    """A tensor of ``nvfuser_direct``, where it is the IR's TensorView: ``dtype()`` is a
    method, and it prints as the IR does."""

    __slots__ = ()

    def dtype(self) -> DataType:  # type: ignore[override]
        return self.val.dtype

    def domain(self) -> IrText:
        """The tensor's domain, printed ``[iS0{2}, iS1{4}]``."""
        printer = _ir_printer(self.fd)
        return IrText(
            "[" + ", ".join(printer.iter_domain(d) for d in self.val.domain) + "]"
        )

    def axis(self, index: int) -> IterDomainText:
        """Its ``index``-th iteration domain (negative from the end), printed ``iS0{2}``."""
        domain = self.val.domain[index]
        return IterDomainText(_ir_printer(self.fd).iter_domain(domain),
                              _ir_printer(self.fd).extent(domain.extent))

    def __str__(self) -> str:
        return _ir_printer(self.fd).value(self.val)


class Scalar(_Arithmetic):
    prefix = "S"
    __slots__ = ()

    @property
    def dtype(self):
        return self.val.dtype

    def is_tensor(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Scalar(index={self.index})"


class IrText(str):
    """A part of the IR, as nvFuser's direct frontend prints it."""


class IterDomainText(IrText):
    """An iteration domain (``iS0{2}``), whose ``extent()`` prints as its extent (``2``)."""

    def __new__(cls, text: str, extent: str) -> IterDomainText:
        made = super().__new__(cls, text)
        made._extent = extent
        return made

    def extent(self) -> IrText:
        return IrText(self._extent)


def _ir_printer(fd: FusionDefinition):
    """A printer naming every value as ``fd``'s fusion prints it: the finished fusion's,
    or, while defining, what is defined so far."""
    from fusecli.ir.printer import Namer, ValuePrinter, fusion_global_uids

    if fd._defining:
        fusion = fd._builder.build()
        return ValuePrinter(Namer(fusion), fusion_global_uids(fusion))
    fusion = fd.fusion
    printer = fusion.memo.get("frontend_printer")
    if printer is None:
        printer = fusion.memo["frontend_printer"] = ValuePrinter(
            Namer(fusion), fusion_global_uids(fusion)
        )
    return printer


class Vector(State):
    prefix = "V"
    __slots__ = ("elements",)

    def __init__(
        self, fd: FusionDefinition, index: int, val: nodes.Vector, elements: list[Scalar]
    ) -> None:
        super().__init__(fd, index, val)
        self.elements = elements

    @property
    def size(self) -> int:
        return len(self.elements)

    def at(self, index: int) -> Scalar:
        return self.fd.ops.at(self, index)

    def __getitem__(self, index: int) -> Scalar:
        return self.at(index)

    def __len__(self) -> int:
        return len(self.elements)

    def __repr__(self) -> str:
        return f"Vector(index={self.index}, size={self.size})"
