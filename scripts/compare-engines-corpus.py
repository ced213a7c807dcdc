"""fusecli's segmentation against real nvFuser's, for every fusion of a corpus: one table.

On a GPU machine with real nvFuser (``nvfuser_direct``), from the repository root:

    . .nvfuser/activate.sh
    PYTHONPATH=.:$PYTHONPATH python3 scripts/compare-engines-corpus.py fusions/ tests/repros_2023/

Each fusion goes through ``explain-segmentation --compare-engines`` (the same library call):
real nvFuser executes it on its own inputs with its segmenter log on, and that log is compared
with fusecli's segmentation segment by segment (by scheduler). One line per fusion: ``agree``,
the first diverging segment with each engine's choice, or which engine failed; then the counts.
Exits 0 when every fusion was compared (divergences are findings, not failures), 3 when some
engine failed on some fusion, 4 without nvfuser_direct.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)  # before torch: the wheel's c10 symbols

from fusecli.app.engines import resolve_engine  # noqa: E402
from fusecli.app.explain import ExplainOptions, explain_path  # noqa: E402
from fusecli.engines.nvfuser import first_line  # noqa: E402
from fusecli.errors import MissingEnvironmentError  # noqa: E402
from fusecli.load import discover  # noqa: E402


def compare_file(path: Path, options: ExplainOptions) -> list[tuple[str, str, str]]:
    """(fusion, agree/differ/failed, the verdict line) for every fusion of ``path``."""
    try:
        outcomes = explain_path(path, options)
    except Exception as error:  # one file's failure is its row; the table goes on
        return [(path.stem, "failed", f"fusecli could not load or run it: {first_line(error)}")]
    rows = []
    for outcome in outcomes:
        comparison = outcome.comparison
        kind = "agree" if comparison.agree else "failed" if comparison.errors else "differ"
        name = outcome.loaded.name
        label = str(path) if name == path.stem else f"{path}: {name}"
        rows.append((label, kind, comparison.verdict()))
    return rows


def main(argv: list[str]) -> int:
    try:
        resolve_engine("nvfuser")
    except MissingEnvironmentError as error:
        print(f"compare-engines-corpus: {error}", file=sys.stderr)
        return 4
    options = ExplainOptions(compare_engines=True, device="cuda")
    rows = []
    for path in discover([Path(arg) for arg in argv or ["fusions"]]):
        rows.extend(compare_file(path, options))
    width = max((len(name) for name, _, _ in rows), default=10)
    print(f"{'fusion':<{width}}  {'result':<6}  verdict")
    for name, kind, verdict in rows:
        print(f"{name:<{width}}  {kind:<6}  {verdict}", flush=True)
    counts = {kind: sum(1 for _, k, _ in rows if k == kind) for kind in ("agree", "differ",
                                                                          "failed")}
    print(f"{len(rows)} fusions: {counts['agree']} agree, {counts['differ']} differ, "
          f"{counts['failed']} failed")
    return 0 if counts["failed"] == 0 else 3


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
