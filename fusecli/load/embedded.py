"""Repros inside text: a GitHub issue saved as Markdown, a Thunder or nvFuser error message, a
pytest failure log, an issue page pasted as plain text with its code unfenced.

``extract_repro`` finds the script such a text carries, in this order:

1. fenced blocks (```` ```python ````, ```` ```py ````, plain ```` ``` ```` or ``~~~``) that
   define a fusion and execute it, or define it in one block and execute it in the next;
2. an unfenced script: from its imports (``import torch``, ``from nvfuser ...``) or from the line
   after "Here's a script to reproduce the error:" to the end of its last ``fd.execute(...)``
   statement (error text after it may well parse as Python: ``RuntimeError: boom`` does).

Log margins go first (pytest's ``E   `` and ``>`` columns, ``> `` quotes, ``[rank0]:``), each
replaced by as many spaces so that indentation inside the code survives; each piece of code is
then dedented. A fenced script that does not parse is cut line by line from its end until it
does, never above its execute call. The first complete repro is taken; the others are counted.

The script comes back at the text's own line numbers (every line it does not use is blank), so
a syntax error, a traceback or an ``fd.execute`` call names the line of the issue or log.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fusecli.errors import InputError

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".log", ".out")
NO_REPRO = (
    "no fusion repro found in this text: expected a fenced code block or script that defines a "
    "FusionDefinition and calls fd.execute"
)

_MARGIN = re.compile(r"^(?:\[rank\d+\]: ?|>[ >]*|E(?= {3}|$))")
_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)")
_PYTHON_INFOS = {"", "python", "py", "python3", "py3", "ipython", "ipython3"}
_SCRIPT_START = re.compile(
    r"^(?:import torch\b|(?:from|import) (?:nvfuser|nvfuser_direct|fusecli)\b)"
)
_IMPORT_OR_COMMENT = re.compile(r"^(?:(?:from|import)\s+[\w.]+|#)")
_REPRO_MARKER = re.compile(r"here'?s a script to reproduce the error", re.IGNORECASE)
_EXECUTE = re.compile(r"\bfd\.execute\(")
_INPUTS = re.compile(r"^\s*inputs\s*=", re.MULTILINE)
_STATEMENT_LINES = 200  # the most lines one fd.execute(...) or inputs = [...] statement spans


@dataclass(frozen=True, slots=True)
class Extracted:
    """The repro a text carries.

    ``source`` is the script at the text's own line numbers: every line of the text that is
    not part of the script is blank. ``description`` says where it was, e.g. "fenced block 2 of
    5 (lines 14-40)"; ``others`` counts further complete repros in the text, not taken.
    """

    source: str
    description: str
    others: int = 0

    @property
    def script(self) -> str:
        """The script alone, without the blank lines that keep the text's line numbers."""
        return self.source.strip("\n") + "\n"

    def notice(self, name: str) -> str:
        """The one line that tells the user which part of the file ``name`` ran."""
        notice = f"took the repro from {self.description} of {name}"
        if self.others:
            more = "repro" if self.others == 1 else "repros"
            notice += f" ({self.others} more {more} in it not taken)"
        return notice


@dataclass(frozen=True, slots=True)
class _Block:
    """A fenced block: ``first`` and ``last`` are the indices of its content lines."""

    number: int
    first: int
    last: int
    info: str

    @property
    def is_python(self) -> bool:
        return self.info.lower() in _PYTHON_INFOS


Ranges = tuple[tuple[int, int], ...]  # inclusive line indices of the text, in order


def extract_repro(text: str, path: str | Path) -> Extracted:
    """The repro embedded in ``text`` (read from ``path``); InputError naming ``path`` if none."""
    if "FusionDefinition" not in text and "nvfuser_fusion" not in text:
        raise InputError(NO_REPRO, str(path))  # the common case, a text with no repro, quickly
    lines = [_without_margin(line.rstrip("\r")) for line in text.split("\n")]
    found = _fenced(lines) or _unfenced(lines)
    if found is None:
        raise InputError(NO_REPRO, str(path))
    ranges, description, others = found
    return Extracted(_aligned_source(lines, ranges), description, others)


def _without_margin(line: str) -> str:
    margin = _MARGIN.match(line)
    return line if margin is None else " " * margin.end() + line[margin.end():]


# --- the two places a repro can be ----------------------------------------------------------------


def _fenced(lines: list[str]) -> tuple[Ranges, str, int] | None:
    """The first repro made of consecutive Python blocks: blocks of definitions or imports,
    then the block that executes."""
    blocks = _fenced_blocks(lines)
    repros: list[tuple[list[_Block], Ranges]] = []
    pending: list[tuple[_Block, Ranges]] = []
    for block in blocks:
        if not block.is_python:
            continue
        code = _block_code(lines, block)
        if code is None:
            pending = []
            continue
        if _executes(lines, code):
            group = [*pending, (block, code)]
            ranges = tuple(span for _, spans in group for span in spans)
            if _is_repro(lines, ranges):
                repros.append(([b for b, _ in group], ranges))
            pending = []
        elif _defines(lines, code) or _only_imports(lines, code):
            pending.append((block, code))
        else:
            pending = []
    if not repros:
        return None
    taken, ranges = repros[0]
    numbers = _numbers([block.number for block in taken])
    plural = "s" if len(taken) > 1 else ""
    description = (
        f"fenced block{plural} {numbers} of {len(blocks)} "
        f"(lines {ranges[0][0] + 1}-{ranges[-1][1] + 1})"
    )
    return ranges, description, len(repros) - 1


def _unfenced(lines: list[str]) -> tuple[Ranges, str, int] | None:
    """Scripts that start at their imports (or after "Here's a script to reproduce the
    error:") and end with their fd.execute statement."""
    starts = _script_starts(lines)
    repros: list[tuple[int, int]] = []
    for start in starts:
        if repros and start <= repros[-1][1]:
            continue
        end = _script_end(lines, start, _next_script(lines, start, starts), extend=False)
        if end is not None and _is_repro(lines, ((start, end),)):
            repros.append((start, end))
    if not repros:
        return None
    start, end = repros[0]
    return ((start, end),), f"unfenced script at lines {start + 1}-{end + 1}", len(repros) - 1


# --- fenced blocks ----------------------------------------------------------------------------


def _fenced_blocks(lines: list[str]) -> list[_Block]:
    """Every fenced block, numbered from 1; an unclosed fence runs to the end of the text."""
    blocks: list[_Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening["fence"]
        closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        last = index + 1
        while last < len(lines) and closing.match(lines[last]) is None:
            last += 1
        blocks.append(_Block(len(blocks) + 1, index + 1, last - 1, opening["info"]))
        index = last + 1
    return blocks


def _block_code(lines: list[str], block: _Block) -> Ranges | None:
    """The script in a block: all of it when it parses, else the longest part that does from
    its first line or from a script start, down to no less than its execute statement."""
    used = [i for i in range(block.first, block.last + 1) if lines[i].strip()]
    if not used:
        return None
    first, last = used[0], used[-1]
    if _parses(lines, ((first, last),)):
        return ((first, last),)
    for start in [first, *_script_starts(lines, first, last + 1)]:
        end = _script_end(lines, start, last + 1, extend=True)
        if end is not None:
            return ((start, end),)
    return None


def _numbers(numbers: Sequence[int]) -> str:
    if len(numbers) > 1 and list(numbers) == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))


# --- unfenced scripts -------------------------------------------------------------------------


def _script_starts(lines: list[str], begin: int = 0, stop: int | None = None) -> list[int]:
    """Where scripts may start: the imports above an ``import torch`` or nvfuser import, and the
    first code line after "Here's a script to reproduce the error:"."""
    stop = len(lines) if stop is None else stop
    starts = []
    for index in range(begin, stop):
        stripped = lines[index].strip()
        if _SCRIPT_START.match(stripped):
            start = index
            while start > begin and _IMPORT_OR_COMMENT.match(lines[start - 1].strip()):
                start -= 1
            starts.append(start)
        elif _REPRO_MARKER.search(stripped):
            after = index + 1
            while after < stop and (not lines[after].strip() or _FENCE.match(lines[after])):
                after += 1
            if after < stop:
                starts.append(after)
    return sorted(set(starts))


def _next_script(lines: list[str], start: int, starts: Sequence[int]) -> int:
    """Where the script from ``start`` must end: before the next script start that follows its
    first execute call (a second script), or at the end of the text."""
    first_call = next(
        (i for i in range(start, len(lines)) if _EXECUTE.search(lines[i])), len(lines)
    )
    return next((s for s in starts if s > first_call), len(lines))


def _script_end(lines: list[str], start: int, stop: int, *, extend: bool) -> int | None:
    """The last line of the script from ``start`` (before ``stop``): the end of its last
    ``fd.execute(...)`` statement (else of ``inputs = ...``) such that the lines from ``start``
    parse, reached through execute statements that all parse (prose between two calls ends the
    script). ``extend``: then the longest parsing part that goes further, cut from ``stop``."""
    calls = [i for i in range(start, stop) if _EXECUTE.search(lines[i])]
    calls = calls or [i for i in range(start, stop) if _INPUTS.match(lines[i])]
    end = None
    for call in calls:
        if end is not None and call <= end:
            continue  # inside the statement that ended at ``end``
        statement_end = next(
            (
                candidate
                for candidate in range(call, min(stop, call + _STATEMENT_LINES))
                if _parses(lines, ((start, candidate),))
            ),
            None,
        )
        if statement_end is None:
            break
        end = statement_end
    if end is not None and extend:
        for longer in range(stop - 1, end, -1):
            if lines[longer].strip() and _parses(lines, ((start, longer),)):
                return longer
    return end


# --- what makes code a repro ------------------------------------------------------------------


def _code(lines: list[str], ranges: Ranges) -> list[str]:
    """The code of ``ranges``, each dedented (a block may be indented in a list or a log)."""
    pieces = []
    for first, last in ranges:
        pieces.append(textwrap.dedent("\n".join(lines[first:last + 1])))
    return pieces


def _parses(lines: list[str], ranges: Ranges) -> bool:
    try:
        ast.parse("\n".join(_code(lines, ranges)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _defines(lines: list[str], ranges: Ranges) -> bool:
    code = "\n".join(_code(lines, ranges))
    return ("FusionDefinition" in code and "fd." in code) or "def nvfuser_fusion" in code


def _executes(lines: list[str], ranges: Ranges) -> bool:
    code = _code(lines, ranges)
    return any(_EXECUTE.search(piece) or _INPUTS.search(piece) for piece in code)


def _is_repro(lines: list[str], ranges: Ranges) -> bool:
    return _defines(lines, ranges) and _executes(lines, ranges)


def _only_imports(lines: list[str], ranges: Ranges) -> bool:
    try:
        tree = ast.parse("\n".join(_code(lines, ranges)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body)


def _aligned_source(lines: list[str], ranges: Ranges) -> str:
    """The code of ``ranges`` at its own line numbers: every other line is blank."""
    aligned = [""] * (ranges[-1][1] + 1)
    for (first, _), piece in zip(ranges, _code(lines, ranges), strict=True):
        for offset, line in enumerate(piece.split("\n")):
            aligned[first + offset] = line
    return "\n".join(aligned) + "\n"
