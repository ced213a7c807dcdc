"""Text from a user's script or YAML file, made safe to write into what fusecli generates.

A fusion's name, a file's name, an input's note or an error message quoting them is untrusted: it
may hold a newline followed by code, a ``*/``, a backtick fence or bytes that are not UTF-8.
Every generated Python, YAML, C/CUDA and Markdown file takes such text through ``one_line``
(comments, headings, prose) or the Markdown helpers; text that must stay exact inside code goes
through ``repr`` or ``json.dumps``, and YAML through the YAML dumper, never an f-string quote.
"""

from __future__ import annotations

import os
import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# A backslash and "*/" are written as hex escapes, so the result never holds a backslash that
# ends a line (a C line splice continues a ``//`` comment) or closes a ``/* */`` comment.
_STRUCTURAL = {"\\": "\\x5c"}


def _escape(char: str, structural: bool = True) -> str:
    if char in _NAMED:
        return _NAMED[char]
    if structural and char in _STRUCTURAL:
        return _STRUCTURAL[char]
    if char.isprintable():
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:  # a lone surrogate too: a byte of a file name that is not UTF-8
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` as one printable line that cannot leave a ``#`` or ``//`` comment or a
    Markdown line: CR, LF, every other control or non-printable character, lone surrogates and
    backslashes become backslash escapes (``\\n``, ``\\x1b``, ``\\udcff``, ``\\x5c``), and
    ``*/`` becomes ``*\\x2f``. Bytes (a file name) are decoded as the file system does.
    ``limit`` cuts the text (before escaping) to that many characters."""
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    text = str(text)
    if limit is not None:
        text = text[:limit]
    return "".join(_escape(char) for char in text).replace("*/", "*\\x2f")


# What XML 1.0 cannot hold at all (C0 controls but tab, LF and CR; surrogates; U+FFFE, U+FFFF),
# and the C1 controls and DEL it holds but a terminal showing a CI report would obey.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """``text`` with every character XML 1.0 does not allow (and DEL and the C1 controls)
    written as a backslash escape (``\\x1b``, ``\\x00``, ``\\udcff``): what ElementTree
    then writes always parses. Tab, LF and CR stay; bytes (a file name) are decoded as the file
    system does."""
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    return _NOT_XML.sub(lambda match: _escape(match.group()), str(text))


def md_code(text: object) -> str:
    """``text`` as a Markdown inline code span on one line: the backtick run around it is
    longer than any inside it, so it cannot close early."""
    line = one_line(text)
    ticks = "`" * (_longest_backtick_run(line) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line.strip() else ""
    return f"{ticks}{pad}{line}{pad}{ticks}"


def md_fence(body: str, info: str = "") -> list[str]:
    """The lines of a fenced Markdown block holding ``body`` verbatim but for control and
    non-printable characters, escaped: its fence is longer than any backtick run inside."""
    lines = [
        "".join(char if char == "\t" else _escape(char, structural=False) for char in line)
        for line in body.splitlines()
    ]
    fence = "`" * max(3, max((_longest_backtick_run(line) for line in lines), default=0) + 1)
    return [f"{fence}{info}", *lines, fence]


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
