"""A repro file's bytes as text, decoded as Python decodes a source file.

UTF-8, with a leading byte-order mark dropped (an editor on Windows writes one; Python runs
such a script). A file in UTF-16 or UTF-32 (it starts with their byte-order mark) is named so,
instead of as a byte UTF-8 cannot decode.
"""

from __future__ import annotations

import codecs
from pathlib import Path

_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
)


class NotUtf8Error(UnicodeDecodeError):
    """A file in another Unicode encoding than UTF-8."""

    def __str__(self) -> str:
        return (f"the file is {self.encoding} text (it starts with a byte-order mark); "
                "save it as UTF-8")


def decode_source(data: bytes, errors: str = "strict") -> str:
    """``data`` as UTF-8 text without a leading byte-order mark. With ``errors="strict"``, a
    UTF-16 or UTF-32 file raises ``NotUtf8Error`` and other bytes UTF-8 cannot decode
    ``UnicodeDecodeError``; any other ``errors`` mode replaces them as ``bytes.decode`` does."""
    if errors == "strict":
        for bom, encoding in _WIDE_BOMS:
            if data.startswith(bom):
                raise NotUtf8Error(encoding, data[:len(bom)], 0, len(bom), "byte-order mark")
    return data.decode("utf-8-sig", errors)


def read_source(path: Path) -> str:
    """The text of ``path`` (``decode_source``): OSError or UnicodeDecodeError otherwise."""
    return decode_source(Path(path).read_bytes())
