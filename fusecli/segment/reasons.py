"""Why a scheduler rejects a segment, as data: a code, nvFuser's words, and the evidence.

Every rejection a fusecli scheduler gives is a member of ``Reason``. The member's name,
lower-cased, is the reason's code (``--json``'s decision log carries it); its value is the
text nvFuser prints under ``segmenter_logging``, with ``{fields}`` that the evidence fills in
(the offending tensor, expr, operand or size, as fusecli prints them). The advice of the
diagnosis panel (``diagnosis.py``) is keyed by the code and built from the evidence, never
from the text.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from enum import Enum


class Reason(Enum):
    # checkCanSchedule (csrc/scheduler/registry.cpp), before every scheduler but expr_eval
    UNSUPPORTED_OPS = "Has unsupported ops"
    NON_EXACT_GATHER = "Non-exact gather ops"
    MATMUL_OPS = "Matmul ops are not supported."
    NOT_CONNECTED = "Connected fusion graph check failed!"
    SELF_MAPPING = "Iter domain graph check failed!"
    RESIZE_AND_INDEX = "has resize-based ops and index ops"
    INCOMPATIBLE_RESHAPES = "Fusion has incompatible reshapes."
    CYCLIC_RESHAPES = "Fusion has cyclic reshapes."
    # reductionInterferingView, as the reduction and the persistent schedulers word it
    REDUCTION_VIEW = "View may interfere with reduction scheduling."
    NORMALIZATION_VIEW = "View may interfere with normalization scheduling."
    # rejectScheduleForMemoryPromotion: today's words, and those before #5174 (October 2025)
    MUST_BE_FUSION_INPUT = "{tensor}, input of {op} must be fusion input."
    FIRST_INPUT_MUST_BE_FUSION_INPUT = "First input of {op_string} must be fusion input."
    # expr_eval
    NOT_SINGLE_EXPR = "Fusion must contain only a single expression."
    NOT_ATEN_EXPR = (
        "Fusion must contain only a single expression of type MatmulOp/LinearOp/SdpaFwdOp/SdpaBwdOp"
    )
    MATMUL_EXPR_EVAL_DISABLED = (
        "Matmul ATen evaluation was disabled by NVFUSER_DISABLE=matmul_expr_eval"
    )
    # no_op
    NONZERO_REDUCTION = "reduction of non-zero elements is not supported"
    CONCRETE_OUTPUT = "output has a concrete dimension"
    # matmul
    NO_MATMUL = "No matmul patterns were found"
    MATMUL_FUSION_DISABLED = (
        "MatmulOp and LinearOp fusion is disabled by default. "
        "Enable it using NVFUSER_ENABLE=fuse_matmul"
    )
    MULTIPLE_MATMULS = "Only a single matmul pattern can currently be fused"
    MATRIX_VECTOR = "Cannot fuse matrix-vector products"
    OPERAND_DTYPE = "Unsupported operand type. Operands must be fp16 or bf16"
    NON_TRIVIAL_PROLOGUE = (
        "Operand {operand} must have only trivial prologue ops (set, broadcast, squeeze) "
        "but found {expr}"
    )
    MMA_COUNT_2023 = "Matmul scheduler supports fusions only with a single MMA op, got: {count}"
    MMA_COUNT = (
        "Matmul scheduler supports fusions only with a single mma op"
        "or supports a mul-sum pair which can be replaced with a mma op"
    )
    MMA_DEPENDENCY = "MmaOp input has unsupported dependency"
    # reduction and the persistent schedulers
    NO_REDUCTION = "No reduction op to schedule"
    REFERENCE_NOT_COVERING = "Output contains ID that's not scheduled by reference tv."
    NO_INPUT = "Scheduling not supported with no input"
    UNMAPPED_REDUCTIONS = "Un-mapped multi-reduction: {first} and {second}"
    NEEDS_PERSISTENCE = "need persistent buffers that reduction scheduler doesn't handle"
    POST_REDUCTION = "has unsupported post reduction fusion"
    NEEDS_REDUCTION = "needs a reduction op"
    REDUCTION_TYPE = "scheduler_type doesn't match with reduction type `{found}`."
    COMBINED_REDUCTION_TYPE = "schedulerType() doesn't match with reduction type `{found}`."
    COMBINED_LAYOUT = (
        "to use combined reduction, inner reduction tensor should be [I,I,...,R,R] and outer "
        "reduction tensor should be [R,R,...,I,I]"
    )
    COMBINED_NO_SHARED_INPUT = (
        "to use combined reduction, inner reduction and outer reduction should have shared "
        "input."
    )
    COMBINED_SHARED_CONSUMER = (
        "to use combined reduction, inner reduction and outer reduction should not have shared "
        "consumer, their consumers should not have shared non-outer-reduction producer."
    )
    NOT_ENOUGH_BLOCKS = "not enough blocks"
    REGISTERS_ONLY_TOO_LARGE = (
        "not enough registers for persistence and shared memory persistence is not "
        "supported yet."
    )
    OVER_HALF_GPU = "requires over half GPU persistence."
    NOT_ENOUGH_VECTORIZED = "not enough vectorized"
    NON_WELFORD_GRID = "non-Welford not enabled yet"
    NO_PERSISTENT_BUFFER = "no persistent buffer identified"
    PERSISTENT_TOO_LARGE = "not enough registers or shared memory for persistence."
    OUTER_PERSISTENT_TOO_LARGE = "not enough registers for persistence"
    # resize
    NO_RESIZE = "No resize op to schedule"
    RESIZE_WITH_REDUCTION = "No support for reduction ops"
    NON_UNIQUE_BROADCAST = "Broadcasting dimension might be broadcasting to multiple sizes."
    RESIZE_OF_BROADCAST = "Resize of a broadcast ID is not allowed."
    NO_RESIZE_REFERENCE = "No reference found"
    RESIZE_BETWEEN = (
        "Resize between reference and output not allowed. Reference: {reference}. "
        "Output: {output}. Resize: {resize}"
    )
    TRANSPOSE_LIKE = "Transpose-like patterns not supported."
    # transpose and pointwise
    REDUCTION_IN_ELEMENTWISE = "no support for reduction ops"
    MMA_IN_TRANSPOSE = "no support for mma ops."
    NO_TRANSPOSE = "cannot find two mismatching inner most dimensions"
    SMALL_TRANSPOSE = "Transpose scheduler does not perform well on small problem sizes."
    NO_REFERENCE = "cannot find reference tensor"
    LOOKUP_ON_INNER_DIM = (
        "{op_string} on inner dim is not supported by transpose scheduler yet.In transpose "
        "scheduler, we want to leave the select dim alone, instead of creating a tile for it."
    )

    @property
    def code(self) -> str:
        return self.name.lower()

    @property
    def fields(self) -> tuple[str, ...]:
        """The evidence the text names, in order."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.value) if f)

    def text(self, evidence: dict[str, str]) -> str:
        return self.value.format(**evidence)

    @staticmethod
    def of_text(text: str) -> Reason | None:
        """The reason whose words ``text`` is (nvFuser's log names tensors its own way, so a
        field matches any text), or None for a reason fusecli does not model."""
        for reason, pattern in _PATTERNS:
            if pattern.fullmatch(text.strip()):
                return reason
        return None


def _pattern(template: str) -> re.Pattern[str]:
    parts = []
    for literal, field_name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field_name:
            parts.append(r".+?")
    return re.compile("".join(parts), re.DOTALL)


_PATTERNS = [(reason, _pattern(reason.value)) for reason in Reason]


@dataclass(frozen=True, slots=True)
class Rejection:
    """A reason and its evidence: ``(name, printed value)`` pairs, the text's fields first,
    then what the advice needs besides (the expr an operand comes through, a size)."""

    reason: Reason
    evidence: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(reason: Reason, **evidence: object) -> Rejection:
        missing = [f for f in reason.fields if f not in evidence]
        if missing:
            raise ValueError(f"{reason.name} needs evidence {missing}")
        return Rejection(reason, tuple((k, str(v)) for k, v in evidence.items()))

    @property
    def text(self) -> str:
        return self.reason.text(dict(self.evidence))
