"""Options several commands share: how a fusion runs and how its outputs are judged."""

from __future__ import annotations

from collections.abc import Callable

import click

EXECUTION_OPTIONS = (
    click.option(
        "--executor", type=click.Choice(["auto", "aten", "cupy"]), default="auto",
        show_default=True,
        help="How segments execute: generated CUDA kernels (cupy) or ATen; auto picks cupy "
        "where a GPU and CuPy are present.",
    ),
    click.option(
        "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
        show_default=True,
        help="Where scripts' CUDA tensors go; auto maps them to the CPU when there is no GPU.",
    ),
    click.option("--rules", type=click.Choice(["nvfuser", "nvfuser-2024"]), default="nvfuser",
                 show_default=True, help="Rule profile the segmenter uses."),
    click.option("--seed", type=int, default=0, show_default=True,
                 help="Seed for scripts' random inputs and for unseeded random ops."),
    click.option("--rtol", type=float, default=None, help="Override the relative tolerance."),
    click.option("--atol", type=float, default=None, help="Override the absolute tolerance."),
    click.option("--no-tiebreak", is_flag=True,
                 help="Do not run the float64 reference to excuse results closer to float64."),
)


def execution_options(command: Callable) -> Callable:
    """--executor, --device, --rules, --seed, --rtol, --atol and --no-tiebreak."""
    for option in reversed(EXECUTION_OPTIONS):
        command = option(command)
    return command
