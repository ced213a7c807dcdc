"""Profile-specific rewrites of a fusion before segmentation; each returns a new Fusion.

``pre_segmentation`` runs those a profile has, in nvFuser's order
(csrc/preseg_passes/pre_segmenter.cpp): the 2024 matmul lowering (part of the definition
then), RemoveEmptyPass (``remove_empty.py``), TranslateNoReductionMatmulToMulSqueeze
(``no_reduction_matmul.py``), ConsecutiveCastPass (``consecutive_cast.py``), RemoveBcastSqueeze
(``bcast_squeeze.py``),
SegmentInplaceUpdatePass (``inplace_update.py``),
MoveGatherPass (``move_gather.py``), then MarkAliasesPrepare (``mark_aliases.py``).

``nvfuser-2024``: before PR #2175 (May 2024), ``fd.ops.matmul`` built no MatmulOp. It
broadcast A [.., M, K] to [.., M, K, 1] and B [.., K, N] to [.., 1, K, N], multiplied and summed
over K in one MmaOp with a Float output [.., M, rK, N], and cast that back to the operands'
dtype. The rewrite here builds exactly that, so the 2024 segmenter sees what it saw then.
"""

from __future__ import annotations

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Fusion, IterDomain, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment.bcast_squeeze import remove_bcast_squeeze
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.consecutive_cast import consecutive_casts
from fusecli.segment.inplace_update import segment_inplace_updates
from fusecli.segment.mark_aliases import mark_aliases_prepare
from fusecli.segment.move_gather import move_gather
from fusecli.segment.no_reduction_matmul import translate_no_reduction_matmuls
from fusecli.segment.remove_empty import remove_empty
from fusecli.segment.rules import RuleProfile


def pre_segmentation(fusion: Fusion, profile: RuleProfile, runtime: RuntimeInfo) -> Fusion:
    """``fusion`` as the profile's segmenter sees it (``runtime``: the inputs' sizes)."""
    lowered = lower_for_profile(fusion, profile)
    if profile.remove_empty:
        lowered = remove_empty(lowered, runtime)
    if profile.no_reduction_matmul:
        lowered = translate_no_reduction_matmuls(lowered)
    if profile.consecutive_cast:
        lowered = consecutive_casts(lowered)
    if profile.remove_bcast_squeeze:
        lowered = remove_bcast_squeeze(lowered)
    if profile.segment_inplace_update:
        lowered = segment_inplace_updates(lowered)
    if profile.move_gather:
        lowered = move_gather(lowered)
    if profile.mark_aliases_prepare:
        return mark_aliases_prepare(lowered, runtime)
    return lowered


def lower_for_profile(fusion: Fusion, profile: RuleProfile) -> Fusion:
    if not profile.matmul_as_mma:
        return fusion
    if not any(_lowerable(e) for e in fusion.exprs):
        return fusion
    exprs: list[Expr] = []
    for expr in fusion.exprs:
        exprs.extend(_matmul_as_mma(expr) if _lowerable(expr) else [expr])
    return Fusion(inputs=fusion.inputs, outputs=fusion.outputs, exprs=tuple(exprs))


def _lowerable(expr: Expr) -> bool:
    if expr.op is not OpType.matmul:
        return False
    a, b = expr.inputs
    return a.ndim == 2 and b.ndim == 2


def _copy(domain: IterDomain) -> IterDomain:
    return IterDomain(domain.iter_type, domain.extent, domain.expanded, domain.rfactor)


def _matmul_as_mma(expr: Expr) -> list[Expr]:
    a, b = expr.inputs
    out = expr.output
    (m, k), (_, n) = a.logical, b.logical
    a_bcast = TensorView(a.dtype, (_copy(m), _copy(k), IterDomain.broadcast()))
    b_bcast = TensorView(b.dtype, (IterDomain.broadcast(), *map(_copy, b.logical)))
    product = TensorView(
        DataType.Float, (_copy(m), IterDomain.reduction(k.logical_extent), _copy(n))
    )
    return [
        Expr(OpType.broadcast, (a,), (a_bcast,), {"is_broadcast_dim": (False, False, True)}),
        Expr(OpType.broadcast, (b,), (b_bcast,), {"is_broadcast_dim": (True, False, False)}),
        Expr(OpType.mma, (a_bcast, b_bcast), (product,), {"reduction_axis": 1}),
        Expr(OpType.cast, (product,), (out,), {"dtype": out.dtype}),
    ]
