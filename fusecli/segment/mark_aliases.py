"""MarkAliasesPrepare: segment_set hints that cut meta ops off into segments of their own.

nvFuser's pre-segmentation pass ``MarkAliasesPreparePass``
(csrc/preseg_passes/mark_aliases_prepare.cpp, in this form since PRs #2529 and #2639, July
2024; run by csrc/preseg_passes/pre_segmenter.cpp after the other rewrites) emulates the output
end of the "bookend" optimization. From each fusion output it walks up through meta ops
(aliases, ``aliases.py``) until it reaches a tensor that is no alias, or a meta op some
non-alias depends on (a meta op feeding real computation counts as real computation, so that
``N -> M1 -> N`` with a side branch ``M1 -> M2`` stays one kernel). Where it stops, the use of
that tensor by the meta op above it gets a ``segment_set`` in between:

    T5 = matmul(T2, T4)                      T5 = matmul(T2, T4)
    T6 = reshape(T5)            becomes      T10 = segment_set(T5)
    T7 = permute(T6)  (output)               T6 = reshape(T10)
                                             T7 = permute(T6)

Uses are grouped by the tensor used, one ``segment_set`` per tensor for all its meta users, and
none at all when it would be useless: after a fusion input, or after a tensor already defined
by a ``segment_set``, used only by these meta ops; or when every such user already is a
``segment_set``. When the tensor is a fusion output, the copy becomes that output.

With a ``segment_set`` in the fusion the segmenter has hints: it skips the whole-fusion try
("Has segment hints, skip un-segmented scheduling.") and no segment may span the copy, so the
meta ops after it form an expr_eval segment of their own. The pass also gives every alias its
alias-enabling allocation domain; fusecli does not model allocation domains of intermediates.
"""

from __future__ import annotations

from dataclasses import replace

from fusecli.ir.builder import copy_domain
from fusecli.ir.nodes import Expr, Fusion, FusionOutput, TensorView, Val
from fusecli.ir.optype import OpType
from fusecli.segment.aliases import AliasAnalysis, find_aliases
from fusecli.segment.candidate import RuntimeInfo

Use = tuple[TensorView, Expr]  # (the tensor used, the meta op using it)


def mark_aliases_prepare(fusion: Fusion, runtime: RuntimeInfo) -> Fusion:
    """``fusion`` with nvFuser's segment_set hints after the last non-meta tensor before each
    output's meta ops; ``fusion`` itself when none is needed."""
    analysis = find_aliases(fusion, runtime)
    depended = _exprs_depended_by_non_aliases(fusion, analysis)
    uses: dict[tuple[int, int], Use] = {}
    for output in fusion.outputs:
        if isinstance(output.value, TensorView):
            use = _use_to_segment(fusion, output.value, analysis, depended)
            if use is not None:
                uses.setdefault((use[0].uid, use[1].uid), use)
    by_tensor: dict[int, list[Use]] = {}
    for use in uses.values():
        by_tensor.setdefault(use[0].uid, []).append(use)
    copies = [copy for group in by_tensor.values() if (copy := _segment_set(fusion, group))]
    if not copies:
        return fusion
    return _rewrite(fusion, copies)


def _use_to_segment(
    fusion: Fusion, out: TensorView, analysis: AliasAnalysis, depended: set[int]
) -> Use | None:
    """findUseToSegment: walk up from ``out`` while it is an alias made by a meta op no
    non-alias depends on; the tensor reached and the meta op using it, None if ``out``."""
    user: Expr | None = None
    while True:
        definition = fusion.definition(out)
        if analysis.root(out) is None or definition.uid in depended:
            return None if user is None else (out, user)
        out, user = definition.tensor_inputs()[0], definition


def _exprs_depended_by_non_aliases(fusion: Fusion, analysis: AliasAnalysis) -> set[int]:
    """Uids of the exprs every non-alias tensor (transitively) depends on. nvFuser's tensors
    are ``Fusion::allTvs``: those the outputs use and the inputs, so dead code is none of
    them (population member fuzz_469102188: an unused ``bitwise_or`` of an expanded output
    kept the segment_set out, and the expand in one transpose kernel with everything else,
    where nvFuser runs a pointwise, an expr_eval and a transpose segment)."""
    live = fusion.upstream(fusion.output_values)
    used = [*fusion.inputs, *(v for e in fusion.exprs if e.uid in live for v in e.outputs)]
    return fusion.upstream([value for value in used
                            if isinstance(value, TensorView) and analysis.root(value) is None])


def _segment_set(fusion: Fusion, group: list[Use]) -> tuple[Expr, list[Expr]] | None:
    """insertSegmentSetAfter: the segment_set for ``group``'s tensor and the users it feeds,
    or None where nvFuser inserts none."""
    used = group[0][0]
    users = [user for _, user in group]
    # A size read off the tensor is no use in nvFuser: it reads the extent, not the data.
    all_uses = {expr.uid for expr in fusion.uses(used) if expr.op is not OpType.size}
    if len(users) == len(all_uses):
        if used in fusion.inputs:
            return None  # a segment_set between a fusion input and its users is useless
        definition = fusion.definition(used)
        if definition is not None and definition.op is OpType.segment_set:
            return None
    if all(user.op is OpType.segment_set for user in users):
        return None
    copy = TensorView(dtype=used.dtype, domain=copy_domain(used.logical))
    return Expr(OpType.segment_set, (used,), (copy,)), users


def _rewrite(fusion: Fusion, copies: list[tuple[Expr, list[Expr]]]) -> Fusion:
    """Each segment_set placed right before the first user it feeds; its users read the copy;
    a fusion output that was copied is the copy now."""
    redirect: dict[int, dict[int, Val]] = {}  # user uid -> {used uid: copy}
    first_user: dict[int, list[Expr]] = {}  # expr uid -> segment_sets to place before it
    position = {expr.uid: index for index, expr in enumerate(fusion.exprs)}
    for segment_set, users in copies:
        used, copy = segment_set.inputs[0], segment_set.output
        for user in users:
            redirect.setdefault(user.uid, {})[used.uid] = copy
        earliest = min(users, key=lambda user: position[user.uid])
        first_user.setdefault(earliest.uid, []).append(segment_set)
    exprs: list[Expr] = []
    for expr in fusion.exprs:
        exprs.extend(first_user.get(expr.uid, ()))
        swaps = redirect.get(expr.uid)
        if swaps:
            inputs = tuple(swaps.get(value.uid, value) for value in expr.inputs)
            expr = Expr(expr.op, inputs, expr.outputs, expr.attrs)
        exprs.append(expr)
    copied = {segment_set.inputs[0].uid: segment_set.output for segment_set, _ in copies}
    outputs = tuple(
        _copied_output(fusion, output, copied[output.value.uid])
        if output.value.uid in copied else output
        for output in fusion.outputs
    )
    return Fusion(inputs=fusion.inputs, outputs=outputs, exprs=tuple(exprs))


def _copied_output(fusion: Fusion, output: FusionOutput, copy: TensorView) -> FusionOutput:
    """The output, now the copy: nvFuser's copy inherits the allocation domain of what it
    copies (AliasTest.Bookend_SegmentSetPreservesAllocation), so a stride_order stays."""
    definition = fusion.definition(output.value)
    stride_order = output.stride_order
    if not stride_order and definition is not None and definition.op is OpType.stride_order:
        stride_order = tuple(definition.attr("stride_order"))
    return replace(output, value=copy, stride_order=stride_order)
