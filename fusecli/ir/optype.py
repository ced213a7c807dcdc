"""The operations of the IR, named as in nvFuser's ``fd.ops``, each with its kind.

``OpType`` is derived from the records of ``fusecli.ir.opdefs``: one member per record, in the
records' order. The kind is what segmenters and executors dispatch on first (is it elementwise,
a reduction, a resize...); the op itself selects the exact computation; ``op.definition`` is its
whole record.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from fusecli.ir.opdefs import DEFS, ELEMENTWISE_KINDS, OPS, OpDef, OpKind


class _OpTypeBase(enum.Enum):
    """The methods of ``OpType``; its members come from the op records."""

    @property
    def definition(self) -> OpDef:
        return DEFS[self.value]

    @property
    def kind(self) -> OpKind:
        return DEFS[self.value].kind


OpType = _OpTypeBase("OpType", [(d.name, d.name) for d in OPS], module=__name__,
                     qualname="OpType")

_T = TypeVar("_T")


def by_kind(kind: OpKind, value: _T) -> dict[OpType, _T]:
    """``value`` for every op of ``kind``: a dispatch table's entries for a whole kind."""
    return {op: value for op in OpType if op.kind is kind}


__all__ = ["ELEMENTWISE_KINDS", "OpKind", "OpType", "by_kind"]
