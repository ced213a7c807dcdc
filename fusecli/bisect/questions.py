"""Oracle questions: which fusion, run how; and how a question travels to a fresh process.

A question names either a repro file as the user gave it (``path`` and ``index``) or a fusion
bisect built in memory (``loaded``: a part of the original, a segment alone). An in-memory
fusion travels as a *bundle*: its definition as nvFuser prints it and its exact input values,
saved with ``torch.save``; ``load_source`` reads either kind.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fusecli.app.pipeline import RunOptions

BUNDLE_FORMAT = "fusecli-bisect-question/1"
BUNDLE_SUFFIX = ".pt"


@dataclass(frozen=True, eq=False)
class Question:
    path: Path | None = None  # a repro file, run as the user gave it
    index: int = 0  # which fusion of the file
    loaded: Any = None  # or a LoadedFusion built by bisect
    segments: int | None = None  # only the first N segments on the executor under test
    label: str = ""  # what this question is, for progress and replay
    log_to: Path | None = None  # another engine's segmenter log of the run is written here

    def __post_init__(self) -> None:
        if (self.path is None) == (self.loaded is None):
            raise ValueError("a question names exactly one of a path and a loaded fusion")


def write_bundle(loaded: Any, path: Path) -> Path:
    """Save an in-memory fusion: its printed definition and its exact inputs."""
    import torch

    from fusecli.frontend.repro import definition_text

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "format": BUNDLE_FORMAT,
            "name": loaded.name,
            "definition": definition_text(loaded.fd, "nvfuser_fusion"),
            "inputs": list(loaded.inputs),
        },
        path,
    )
    return path


def load_bundle(path: Path, device: str = "auto") -> list[Any]:
    import torch

    from fusecli.errors import InputError
    from fusecli.load.devices import resolve_device
    from fusecli.load.model import LoadedFusion
    from fusecli.load.restricted import run_definition

    try:
        data = torch.load(path, weights_only=True)
    except Exception as error:
        raise InputError(f"cannot read the question bundle: {error}", str(path)) from None
    if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT:
        raise InputError(f"not a question bundle ({BUNDLE_FORMAT})", str(path))
    fd = run_definition(data["definition"], f"<{path} definition>", lambda line: str(path))
    target = resolve_device(device)
    inputs = [
        value.to(target) if isinstance(value, torch.Tensor) and value.dim() > 0 else value
        for value in data["inputs"]
    ]
    loaded = LoadedFusion(
        path=path, name=str(data.get("name", path.stem)), fd=fd, inputs=inputs, line=None,
        source_kind="python",
    )
    return [loaded]


def load_source(source: str | Path, *, device: str = "auto", seed: int = 0) -> list[Any]:
    """The fusions of a repro file or of a question bundle."""
    from fusecli.load import load_path

    source = Path(source)
    if source.suffix == BUNDLE_SUFFIX:
        return load_bundle(source, device)
    return load_path(source, device=device, seed=seed)


def child_command(source: Path, question: Question, options: RunOptions) -> list[str]:
    """The command line that answers ``question`` about ``source`` in a fresh interpreter."""
    argv = [sys.executable, "-m", "fusecli.bisect", str(source)]
    if question.index:
        argv += ["--index", str(question.index)]
    if question.segments is not None:
        argv += ["--segments", str(question.segments)]
    if options.rules != "nvfuser":
        argv += ["--rules", options.rules]
    if options.executor != "auto":
        argv += ["--executor", options.executor]
    if options.device != "auto":
        argv += ["--device", options.device]
    if options.seed:
        argv += ["--seed", str(options.seed)]
    if options.rtol is not None:
        argv += ["--rtol", repr(options.rtol)]
    if options.atol is not None:
        argv += ["--atol", repr(options.atol)]
    if options.tolerance != "analytic":
        argv += ["--tolerance", options.tolerance]
    if not options.float64_tiebreak:
        argv.append("--no-tiebreak")
    if options.engine != "fusecli":
        argv += ["--engine", options.engine]
    if question.log_to is not None:
        argv += ["--log-to", str(question.log_to)]
    return argv


def shell_line(argv: list[str], env: dict[str, str] | None = None) -> str:
    """``argv`` as one line to paste into a shell, with the environment it needs first."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    command = " ".join(shlex.quote(a) for a in argv)
    return f"{prefix} {command}" if prefix else command
