"""Argument binding for ``fd.ops``: positional and keyword forms, with friendly errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fusecli.frontend.records import Record
from fusecli.frontend.state import Scalar, State, Tensor
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition


def incompatible(op: str, detail: str) -> TypeError:
    """A wrong argument, as nvFuser's bindings (pybind11) report it, with what was wrong."""
    return TypeError(f"{op}(): incompatible function arguments. {detail}")


def is_int64(value: object) -> bool:
    """A Python int (not a bool) that fits nvFuser's int64_t parameters."""
    return isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63


def bind_args(
    op: str,
    params: Sequence[str],
    args: tuple,
    kwargs: dict,
    defaults: dict[str, Any] | None = None,
    aliases: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Bind positional and keyword arguments to ``params``; a friendly TypeError otherwise."""
    if len(args) > len(params):
        raise incompatible(op, f"takes {len(params)} arguments, got {len(args)}")
    bound = dict(zip(params, args))
    for key, value in kwargs.items():
        key = (aliases or {}).get(key, key)
        if key not in params:
            raise incompatible(op, f"got an unexpected keyword argument '{key}'")
        if key in bound:
            raise incompatible(op, f"got multiple values for argument '{key}'")
        bound[key] = value
    for key, value in (defaults or {}).items():
        bound.setdefault(key, value)
    missing = [p for p in params if p not in bound]
    if missing:
        raise incompatible(op, f"missing required argument(s): {', '.join(missing)}")
    return bound


def bind_op(op: OpType, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Bind a call of ``fd.ops.<op>`` by the signature in its record."""
    definition = op.definition
    return bind_args(
        definition.name, definition.params, args, kwargs,
        defaults=dict(definition.defaults), aliases=dict(definition.aliases),
    )


def tensor_arg(op: str, value: object, name: str = "arg") -> Tensor:
    if not isinstance(value, Tensor):
        raise incompatible(op, f"{name} must be a Tensor, got {value!r}")
    return value


def operand_arg(op: str, value: object) -> State:
    if isinstance(value, Tensor | Scalar):
        return value
    raise incompatible(op, f"expected a Tensor, a Scalar or a Python number, got {value!r}")


def python_number(value: object) -> bool:
    """A number nvFuser takes where a Scalar goes (``fd.ops.mul(T, 2)``): bool, int, float,
    complex, or a numpy or 0-dim torch number."""
    if isinstance(value, bool | int | float | complex):
        return True
    item = getattr(value, "item", None)
    shape = getattr(value, "shape", None)
    return callable(item) and shape is not None and tuple(shape) == ()


def int_arg(op: str, value: object, name: str) -> int:
    if isinstance(value, Scalar) and value.val.is_constant:
        return int(value.val.value)
    if not is_int64(value):
        raise incompatible(op, f"{name} must be an int, got {value!r}")
    return value


def dims_arg(op: str, value: object) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list | tuple):
        return [int_arg(op, v, "dims") for v in value]
    raise incompatible(op, f"dims must be an int or a list of ints, got {value!r}")


def dtype_arg(op: str, value: object) -> DataType:
    if not isinstance(value, DataType):
        raise incompatible(op, f"dtype must be a DataType, got {value!r}")
    return value



class OpsBase:
    """What every group of ``fd.ops`` methods shares: the definition, its builder, recording."""

    def __init__(self, fd: FusionDefinition) -> None:
        self._fd = fd

    @property
    def _b(self):
        return self._fd._builder

    def _finish(
        self, name: str, results: Sequence[object], args: list[tuple[str | None, object]]
    ) -> Any:
        """Wrap IR results in handles and record ``outputs = fd.ops.name(args)``."""
        states = [self._fd._wrap(r) for r in results]
        self._fd._record(Record(f"fd.ops.{name}", states, args))
        return states[0] if len(states) == 1 else tuple(states)

    def _operand(self, op: str, value: object) -> State:
        """An operand: a Tensor or Scalar as given, a Python number as the constant
        ``fd.define_scalar(value)`` makes (Int, Double, Bool or ComplexDouble, as nvFuser)."""
        if not isinstance(value, Tensor | Scalar) and python_number(value):
            return self._fd.define_scalar(value)
        return operand_arg(op, value)

    def _start(self, name: str) -> None:
        self._fd._check_defining(f"fd.ops.{name}")
