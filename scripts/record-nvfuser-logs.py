"""Record real nvFuser's segmentation of fusions, as goldens of nvFuser's behaviour.

Run on a GPU machine with real nvFuser (``nvfuser_direct``; see the README on carrying the
published wheel), from the repository root:

    . .nvfuser/activate.sh
    PYTHONPATH=.:$PYTHONPATH python3 scripts/record-nvfuser-logs.py OUTDIR PATH [PATH ...]

Every fusion fusecli loads from the paths goes the way ``--engine nvfuser`` sends it: written
for the direct frontend (``fusecli convert --to direct``), defined with nvfuser_direct and
executed on (copies of) the fusion's own inputs with
``NVFUSER_DUMP=segmenter_logging,segmented_fusion``. What nvFuser printed is written to
``OUTDIR/<name>.log``, followed by the definition it was given; ``OUTDIR/outcomes.json`` says,
per fusion, ``ok`` or the error nvFuser raised. One fusion's failure is its outcome; the
recording goes on. ``tests/golden/nvfuser/`` holds such a recording.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)  # before torch: the wheel's c10 symbols

from fusecli.engines.nvfuser import (  # noqa: E402
    direct_definition,
    first_line,
    load_nvfuser,
    run_with_nvfuser,
)
from fusecli.load import discover, load_path  # noqa: E402


def record(loaded: object, out_dir: Path) -> str:
    try:
        body = direct_definition(loaded)
    except Exception as error:  # fusecli could not translate it: that is the outcome
        return f"fusecli could not convert it: {first_line(error)}"
    run = run_with_nvfuser(loaded)
    footer = "\n# definition given to nvfuser_direct:\n" + body
    (out_dir / f"{loaded.name}.log").write_text(run.log + footer, encoding="utf-8")
    return run.error or "ok"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, sources = Path(argv[0]), [Path(arg) for arg in argv[1:]]
    load_nvfuser()
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes_file = out_dir / "outcomes.json"
    # a recording this process took over from (see below) left its outcomes here
    outcomes: dict[str, str] = (
        json.loads(outcomes_file.read_text()) if outcomes_file.exists() else {})
    files = list(discover(sources))
    for index, path in enumerate(files):
        try:
            fusions = load_path(path, device="cuda")
        except Exception as error:  # one file's failure is its outcome
            fusions, outcomes[path.stem] = [], f"fusecli could not load it: {first_line(error)}"
        for loaded in fusions:
            outcomes[loaded.name] = record(loaded, out_dir)
            print(f"{loaded.name}: {outcomes[loaded.name]}", flush=True)
        outcomes_file.write_text(json.dumps(outcomes, indent=1) + "\n")
        if _poisoned(outcomes.get(path.stem, "")) or any(
                _poisoned(outcomes[f.name]) for f in fusions):
            # a device-side assert leaves this process's CUDA context unusable: every file
            # after it would fail the same way; a fresh interpreter records the rest
            rest = [str(f) for f in files[index + 1:]]
            if rest:
                os.execv(sys.executable, [sys.executable, __file__, str(out_dir), *rest])
    return 0


def _poisoned(outcome: str) -> bool:
    return "CUDA error" in outcome


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
