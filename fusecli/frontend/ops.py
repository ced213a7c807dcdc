"""``fd.ops``: nvFuser's op catalogue, in positional and keyword forms.

Each method binds its arguments (accepting the old spellings found in issue repros: ``axes=``,
``output_shape=``, ``original_shape=``), builds IR through ``fusecli.ir``, wraps the results in
handles, and records the call in the canonical form nvFuser prints. The methods live in one
module per group of ops; ``Ops`` joins them.
"""

from __future__ import annotations

from fusecli.frontend.ops_attention import AttentionOps
from fusecli.frontend.ops_elementwise import ElementwiseOps
from fusecli.frontend.ops_misc import MiscOps
from fusecli.frontend.ops_reduction import ReductionOps
from fusecli.frontend.ops_shape import ShapeOps


class Ops(ElementwiseOps, ReductionOps, ShapeOps, MiscOps, AttentionOps):
    """The ``fd.ops`` namespace of one FusionDefinition."""


__all__ = ["Ops"]
