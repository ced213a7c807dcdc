"""Run ``fusecli convert --to direct`` output with real nvFuser, and check its results.

On a GPU machine with real nvFuser (``nvfuser_direct``; see the project's notes on carrying the
published wheel), from the repository root:

    . .nvfuser/activate.sh
    PYTHONPATH=. python3 scripts/check-direct-conversion.py fusions/ tests/repros_2023/

For every fusion file, the original is first run as written by real nvFuser (a repro in an old
spelling usually fails to load there: that is what the conversion is for). Then it is converted
with ``fusecli.load.convert`` and the converted script is run by real nvFuser. Its outputs are
compared with fusecli's reference interpreter on the same inputs, with fusecli's tolerances
(for fusions with random ops, whose streams differ, only shapes and dtypes). One line per file
is printed, then a count.

Measured on the H200 with nvFuser 0.2.36 over ``fusions/ tests/repros_2023/``: all 18 converted
files run; 17 match the reference, and ``dropout_residual`` differs only in its random values.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)  # before torch: the wheel's c10 symbols

import nvfuser_direct  # noqa: E402,F401

from fusecli.compare import compare_tensors, tolerance_for  # noqa: E402
from fusecli.engines.nvfuser import first_line  # noqa: E402
from fusecli.ir.optype import OpKind  # noqa: E402
from fusecli.load import discover, load_path  # noqa: E402
from fusecli.load.convert import convert_file  # noqa: E402
from fusecli.reference import run_reference  # noqa: E402
from fusecli.runtime.bind import flatten_inputs  # noqa: E402


def run_with_nvfuser(path: Path) -> tuple[list, list]:
    """Execute the script with real nvFuser: (its inputs, its outputs) of the last execute."""
    namespace = {"__name__": "__main__", "__file__": str(path)}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    fd, inputs = namespace["fd"], namespace["inputs"]
    return inputs, fd.execute(inputs)


def check(path: Path, folder: Path) -> tuple[bool, str]:
    as_written = "as written: fusecli YAML"
    if path.suffix == ".py":
        try:
            run_with_nvfuser(path)
            as_written = "as written: runs"
        except Exception as error:  # nvFuser's refusal of the original spelling
            as_written = f"as written: {first_line(error)}"
    target = folder / f"{path.stem}_direct.py"
    try:
        convert_file(path, target, to="direct", force=True)
    except Exception as error:
        return False, f"{as_written}; convert: {first_line(error)}"
    try:
        inputs, outputs = run_with_nvfuser(target)
    except Exception as error:
        traceback.print_exc(limit=1)
        return False, f"{as_written}; converted: nvFuser raised {first_line(error)}"
    (loaded,) = load_path(target, device="cuda")[-1:]
    expected = run_reference(loaded.fusion, flatten_inputs(inputs)).outputs
    if any(expr.op.kind is OpKind.RANDOM for expr in loaded.fusion.exprs):
        # nvFuser seeds unseeded random ops from its own generator: values differ by design
        same = all(g.shape == w.shape and g.dtype == w.dtype for g, w in zip(outputs, expected))
        return same, f"{as_written}; converted: runs, random ops: shapes and dtypes compared"
    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        diff = compare_tensors(got, want, tolerance=tolerance_for(want.dtype, 4096))
        if not diff.ok:
            return False, f"{as_written}; converted: output {index}: {diff.summary()}"
    return True, f"{as_written}; converted: runs, {len(outputs)} outputs match"


def main(argv: list[str]) -> int:
    paths = discover([Path(arg) for arg in argv])
    passed = 0
    with tempfile.TemporaryDirectory(prefix="fusecli-direct-") as folder:
        for path in paths:
            ok, line = check(path, Path(folder))
            passed += ok
            print(f"{'ok  ' if ok else 'FAIL'} {path}: {line}", flush=True)
    print(f"converted and run by nvFuser: {passed} of {len(paths)} match fusecli's reference")
    return 0 if passed == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
