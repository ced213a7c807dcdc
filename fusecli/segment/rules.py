"""Rule profiles and the context schedulers decide in (and ``Verdict``, from verdict.py).

A rule profile fixes the order schedulers are tried in and which acceptance rules apply:
``nvfuser`` (today's order, the default) and ``nvfuser-2024`` (before the ExprEval scheduler:
matmul lowered to broadcast + mma + cast, and the matmul scheduler rejecting an MmaOp whose
operands do not come from a broadcast of a segment input or a LoadStoreOp). Only ``nvfuser``
runs MarkAliasesPrepare's segment_set insertion (mark_aliases.py): it took its present form in
July 2024 (nvFuser #2529, #2639), after the 2024 profile's May 2024. From December 2023 (#1503)
the pass only put a segment_set before a fusion output that another output aliases; that
narrower rule is not modelled (no corpus fusion has such a pair of outputs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusecli.segment.aliases import AliasAnalysis
from fusecli.segment.candidate import RuntimeInfo
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
    ),
    "nvfuser-2024": RuleProfile(
        name="nvfuser-2024",
        order=("no_op", "matmul", "reduction", "transpose", "pointwise", "inner_persistent",
               "outer_persistent", "inner_outer_persistent"),
        matmul_as_mma=True,
        common_matmul_check=False,
        description="nvFuser before May 2024: matmul lowered to broadcast + mma + cast, "
        "no expr_eval scheduler, the matmul scheduler's operand-dependency check",
    ),
}


@dataclass(frozen=True, slots=True)
class Device:
    """What run-time checks need to know of the GPU (an H200 unless told otherwise)."""

    name: str = "H200 (sm_90)"
    sm_count: int = 132
    register_file_bytes: int = 256 * 1024  # per SM
    shared_memory_bytes: int = 227 * 1024  # per block, opt-in maximum on sm_90

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

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(n for n in self.profile.order if n not in self.switches.disabled)
