"""Rule profiles and the context schedulers decide in (and ``Verdict``, from verdict.py).

A rule profile fixes the order schedulers are tried in and which acceptance rules apply:
``nvfuser`` (today's order, the default) and ``nvfuser-2024`` (before the ExprEval scheduler:
matmul lowered to broadcast + mma + cast, and the matmul scheduler rejecting an MmaOp whose
operands do not come from a broadcast of a segment input or a LoadStoreOp). Only ``nvfuser``
runs MarkAliasesPrepare's segment_set insertion (mark_aliases.py): it took its present form in
July 2024 (nvFuser #2529, #2639), after the 2024 profile's May 2024. From December 2023 (#1503)
the pass only put a segment_set before a fusion output that another output aliases; that
narrower rule is not modelled (no corpus fusion has such a pair of outputs).

``nvfuser-2023`` models nvFuser of December 2023 (commit 971aa339), where a slice or pad had to
read a segment input and the segmenter could not always give it one: issues #1541 and #1872.
Its flags name the PR that ended each behaviour; docs/rule-profiles.md has the whole account.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusecli.ir.nodes import Fusion
from fusecli.ir.optype import OpType
from fusecli.segment.aliases import AliasAnalysis, find_aliases
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.lower_precision import half_precision_edges
from fusecli.segment.schedulers import REGISTRY
from fusecli.segment.verdict import Verdict

# Every scheduler by name, in the registry's order; profiles and --disable-scheduler use these.
SCHEDULER_NAMES = tuple(REGISTRY)

__all__ = ["SCHEDULER_NAMES", "PROFILES", "Device", "RuleProfile", "ScheduleContext",
           "Switches", "Verdict"]


@dataclass(frozen=True, slots=True)
class RuleProfile:
    name: str
    order: tuple[str, ...]
    matmul_as_mma: bool  # fd.ops.matmul lowered to broadcast + mma + cast (2024)
    common_matmul_check: bool  # checkCanSchedule rejects matmul ops outside matmul/expr_eval
    description: str
    mark_aliases_prepare: bool = False  # segment_set hints before outputs' meta ops (July 2024)
    # MergeUpAndDownCast, the pre-merge of up-cast ... down-cast chains (#3699, January 2025)
    merge_up_and_down_casts: bool = True
    # Late 2023 (nvfuser-2023); each comment names the nvFuser PR that ended the behaviour.
    # rejectScheduleFusionInputRequirement says "First input of SliceOp must be fusion input."
    # (the op as nvFuser names it; a cat checks the PadOps it is made of), not "T3, input of
    # ..." (#5174, October 2025)
    first_input_wording: bool = False
    # resolveInputsInGroup pulls forwarded unary ops back into every segment reading their
    # output without asking a scheduler (#1825, February 2024: only where the merge schedules)
    forward_unconditionally: bool = False
    # castInputOutputToLowerPrecision on by default (#1889, March 2024): lower_precision.py
    io_to_lower_precision: bool = False
    # "Matmul scheduler supports fusions only with a single MMA op, got: <n>" (#1507, Jan 2024)
    mma_count_wording_2023: bool = False
    # From #1478 (December 2023) to #3885 (February 2025) the no_op scheduler accepted a
    # segment whose outputs are all pointer arithmetic on its inputs (today expr_eval does);
    # the ops the alias analysis of the profile's date knew, or None for no such rule
    no_op_aliases: frozenset[OpType] | None = None
    # forwardInputs treats a FullOp's output as a fusion input, so each consumer segment gets
    # its own full (#4269, April 2025)
    forward_full: bool = True
    # MoveGatherPass: a take_along_axis moves ahead of the unary op making its lookup tensor
    # (#4399, June 2025; move_gather.py)
    move_gather: bool = True
    # RemoveEmptyPass with the inputs' sizes: empty cat inputs dropped, reductions and pads of
    # empty tensors and empty outputs made fills (#543, July 2023; remove_empty.py). Kept off
    # in the older profiles, whose recorded logs predate fusecli's model of it.
    remove_empty: bool = False
    # ConsecutiveCastPass with its meta-op swap (down-casts lifted above set, squeeze and
    # reshape, #3644, January 2025; consecutive_cast.py). Kept off in the older profiles,
    # whose recorded logs predate fusecli's model of it.
    consecutive_cast: bool = False
    # SegmentInplaceUpdatePass: an in-place update near a broadcast is cut off behind
    # segment_set + set (#2999, October 2024, for issue #2664; inplace_update.py)
    segment_inplace_update: bool = False
    # MarkAliasesPrepare's alias layouts and AllocationDomainPass's output layouts (#1755,
    # February 2024; allocation.py). Kept off in the older profiles, whose recorded logs
    # predate fusecli's model of it.
    allocation_order_inference: bool = False
    # TranslateNoReductionMatmulToMulSqueeze: a matmul over a broadcast K becomes broadcast,
    # mul and squeeze (#3810, February 2025; no_reduction_matmul.py)
    no_reduction_matmul: bool = False
    # RemoveBcastSqueeze: a broadcast and a squeeze that cancel are removed (#2291, May 2024;
    # per-axis since #3034, October 2024; bcast_squeeze.py)
    remove_bcast_squeeze: bool = False
    # SegmentCandidateFinder::privatizeOps: each use of an up-cast but the first gets its own
    # cast, reverted where copies share a final segment (#3776, February 2025; squeezes of
    # two uses since #4583; privatize.py)
    privatize_ops: bool = False
    # getPersistentBufferStorageParams: inner_outer's buffers are one row of the inner
    # reduction, in shared memory first, the outer partials in registers
    # (normalization_inner_outer_utils.cpp; inner_outer_storage.py); before, one register file
    # per row
    inner_outer_storage: bool = False
    # MergeCatWithInputPads: a cat's group (with its input pads) merges first and moves to the
    # end of the group list (merge_order.py)
    merge_cat_with_input_pads: bool = False
    # persistentBufferSizeBit's scoped persistence: a buffer counts only up to where it is read
    # after its reduction, the size is the most live at once, and a buffer made after a
    # reduction still projects through a broadcast back (utils.cpp; buffer_sizes.py); before,
    # the sum of all buffers
    scoped_persistence: bool = False

    def __post_init__(self) -> None:
        unknown = [name for name in self.order if name not in REGISTRY]
        if unknown:
            raise ValueError(f"profile {self.name} orders unregistered schedulers {unknown}")


PROFILES: dict[str, RuleProfile] = {
    "nvfuser": RuleProfile(
        name="nvfuser",
        order=("expr_eval", "no_op", "matmul", "reduction", "resize", "transpose", "pointwise",
               "inner_persistent", "outer_persistent", "inner_outer_persistent"),
        matmul_as_mma=False,
        common_matmul_check=True,
        description="nvFuser today: MatmulOp/LinearOp run through ATen (expr_eval)",
        mark_aliases_prepare=True,
        remove_empty=True,
        consecutive_cast=True,
        segment_inplace_update=True,
        allocation_order_inference=True,
        no_reduction_matmul=True,
        remove_bcast_squeeze=True,
        privatize_ops=True,
        inner_outer_storage=True,
        merge_cat_with_input_pads=True,
        scoped_persistence=True,
    ),
    "nvfuser-2024": RuleProfile(
        name="nvfuser-2024",
        order=("no_op", "matmul", "reduction", "transpose", "pointwise", "inner_persistent",
               "outer_persistent", "inner_outer_persistent"),
        matmul_as_mma=True,
        common_matmul_check=False,
        description="nvFuser before May 2024: matmul lowered to broadcast + mma + cast, "
        "no expr_eval scheduler, the matmul scheduler's operand-dependency check",
        # alias_analysis.cpp of May 2024 also knew BroadcastOp and SqueezeOp: the seed issue's
        # log (#2127) accepts permute + broadcast as no_op
        no_op_aliases=frozenset({OpType.reshape, OpType.set, OpType.segment_set,
                                 OpType.permute, OpType.slice, OpType.broadcast,
                                 OpType.squeeze}),
        forward_full=False,
        move_gather=False,
    ),
    "nvfuser-2023": RuleProfile(
        name="nvfuser-2023",
        # all_heuristics_in_priority_order of December 2023: matmul last (second from #1507)
        order=("no_op", "reduction", "transpose", "pointwise", "inner_persistent",
               "outer_persistent", "inner_outer_persistent", "matmul"),
        # the frontend had no fd.ops.matmul yet; the nearest is the 2024 lowering to mma
        matmul_as_mma=True,
        common_matmul_check=False,
        description="nvFuser of December 2023: slices and pads must read a segment input, "
        "forwarded unary ops rejoin their consumers unasked, fp32 edges cross as half",
        merge_up_and_down_casts=False,
        first_input_wording=True,
        forward_unconditionally=True,
        io_to_lower_precision=True,
        mma_count_wording_2023=True,
        # alias_analysis.cpp at 971aa339: ViewOp, LoadStoreOp (set, permute), SliceOp
        no_op_aliases=frozenset({OpType.reshape, OpType.set, OpType.segment_set,
                                 OpType.permute, OpType.slice}),
        forward_full=False,
        move_gather=False,
    ),
}


@dataclass(frozen=True, slots=True)
class Device:
    """What run-time checks need to know of the GPU (an H200 unless told otherwise)."""

    name: str = "H200 (sm_90)"
    sm_count: int = 132
    register_file_bytes: int = 256 * 1024  # per SM
    shared_memory_bytes: int = 227 * 1024  # per block, opt-in maximum on sm_90

    max_cluster_size: int = 16  # non-portable thread block clusters on sm_90
    # what the inner persistent scheduler may use of one SM's registers: half the file
    persistent_register_bytes: int = 128 * 1024

    @property
    def max_persistent_bytes(self) -> int:
        return self.register_file_bytes


@dataclass(frozen=True, slots=True)
class Switches:
    """nvFuser's relevant switches, and fusecli's --disable-scheduler."""

    fuse_matmul: bool = False  # NVFUSER_ENABLE=fuse_matmul
    matmul_expr_eval: bool = True  # NVFUSER_DISABLE=matmul_expr_eval turns it off
    disabled: frozenset[str] = field(default_factory=frozenset)


@dataclass(slots=True)
class ScheduleContext:
    runtime: RuntimeInfo
    profile: RuleProfile
    switches: Switches = field(default_factory=Switches)
    device: Device = field(default_factory=Device)
    aliases: AliasAnalysis | None = None  # of the fusion segmented; None: computed when asked
    _no_op_aliases: AliasAnalysis | None = None  # the profile's older analysis, when asked
    # io_to_lower_precision: the tensors ForceHalfAnnotation marks, computed when first asked
    _half_edges: frozenset[int] | None = None

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(n for n in self.profile.order if n not in self.switches.disabled)

    def no_op_aliases(self, fusion: Fusion) -> AliasAnalysis | None:
        """The alias analysis the profile's no_op scheduler reads, None where it reads none."""
        ops = self.profile.no_op_aliases
        if ops is None:
            return None
        if self._no_op_aliases is None:
            self._no_op_aliases = find_aliases(fusion, self.runtime, ops)
        return self._no_op_aliases

    def half_edges(self, fusion: Fusion) -> frozenset[int]:
        """Tensors of ``fusion`` that cross a segment edge as half (io_to_lower_precision);
        a context serves one fusion, so the answer is kept."""
        if not self.profile.io_to_lower_precision:
            return frozenset()
        if self._half_edges is None:
            self._half_edges = half_precision_edges(fusion)
        return self._half_edges
