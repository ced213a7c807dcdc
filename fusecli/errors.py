"""The errors fusecli reports, each with the exit code DESIGN.md gives it.

Library code raises these; the CLI turns them into one line on stderr and the exit code.
They are ``RuntimeError`` subclasses, as every error nvFuser's Python frontend raises is, so a
script written against nvFuser (``pytest.raises(RuntimeError, match=...)``) sees the same type.
``where`` names the place in the user's input (``repro.py:12``, ``fusion.yaml: inputs[1]``).
"""

from __future__ import annotations


class FusecliError(RuntimeError):
    exit_code = 3

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        if not self.where or self.message.startswith(f"{self.where}:"):
            return self.message  # a message that names its place already: named once
        return f"{self.where}: {self.message}"


class InputError(FusecliError):
    """Bad input or usage: a definition error, a malformed file, inputs that do not fit."""

    exit_code = 2


class PipelineError(FusecliError):
    """fusecli failed on a valid fusion: no scheduler, a kernel failed to compile or run."""

    exit_code = 3


class MissingEnvironmentError(FusecliError):
    """What was asked for is not available here (a GPU, CuPy, NVRTC)."""

    exit_code = 4
