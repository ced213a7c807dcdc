"""nvFuser's own segmenter log, read into data: what real nvFuser decided, for fusecli's views.

``NVFUSER_DUMP=segmenter_logging,segmented_fusion`` makes nvFuser print, while a fusion first
executes: the ``***Runtime***`` hint lines, the whole fusion's verdicts when it tries it
un-segmented, one ``**Segmenter** Considering fusion:`` block per candidate with each
scheduler's ``***rejected*** because : reason`` or ``***Accepted*** as: name`` lines, and at the
end ``Segmented_Fusion Dump: -- fusion segments:`` whose ``group details`` list every final
segment: its scheduler, inputs, outputs and exprs, each expr followed by its id in parentheses.
The groups are printed in the order nvFuser runs them. A log without that dump is a fusion
nvFuser could not segment (or that failed before segmenting).

Op names are fd.ops names where nvFuser's printed form maps to one (``T5 = matmul(T2, T8)`` is
``matmul``, ``T3 = T1 * T2`` is ``mul``, ``reduction(..., op = add)`` is ``sum``); a form with no
such name keeps nvFuser's own (``Welford``): a name the table lacks is shown, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from fusecli.segment.reasons import Reason
from fusecli.segment.verdict import Verdict

# nvFuser's SchedulerType names, as its log prints them (fusecli models the first ten).
NVFUSER_SCHEDULERS = (
    "no_op", "expr_eval", "matmul", "reduction", "resize", "transpose", "pointwise",
    "inner_persistent", "outer_persistent", "inner_outer_persistent",
    "communication", "cutlass", "greedy",
)

HINT = "***Runtime***"
CONSIDERING = "**Segmenter** Considering fusion:"
UNSEGMENTED = "***Runtime***: Try to schedule fusion un-segmented:"
SEGMENTS_DUMP = "Segmented_Fusion Dump: -- fusion segments:"
REWRITTEN_DUMP = "Segmented_Fusion Dump: -- Re-written complete fusion:"
RECORDING_FOOTER = "\n# definition given to nvfuser_direct:"  # scripts/record-nvfuser-logs.py

_REJECTED = re.compile(r"^Scheduler _(\w+)_ \*\*\*rejected\*\*\* because : ?(.*)$")
_ACCEPTED = re.compile(r"^\*\*\*Accepted\*\*\* as: (\w+)$")
_ERROR = ("RuntimeError", "Error")  # what nvFuser raised, printed after the last verdict
_EXPR_ID = re.compile(r"^\((\d+)\)$")
_VALUE = re.compile(r"^([TVidbf]\d+)")  # a printed value's name: T5_g_float[...] -> T5
_CALL = re.compile(r"^([\w.]+) ?\(")

# nvFuser's printed op -> fd.ops name. Casts (__to_float, __bfloat2float) are handled apart.
_CALLS = {
    "Set": "set", "Set.Permute": "permute", "SegmenterSet": "segment_set",
    "reshape": "reshape", "matmul": "matmul", "linear": "linear", "broadcast": "broadcast",
    "expand": "expand", "squeeze": "squeeze", "pad": "pad", "slice": "slice", "cat": "cat",
    "where": "where", "iota": "iota", "rng_uniform": "uniform", "rng_normal": "normal",
    "indexSelect": "index_select", "takeAlongAxis": "take_along_axis",
    "embedding": "embedding_fwd", "silu": "silu", "pow": "pow", "remainder": "remainder",
    "fmod": "fmod", "expf": "exp", "exp": "exp", "logf": "log", "log": "log", "erff": "erf",
    "erf": "erf", "tanhf": "tanh", "tanh": "tanh", "rsqrtf": "rsqrt", "rsqrt": "rsqrt",
    "sqrtf": "sqrt", "sqrt": "sqrt", "fabs": "abs", "abs": "abs", "sinf": "sin", "cosf": "cos",
    "sigmoid": "sigmoid", "reciprocal": "reciprocal", "fmax": "maximum", "fmin": "minimum",
}
_REDUCTIONS = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}
_INFIX = {
    "+": "add", "-": "sub", "*": "mul", "/": "div", ">": "gt", "<": "lt", ">=": "ge",
    "<=": "le", "==": "eq", "!=": "ne", "&&": "logical_and", "||": "logical_or",
    "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<<": "bitwise_left_shift",
    ">>": "bitwise_right_shift", "%": "remainder",
}
_PREFIX = {"-": "neg", "!": "logical_not", "~": "bitwise_not"}


@dataclass(frozen=True, slots=True)
class PrintedExpr:
    """One expr as nvFuser printed it: its text, its first output's name, its fd.ops name."""

    text: str
    output: str  # T5, or i38 for a scalar expr
    op: str
    id: int | None = None  # the expr's id in ``group details``

    @property
    def is_tensor_op(self) -> bool:
        return self.output.startswith("T")


@dataclass(frozen=True, slots=True)
class NvfuserCandidate:
    """One candidate nvFuser's segmenter considered (``phase`` "whole": the fusion un-segmented,
    whose exprs the log does not repeat) and each scheduler's verdict as it printed them."""

    index: int
    phase: str  # "whole" or "candidate"
    exprs: tuple[PrintedExpr, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def accepted(self) -> str | None:
        return next((v.scheduler for v in self.verdicts if v.accepted), None)

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(e.op for e in self.exprs if e.is_tensor_op)


@dataclass(frozen=True, slots=True)
class NvfuserSegment:
    """One final segment of ``group details``; ``id`` is nvFuser's group id."""

    id: int
    scheduler: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    exprs: tuple[PrintedExpr, ...]

    @property
    def ops(self) -> tuple[str, ...]:
        """The segment's tensor ops (scalar exprs such as ``i38 = i1 * i0`` are no fd.ops)."""
        return tuple(e.op for e in self.exprs if e.is_tensor_op)


@dataclass(slots=True)
class NvfuserSegmentation:
    """What nvFuser's log says: hints, candidates with verdicts, and the final segments (none
    when the log has no segments dump: nvFuser failed, ``error`` says how when known)."""

    text: str  # the log as nvFuser printed it
    hints: list[str] = field(default_factory=list)
    candidates: list[NvfuserCandidate] = field(default_factory=list)
    segments: list[NvfuserSegment] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)  # (group id, group id, T5)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.segments)


def parse_log(text: str, error: str | None = None) -> NvfuserSegmentation:
    """Read nvFuser's segmenter log (``error``: what nvFuser raised, if it did)."""
    text = text.split(RECORDING_FOOTER, 1)[0]
    parsed = NvfuserSegmentation(text=text, error=error)
    lines = text.splitlines()
    parsed.hints = [line.rstrip() for line in lines if line.startswith(HINT)]
    log_part = text.split(REWRITTEN_DUMP, 1)[0].split(SEGMENTS_DUMP, 1)[0]
    parsed.candidates = _candidates(log_part.splitlines())
    if SEGMENTS_DUMP in text:
        dump = text.split(SEGMENTS_DUMP, 1)[1]
        parsed.segments = _segments(dump)
        parsed.edges = _edges(dump, parsed.segments)
    elif parsed.error is None:
        parsed.error = "nvFuser's log has no segmented fusion (it did not finish segmenting)"
    return parsed


# -- candidates and verdicts -------------------------------------------------------------------


def _candidates(lines: list[str]) -> list[NvfuserCandidate]:
    found: list[NvfuserCandidate] = []
    position = 0
    while position < len(lines):
        line = lines[position]
        if line.startswith(UNSEGMENTED):
            verdicts, position = _verdicts(lines, position + 1)
            found.append(NvfuserCandidate(len(found), "whole", (), verdicts))
        elif line.startswith(CONSIDERING):
            body, position = _until_blank(lines, position + 1)
            verdicts, position = _verdicts(lines, position)
            found.append(NvfuserCandidate(len(found), "candidate", split_exprs(body), verdicts))
        else:
            position += 1
    return found


def _until_blank(lines: list[str], position: int) -> tuple[list[str], int]:
    body = []
    while position < len(lines) and lines[position].strip():
        body.append(lines[position])
        position += 1
    return body, position


def _verdicts(lines: list[str], position: int) -> tuple[tuple[Verdict, ...], int]:
    """Verdict lines up to the next block; a rejection's reason may run over several lines
    (the matmul scheduler quotes a multi-line expr)."""
    said: list[tuple[str, bool, list[str]]] = []  # (scheduler, accepted, reason lines)
    while position < len(lines):
        line = lines[position]
        if line.startswith((CONSIDERING, HINT, "Segmented_Fusion")):
            break
        if rejected := _REJECTED.match(line):
            said.append((rejected.group(1), False, [rejected.group(2).strip()]))
        elif accepted := _ACCEPTED.match(line):
            said.append((accepted.group(1), True, []))
        elif line.strip() and said and not said[-1][1] and not line.startswith(_ERROR):
            said[-1][2].append(line.strip())  # a reason printed over several lines
        elif line.strip() and said:
            break  # text after an acceptance ends the block
        position += 1
    verdicts = tuple(
        Verdict.accept(name) if ok else _rejection(name, " ".join(reason))
        for name, ok, reason in said
    )
    return verdicts, position


def _rejection(scheduler: str, text: str) -> Verdict:
    """nvFuser's words, with the code of the fusecli reason they are (if any)."""
    reason = Reason.of_text(text)
    return replace(Verdict.reject(scheduler, text), code=reason.code if reason else "")


# -- exprs ---------------------------------------------------------------------------------------


def split_exprs(lines: list[str]) -> tuple[PrintedExpr, ...]:
    """Printed exprs: each starts on an unindented line (its output), continues on indented
    ones; in ``group details`` each is followed by ``(id)``."""
    exprs: list[PrintedExpr] = []
    current: list[str] = []

    def close(expr_id: int | None) -> None:
        if current:
            text = "\n".join(current)
            exprs.append(PrintedExpr(text, _output_name(text), printed_op(text), expr_id))
            current.clear()

    for line in lines:
        if match := _EXPR_ID.match(line.strip()):
            close(int(match.group(1)))
        elif line[:1] in (" ", ",") or not current or current[-1].rstrip().endswith(","):
            current.append(line)  # indented, or the next output of a Welford's three
        else:
            close(None)
            current.append(line)
    close(None)
    return tuple(exprs)


def _output_name(text: str) -> str:
    match = _VALUE.match(text)
    return match.group(1) if match else text.split("=", 1)[0].strip()


def printed_op(text: str) -> str:
    """The fd.ops name of one printed expr (``T5 = matmul(T2, T8)`` -> ``matmul``)."""
    if "=" not in text:
        return "?"
    definition = text.split("=", 1)[1].strip()
    rest = definition.splitlines()[1:]
    operator = rest[0].split()[0] if rest and rest[0].split() else ""
    if operator in _INFIX:
        return _INFIX[operator]
    call = _CALL.match(definition)
    if call is None:
        if definition[:1] in _PREFIX:
            return _PREFIX[definition[:1]]
        infix = definition.split()
        return _INFIX.get(infix[1], "?") if len(infix) > 2 else "set"
    name = call.group(1)
    if name == "Welford":  # T1(Avg), T2(Var), T3(Count) = Welford ( T0 ... )
        return "var_mean"
    if name.startswith("__"):  # __to_float, __bfloat2float: a cast
        return "cast"
    if name == "reduction":
        op = re.search(r"op = (\w+)", definition)
        return _REDUCTIONS.get(op.group(1), op.group(1)) if op else "reduction"
    return _CALLS.get(name, name)


# -- final segments ------------------------------------------------------------------------------


def _segments(dump: str) -> list[NvfuserSegment]:
    # nvFuser lists the groups, then their details; fusecli's own dump (its --format nvfuser,
    # and the test stand-in) has the detailed groups only
    marker = "group details:" if "group details:" in dump else "groups:"
    if marker not in dump:
        return []
    details = dump.split(marker, 1)[1].split("} //Segmented_Fusion", 1)[0]
    if marker == "groups:":
        details = details.split("\nedges:", 1)[0]
    segments = []
    for block in details.split("g{(")[1:]:
        scheduler, body = block.split(")", 1)
        group_id = re.search(r"group id: (\d+)", body)
        gap = "\n\n\n" if "\n\n\n" in body else "\n\n"
        header, _, expr_part = body.partition(gap)
        inputs = _listed(header, "inputs:", "outputs:")
        outputs = _listed(header, "outputs:", None)
        expr_lines = [line for line in expr_part.splitlines() if line.strip() != "}"]
        segments.append(NvfuserSegment(
            int(group_id.group(1)) if group_id else len(segments), scheduler,
            inputs, outputs, split_exprs([line for line in expr_lines if line.strip()]),
        ))
    return segments


def _listed(header: str, start: str, end: str | None) -> tuple[str, ...]:
    if start not in header:
        return ()
    section = header.split(start, 1)[1]
    if end is not None:
        section = section.split(end, 1)[0]
    return tuple(
        match.group(1) for line in section.splitlines()
        if (match := _VALUE.match(line.strip()))
    )


_EDGE = re.compile(r"^  e\{ [a-z_]+\{([\d, ]*)\} -> [a-z_]+\{([\d, ]*)\}\(([TVidbf]\d+)")


def _edges(dump: str, segments: list[NvfuserSegment]) -> list[tuple[int, int, str]]:
    """Edges between final segments; ``groups:`` names a group by its expr ids."""
    if "edges:" not in dump:
        return []
    by_ids = {frozenset(e.id for e in s.exprs): s.id for s in segments}
    found = []
    section = dump.split("edges:", 1)[1].split("group details:", 1)[0]
    for line in section.splitlines():
        if match := _EDGE.match(line):
            source, target = (
                frozenset(int(i) for i in group.replace(" ", "").split(","))
                for group in match.groups()[:2]
            )
            if source in by_ids and target in by_ids:
                found.append((by_ids[source], by_ids[target], match.group(3)))
    return found
