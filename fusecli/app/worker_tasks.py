"""What a worker process (``fusecli.app.worker``) does with one file: run it, explain its
segmentation, convert it, or write it as a plain nvFuser script. Each task turns whatever the
script raises (``SystemExit`` and ``KeyboardInterrupt`` included: they are the script's own)
into that file's record, so the worker always has a result to send."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fusecli.app.pipeline import FusionOutcome, RunOptions
from fusecli.errors import PipelineError

if TYPE_CHECKING:
    from fusecli.app.explain import ExplainOptions


def raised(error: BaseException) -> str:
    return f"the script raised {type(error).__name__}" + (f": {error}" if str(error) else "")


def run(path: Path, options: RunOptions, send: Callable[[str, Any], None]) -> list[Any]:
    from fusecli.app.pipeline import run_file

    try:
        return run_file(path, options, on_phase=lambda where: send("phase", where))
    except BaseException as error:  # KeyboardInterrupt, SystemExit: the script's own
        return [
            FusionOutcome(
                path=str(path), name=path.stem, status="error",
                error=raised(error),
                exit_code=PipelineError.exit_code,
                detail="".join(traceback.format_exception(error)),
            )
        ]


def explain(path: Path, options: ExplainOptions) -> list[Any]:
    from fusecli.app.explain import FileFailure, explain_file
    from fusecli.app.pipeline import time_limit

    try:
        with time_limit(options.timeout, str(path)):
            return explain_file(path, options)
    except BaseException as error:  # KeyboardInterrupt, SystemExit: the script's own
        detail = "".join(traceback.format_exception(error))
        return [FileFailure(path, raised(error), PipelineError.exit_code, detail)]


def convert(request: dict[str, Any]) -> tuple[str, Any]:
    """("text", the converted text) or ("error", (message, exit code))."""
    from fusecli.app.pipeline import time_limit
    from fusecli.errors import FusecliError
    from fusecli.load.convert import convert_file

    path = request["path"]
    try:
        with time_limit(request["timeout"], str(path)):
            return "text", convert_file(path, request["output"], to=request["to"],
                                        force=request["force"])
    except FusecliError as error:
        return "error", (str(error), error.exit_code)
    except BaseException as error:  # KeyboardInterrupt, SystemExit: the script's own
        return "error", (f"{path}: {raised(error)}", PipelineError.exit_code)


def direct_script(path: Path, name: str, options: RunOptions, checked: bool = False
                  ) -> tuple[str, str]:
    """The fusion ``name`` of ``path`` as a plain nvfuser_direct script; ``checked``: one that
    also checks its outputs against fusecli's reference and bounds (an AssertionError when
    one is off), its inputs all stored (for a wrong result, values matter)."""
    from fusecli.app.pipeline import time_limit
    from fusecli.app.plain_repro import expected_outputs, plain_script
    from fusecli.load import load_path
    from fusecli.load.convert import stores_exactly

    try:
        with time_limit(options.timeout, str(path)):
            loaded = load_path(path, device=options.device, seed=options.seed,
                               all_calls=options.all_calls)
            fusion = next(f for f in loaded if f.name == name)
            if not checked:
                return "script", plain_script(fusion)
            drawn = [i for i, x in enumerate(fusion.inputs)
                     if hasattr(x, "shape") and not stores_exactly(x)]
            if drawn:
                return "error", (f"input {drawn[0]} is too large to store in a plain script, "
                                 "so its outputs cannot be checked there")
            check = expected_outputs(fusion, options)
            if check is None:
                return "error", "fusecli's reference cannot check its outputs"
            return "script", plain_script(fusion, check)
    except BaseException as error:
        return "error", f"{type(error).__name__}: {error}"
