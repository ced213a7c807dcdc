"""The consoles every terminal view prints through.

Names and paths come from users' files: a YAML ``name`` or a file name may hold ESC, CSI, BEL or
another control character that a terminal would obey (retitle the window, hide the text after
it, move the cursor). ``TerminalConsole`` shows every such character escaped (``\\x1b``) in all
it renders, whatever view put the text there; rich's own styling and cursor control are not
text and stay as they are. A reader that stops reading (``fusecli run ... | head``) raises
``BrokenPipeError`` for the command to end quietly with its own exit code, where rich would exit
with status 1.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

# C0 controls but tab and newline, DEL, C1 controls (0x9b is CSI to some terminals), and lone
# surrogates (the bytes of a file name that is not UTF-8, which no terminal encoding takes).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def escape_controls(text: str) -> str:
    """``text`` with each character a terminal would obey as a backslash escape: ``\\x1b``,
    ``\\x07``, ``\\x9b``, ``\\udcff``. Tabs and newlines stay; printable text is unchanged."""
    return _UNSAFE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class TerminalConsole(Console):
    """A rich ``Console`` whose text cannot drive the terminal (see the module's docstring)."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        # Every view's text passes here as segments, before containers pad and crop lines, so
        # tables and panels are laid out around the escaped text.
        for segment in super().render(renderable, options):
            if segment.control is None and _UNSAFE.search(segment.text):
                segment = Segment(escape_controls(segment.text), segment.style)
            yield segment

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more is written; the command decides its exit code
        raise BrokenPipeError(errno.EPIPE, "the reader of the output stopped reading")


def terminal(stderr: bool = False) -> TerminalConsole:
    """The console for stdout (results) or, with ``stderr``, for diagnostics."""
    return TerminalConsole(stderr=stderr)
