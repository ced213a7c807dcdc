"""What identifies a failure across minimization steps and across a corpus: its signature.

nvFuser's asserts (``NVF_ERROR``, ``NVF_CHECK``) raise a ``RuntimeError`` whose text is::

     INTERNAL ASSERT FAILED at /workspace/Fuser/csrc/fusion_segmenter.cpp:4015, please report a
    bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues.
    Expected scheduler_type != SchedulerType::None . Can not find a scheduler to schedule ...
    Exception raised from deriveSchedulerType at /workspace/Fuser/csrc/fusion_segmenter.cpp:4015
    frame #0: nvfuser::nvfCheckFail(...)

(older builds quote the file: ``at "/opt/pytorch/nvfuser/csrc/x.cpp":3671``; segments compiled
in parallel prefix ``Error from segmentation group 8:``). The signature of such a failure is
the assert's source location, as a path from ``csrc/`` with its line, and its message with
names and numbers normalized: a smaller fusion that fails there with the same words is the same
bug, whatever tensor names, sizes and group numbers it has. Any other error (a CUDA error, a
Python exception) is its type and normalized first line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# at "/opt/pytorch/nvfuser/csrc/fusion_segmenter.cpp":3671  or  at /workspace/Fuser/csrc/x.h:69
_ASSERT_AT = re.compile(r"INTERNAL ASSERT FAILED at \"?([^\s\",]+?)\"?:(\d+)")
_RAISED_FROM = re.compile(r"Exception raised from (\S+) at (\S+?):(\d+)")
_PREAMBLE = re.compile(
    r"^.*?INTERNAL ASSERT FAILED at \S+?, please report a bug with repro script to NVFuser at "
    r"\S*?issues\.\s*",
    re.DOTALL,
)
_TYPE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Interrupt))\s*:\s*")
_GROUP = re.compile(r"Error from segmentation group \d+:\s*")
_GROUP_ID = re.compile(r"Error from segmentation group (\d+)")
_CUDA = re.compile(r"CUDA error: ([^\n]+)|(CUDA_ERROR_\w+)|(cudaError\w*)")

_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.+-]+)+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_VALUE_NAME = re.compile(r"\b[TSV]\d+\b")  # fusecli's own messages: T3, S5, V6
# nvFuser's printed IR too: T5_g_float, i38, iS6, bS2
_NAME = re.compile(r"\b(?:T\d+(?:_[a-z]+)*(?:_\w+)?|[TSVi]\d+|[ib]S\d+|[ib]\d+)\b")
_BRACED = re.compile(r"\{[^{}]*\}")
# A list of domains or groups (``{ iS5{i0}rf; iS7{i0} }``, ``idg{...} idg{...}``) after the
# braces are emptied: its length follows the fusion's size, so any run of them is one token.
_DOMAIN_LIST = re.compile(r"(?:<val>|\w+)\{\}\w*(?:[\s;,]+(?:<val>|\w+)\{\}\w*)*")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SPACE = re.compile(r"\s+")
MESSAGE_CHARS = 200


def _scrubbed(text: str, names: re.Pattern[str]) -> str:
    text = _PATH.sub("<path>", text.strip())
    return names.sub("<val>", _HEX.sub("<addr>", text))


def normalize_message(message: str) -> str:
    """The message with what changes from run to run or step to step replaced: paths,
    addresses, value names and numbers (expr positions shift as exprs are removed)."""
    return _NUMBER.sub("N", _scrubbed(message, _VALUE_NAME))


def normalize(text: str) -> str:
    """``normalize_message`` for nvFuser's words: its value and domain names too
    (``T5_g_float``, ``iS6{i0}``), whitespace collapsed."""
    text = _BRACED.sub("{}", _scrubbed(text, _NAME))
    text = _DOMAIN_LIST.sub("<domains>", text)
    return _SPACE.sub(" ", _NUMBER.sub("N", text)).strip()


def source_location(path: str, line: str | int) -> str:
    """``/workspace/Fuser/csrc/scheduler/runtime_info.h`` -> ``csrc/scheduler/runtime_info.h:L``."""
    marker = path.rfind("/csrc/")
    short = path[marker + 1:] if marker >= 0 else path.rsplit("/", 1)[-1]
    return f"{short}:{line}"


@dataclass(frozen=True, slots=True)
class ErrorSignature:
    """One failure's identity. ``kind``: ``assert`` (an nvFuser assert with its location),
    ``cuda`` (a CUDA error), ``error`` (any other exception)."""

    kind: str
    error_type: str
    location: str | None  # csrc/fusion_segmenter.cpp:4015
    function: str | None  # deriveSchedulerType
    message: str  # normalized, at most MESSAGE_CHARS
    raw: str  # the message as raised (first meaningful lines), for reports
    group: int | None = None  # nvFuser's "Error from segmentation group N"

    @property
    def key(self) -> str:
        """What two failures must share to be the same bug."""
        if self.location:
            return f"{self.error_type} at {self.location}: {self.message}"
        return f"{self.error_type}: {self.message}"

    @property
    def no_scheduler(self) -> bool:
        return "Can not find a scheduler" in self.raw

    def headline(self) -> str:
        """One line for tables and titles: where, and what, un-normalized."""
        where = f" at {self.location}" if self.location else ""
        first = self.raw.strip().splitlines()[0] if self.raw.strip() else ""
        return f"{self.error_type}{where}: {first[:160]}"


def error_signature(text: str, error_type: str | None = None) -> ErrorSignature:
    """The signature of an error, from what it printed: a Python exception's text (with or
    without ``Type:`` and a traceback before it) or nvFuser's assert text."""
    text = text.replace("\r\n", "\n")
    group_match = _GROUP_ID.search(text)
    group = int(group_match.group(1)) if group_match else None
    body = _last_exception(text)
    found_type, body = _split_type(_GROUP.sub("", body))
    error_type = error_type or found_type or "Error"
    if group_match is not None:
        # Segments compiled in parallel: nvFuser's wrapper assert (fusion_kernel_runtime.cpp)
        # quotes each segment's own error; the first quoted one is the failure
        text = text[group_match.start():]
        body = _GROUP.sub("", text)
        _, body = _split_type(body)
    located = _ASSERT_AT.search(body) or _ASSERT_AT.search(text)
    raised = _RAISED_FROM.search(body) or _RAISED_FROM.search(text)
    if located is not None or (raised is not None and "nvfuser" in text.lower()):
        path, line = located.groups() if located else raised.group(2, 3)
        message = _assert_message(body)
        return ErrorSignature(
            "assert", error_type, source_location(path, line),
            raised.group(1) if raised else None, normalize(message)[:MESSAGE_CHARS],
            message, group,
        )
    cuda = _CUDA.search(body)
    if cuda is not None:
        what = next(g for g in cuda.groups() if g)
        return ErrorSignature("cuda", error_type, None, None, normalize(what)[:MESSAGE_CHARS],
                              _first_lines(body), group)
    raw = _first_lines(_GROUP.sub("", body))
    first = raw.splitlines()[0] if raw else ""
    return ErrorSignature("error", error_type, None, None, normalize(first)[:MESSAGE_CHARS],
                          raw, group)


def _last_exception(text: str) -> str:
    """From a traceback, the final ``Type: message`` part (with what follows); else the text."""
    lines = text.strip().splitlines()
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        for index in range(len(lines) - 1, -1, -1):
            if _TYPE.match(lines[index]) and not lines[index].startswith(" "):
                start = index
                # nvFuser's message continues on the lines after; the frames follow it
                return "\n".join(lines[start:])
    return text.strip()


def _split_type(text: str) -> tuple[str | None, str]:
    match = _TYPE.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end():]


def _assert_message(body: str) -> str:
    """The words of an nvFuser assert: after its preamble, before ``Exception raised from``."""
    body = _GROUP.sub("", body)
    message = _PREAMBLE.sub("", body, count=1)
    message = message.split("Exception raised from", 1)[0]
    if "Codegen generated code" in message:  # NVRTC refused the kernel: its errors, not the code
        errors = [line.strip() for line in message.splitlines()
                  if re.search(r"\berror\b", line) and not line.lstrip().startswith("//")]
        return " ".join(errors[:2]) if errors else "the generated kernel failed to compile"
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return " ".join(lines[:3]) if lines else "INTERNAL ASSERT FAILED"


def _first_lines(text: str, count: int = 2) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    kept = [line for line in lines if not line.lstrip().startswith("frame #")]
    return "\n".join(kept[:count])
