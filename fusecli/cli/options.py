"""Options several commands share: how a fusion runs and how its outputs are judged."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import click
from click.core import ParameterSource

from fusecli.runtime.names import EXECUTOR_NAMES
from fusecli.segment.rules import PROFILES


def check_tolerance(
    ctx: click.Context, param: click.Parameter, value: float | None
) -> float | None:
    """A tolerance is a finite number, zero or more (nan would accept everything)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"must be a finite number >= 0, got {value}")
    _refuse_analytic_with_tolerances(ctx)
    return value


def check_tolerance_mode(ctx: click.Context, param: click.Parameter, value: str) -> str:
    _refuse_analytic_with_tolerances(ctx, value)
    return value


_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.PROMPT)


def _refuse_analytic_with_tolerances(ctx: click.Context, mode: str | None = None) -> None:
    """``--tolerance analytic`` given with ``--rtol``/``--atol``: they are loose's, and would
    silently switch the judgement to loose. Each of the three options' callbacks asks, so the
    one click processes last (whatever the order on the command line) sees the others; ``mode``
    is --tolerance's value while its own callback runs (not yet in ``ctx.params``)."""
    if (mode or ctx.params.get("tolerance")) != "analytic":
        return
    if ctx.get_parameter_source("tolerance") not in _GIVEN:
        return
    given = [f"--{name}" for name in ("rtol", "atol") if ctx.params.get(name) is not None]
    if given:
        raise click.UsageError(
            f"--tolerance analytic conflicts with {' and '.join(given)} (they set --tolerance "
            "loose's tolerances): drop one or the other", ctx,
        )


MAX_TIMEOUT = 7 * 24 * 3600.0  # a week: past any fusion's run, inside every timer's range


def check_timeout(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Seconds, more than 0 and at most a week (nan, inf and 1e300 would break the timers)."""
    if value is not None and not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise click.BadParameter(
            f"must be a number of seconds > 0 and at most {MAX_TIMEOUT:g} (a week), got {value}"
        )
    return value


def timeout_option(default: float, help_text: str) -> Callable:
    """--timeout SECONDS, checked by `check_timeout`."""
    return click.option("--timeout", type=float, default=default, show_default=True,
                        callback=check_timeout, help=help_text)


SEED = click.IntRange(min=0, max=2**64 - 1)  # what torch.manual_seed takes


def check_writable(
    ctx: click.Context, param: click.Parameter, value: Path | None
) -> Path | None:
    """An output path fusecli can write, checked before any work (exit 2, not a lost run)."""
    if value is None:
        return None
    if value.is_dir() and param.name != "output_dir":
        raise click.BadParameter(f"{value} is a folder, not a file")
    if value.exists():
        if not os.access(value, os.W_OK):
            raise click.BadParameter(f"{value} is not writable")
        return value
    folder = value.parent if param.name != "output_dir" else value
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # missing folders are created: the first existing one decides
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot create {value}: {folder} is not a writable folder")
    return value


EXECUTION_OPTIONS = (
    click.option(
        "--executor", type=click.Choice(EXECUTOR_NAMES), default="auto",
        show_default=True,
        help="How segments execute: generated CUDA kernels (cupy) or ATen; auto picks cupy "
        "where a GPU and CuPy are present.",
    ),
    click.option(
        "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
        show_default=True,
        help="Where scripts' CUDA tensors go; auto maps them to the CPU when there is no GPU.",
    ),
    click.option("--rules", type=click.Choice(sorted(PROFILES)), default="nvfuser",
                 show_default=True, help="Rule profile the segmenter uses."),
    click.option("--seed", type=SEED, default=0, show_default=True,
                 help="Seed for scripts' random inputs and for unseeded random ops."),
    click.option("--rtol", type=float, default=None, callback=check_tolerance,
                 help="Override the relative tolerance (--tolerance loose)."),
    click.option("--atol", type=float, default=None, callback=check_tolerance,
                 help="Override the absolute tolerance (--tolerance loose)."),
    click.option(
        "--tolerance", type=click.Choice(["analytic", "loose"]), default="analytic",
        show_default=True, callback=check_tolerance_mode,
        help="How outputs are judged. analytic: each floating-point element within the bound "
        "a running error analysis gives it (every rounding the fusion's dtypes and float32 "
        "arithmetic allow, carried through each op) of the float64 value, and within float32 "
        "rounding of eager torch but for rare rounding flips (a 1%% error in a bfloat16 output "
        "is caught). loose: against eager torch, rtol growing with 1 + log2(reduction size), "
        "float64 as tie-break. --rtol/--atol select loose with those values (with "
        "--tolerance analytic they are a usage error).",
    ),
    click.option("--no-tiebreak", is_flag=True,
                 help="With --tolerance loose: do not run the float64 reference to excuse "
                 "results closer to float64 (analytic always needs it)."),
)


def execution_options(command: Callable) -> Callable:
    """--executor, --device, --rules, --seed, --rtol, --atol, --tolerance, --no-tiebreak."""
    for option in reversed(EXECUTION_OPTIONS):
        command = option(command)
    return command


ENGINE_OPTIONS = (
    click.option(
        "--engine", type=click.Choice(["fusecli", "nvfuser"]), default="fusecli",
        show_default=True,
        help="Whose segmenter decides: fusecli's model, or real nvFuser (needs nvfuser_direct "
        "importable: a GPU machine with nvFuser on PYTHONPATH; exit 4 otherwise).",
    ),
    click.option(
        "--compare-engines", is_flag=True,
        help="Run both fusecli and real nvFuser and show their segmentations side by side, "
        "with the first segment where they differ (needs nvfuser_direct; exit 4 otherwise).",
    ),
)


def engine_options(command: Callable) -> Callable:
    """--engine and --compare-engines."""
    for option in reversed(ENGINE_OPTIONS):
        command = option(command)
    return command
