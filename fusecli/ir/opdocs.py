"""The op table of ``docs/ir.md``, written from the op records.

``python -m fusecli.ir.opdocs docs/ir.md`` rewrites the table between the two marker lines;
``tests/test_opdefs.py`` fails when the file and the records disagree. Plain elementwise ops
share a row per kind, which names only the ops whose meaning is not the torch function of the
same name, so a new op of that sort leaves the docs as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fusecli.ir.opdefs import OPS, OpDef, OpKind

BEGIN = "<!-- op table: written by `python -m fusecli.ir.opdocs docs/ir.md` -->"
END = "<!-- end of op table -->"

_SHARED_ROWS = {
    OpKind.UNARY: ("unary ops (UNARY)", "the torch function of the same name"),
    OpKind.BINARY: ("binary ops (BINARY)", "the torch function of the same name; operands are"
                    " tensors or scalars, already cast; comparisons and logical ops give Bool"),
}


def _code(names: tuple[str, ...] | str) -> str:
    if isinstance(names, str):
        return f"`{names}`"
    return ", ".join(f"`{n}`" for n in names)


def _shared_row(kind: OpKind, records: list[OpDef]) -> str:
    label, meaning = _SHARED_ROWS[kind]
    noted = [f"`{d.name}`: {d.doc}" for d in records if d.doc]
    text = meaning + ("; " + "; ".join(noted) if noted else "")
    return f"| {label} | `{records[0].inputs}` | | {text} |"


def table() -> str:
    """The markdown table of every op, in record order."""
    rows = ["| op (kind) | inputs | attrs | meaning |", "| --- | --- | --- | --- |"]
    seen_kinds: set[OpKind] = set()
    for record in OPS:
        if record.kind in _SHARED_ROWS:
            if record.kind not in seen_kinds:
                rows.append(_shared_row(record.kind, [d for d in OPS if d.kind is record.kind]))
                seen_kinds.add(record.kind)
            continue
        label = _code(record.name)
        if record.kind not in seen_kinds:
            label += f" ({record.kind.name})"
            seen_kinds.add(record.kind)
        rows.append(f"| {label} | `{record.inputs}` | {_code(record.attrs)} | {record.doc} |")
    return "\n".join(rows)


def rewritten(text: str) -> str:
    """``text`` with the lines between the markers replaced by the current table."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError("the op table markers are missing")
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fusecli.ir.opdocs docs/ir.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    path.write_text(rewritten(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
