"""The reference's one table: the rule for every op it evaluates, keyed by ``OpType``.

The interpreter dispatches through ``RULES`` alone. The rules themselves live by concept in
``elementwise``, ``structural`` and ``attention``; ``tests/test_op_tables.py`` checks that no
two claim the same op and that every op has a rule or is in ``UNSUPPORTED`` with its reason.
"""

from __future__ import annotations

from collections.abc import Callable

from fusecli.ir.optype import OpType
from fusecli.reference.attention import ATTENTION_RULES
from fusecli.reference.elementwise import ELEMENTWISE_RULES
from fusecli.reference.structural import STRUCTURAL_RULES

RULES: dict[OpType, Callable[..., object]] = {
    **ELEMENTWISE_RULES, **STRUCTURAL_RULES, **ATTENTION_RULES
}

# Ops the reference has no rule for, each with why: they never reach it as exprs.
UNSUPPORTED: frozenset[OpType] = frozenset(
    {
        OpType.shape,  # fd.ops.shape returns the tensor's existing size scalars: no expr
        OpType.at,  # indexing a shape vector returns one of its existing scalars: no expr
    }
)
