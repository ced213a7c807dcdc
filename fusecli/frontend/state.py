"""The handles a definition works with: ``Tensor``, ``Scalar`` and ``Vector``.

Each handle has nvFuser's state index (``T3``, ``S4``, ``V5`` share one counter) and wraps one IR
value. Python operators on handles call the matching ``fd.ops`` function, as nvFuser's bindings
do; ``/`` is ``div`` (C-style, truncating for integers), not ``truediv``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir import nodes

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition


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
