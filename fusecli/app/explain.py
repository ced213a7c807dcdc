"""``fusecli explain-segmentation`` as a library function: load, segment with the log kept."""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.app.pipeline import skipped_notices
from fusecli.app.worker import WorkerProcesses
from fusecli.engines.nvfuser import Runner
from fusecli.errors import FusecliError, InputError, PipelineError
from fusecli.ir.nodes import Fusion
from fusecli.load import LoadedFusion, discover, load_path, runs_code
from fusecli.segment.result import SegmentedFusion
from fusecli.segment.rules import PROFILES, SCHEDULER_NAMES, Switches
from fusecli.segment.segmenter import segment_fusion


@dataclass(frozen=True, slots=True)
class ExplainOptions:
    rules: str = "nvfuser"
    disabled: frozenset[str] = frozenset()
    fuse_matmul: bool = False
    matmul_expr_eval: bool = True
    device: str = "auto"
    seed: int = 0
    debug: bool = False  # let an internal error propagate, with its traceback
    engine: str = "fusecli"  # or "nvfuser": real nvFuser's own segmenter log
    compare_engines: bool = False  # both, their segmentations compared
    timeout: float | None = None  # seconds a file may take, in a worker of its own

    @property
    def runs_fusecli(self) -> bool:
        return self.engine == "fusecli" or self.compare_engines

    @property
    def runs_nvfuser(self) -> bool:
        return self.engine == "nvfuser" or self.compare_engines

    def switches(self) -> Switches:
        return Switches(
            fuse_matmul=self.fuse_matmul,
            matmul_expr_eval=self.matmul_expr_eval,
            disabled=self.disabled,
        )


@dataclass(slots=True)
class ExplainOutcome:
    """One fusion's segmentation; or, when the segmenter itself crashed on it, ``error`` (a
    line) and ``detail`` (the traceback) with no ``segmented``."""

    loaded: LoadedFusion
    original: Fusion  # the fusion as defined (before profile lowering)
    segmented: SegmentedFusion | None
    notices: list[str] = field(default_factory=list)
    error: str | None = None
    detail: str | None = None
    nvfuser: Any = None  # fusecli.app.engines.NvfuserOutcome, with --engine nvfuser
    comparison: Any = None  # fusecli.engines.compare.EngineComparison, with --compare-engines

    @property
    def ok(self) -> bool:
        fusecli_ok = self.segmented is not None and self.segmented.ok
        nvfuser_ok = self.nvfuser is not None and self.nvfuser.parsed.ok
        if self.nvfuser is None:
            return fusecli_ok
        return nvfuser_ok and (fusecli_ok or self.comparison is None)  # --engine nvfuser: its own


def validate_options(options: ExplainOptions) -> None:

    if options.rules not in PROFILES:
        raise InputError(f"unknown rule profile {options.rules!r}; choose from {sorted(PROFILES)}")
    unknown = sorted(options.disabled - set(SCHEDULER_NAMES))
    if unknown:
        raise InputError(
            f"unknown scheduler(s) {unknown}; choose from {', '.join(SCHEDULER_NAMES)}"
        )


@dataclass(frozen=True, slots=True)
class FileFailure:
    """A file that gave no fusion to explain: it did not load, or defines none. ``error`` is
    the one line, ``exit_code`` its error's, ``detail`` a traceback for fusecli's own bugs."""

    path: Path
    error: str
    exit_code: int
    detail: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass(slots=True)
class ExplainReport:
    """``explain-segmentation PATH...``: per file in order, its fusions' outcomes or why it
    gave none; ``interrupted`` says why the run stopped early (Ctrl-C, SIGTERM)."""

    entries: list[ExplainOutcome | FileFailure] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    interrupted: str | None = None

    @property
    def outcomes(self) -> list[ExplainOutcome]:
        return [e for e in self.entries if isinstance(e, ExplainOutcome)]

    @property
    def exit_code(self) -> int:
        """The worst of the files': a failure's own code, 3 for a fusion that does not
        segment (or that nvFuser failed on), 0 when every fusion segmented."""
        codes = [
            entry.exit_code if isinstance(entry, FileFailure)
            else 0 if entry.ok else PipelineError.exit_code
            for entry in self.entries
        ]
        return max(codes, default=0)


def explain_paths(
    paths: list[Path], options: ExplainOptions, runner: Runner | None = None
) -> ExplainReport:
    """``explain_file`` for every file under ``paths`` (folders expanded by ``discover``).
    Each script (and every file of several) runs in a worker process of its own, as
    ``fusecli run`` does
    (``fusecli.app.worker``): a script that exits, crashes, raises KeyboardInterrupt or hangs
    past ``options.timeout`` is that file's ``FileFailure``, and the others go on."""
    validate_options(options)
    if options.runs_nvfuser:
        from fusecli.app.engines import resolve_engine

        resolve_engine("nvfuser", runner)  # exit 4 once, before any file, without nvFuser
    skipped: list[Path] = []
    files = discover(paths, skipped)
    report = ExplainReport(notices=skipped_notices(skipped))
    if not files:
        found = "no .py, .yaml or .yml fusion files found"
        if skipped:
            found = f"no repros found ({len(skipped)} file(s) do not look like repros)"
        raise InputError(found, where=str(paths[0]))
    # In this process, as corpus.runs_in_process says: --debug, an injected runner (tests),
    # FUSECLI_IN_PROCESS=1; and one YAML file alone (a worker costs an interpreter start). A
    # script, even alone, runs in a worker (it may exit, fork, ignore signals).
    in_process = (
        (len(files) == 1 and not runs_code(files[0])) or options.debug or runner is not None
        or os.environ.get("FUSECLI_IN_PROCESS") == "1"
    )
    workers = None if in_process else WorkerProcesses()
    for path in files:
        try:
            if workers is None:
                report.entries.extend(explain_file(path, options, runner))
            else:
                report.entries.extend(workers.explain_file(path, options))
        except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM: what finished is reported
            report.interrupted = str(stop) or "interrupted"
            break
    return report


def explain_file(
    path: Path, options: ExplainOptions, runner: Runner | None = None
) -> list[ExplainOutcome | FileFailure]:
    """``explain_path``, with a file that gives no fusion (it does not load, defines none, or
    fusecli fails on it) as its ``FileFailure`` instead of an exception."""
    try:
        outcomes = explain_path(path, options, runner)
    except FusecliError as error:
        if options.debug:
            raise
        return [FileFailure(path, str(error), error.exit_code)]
    except Exception as error:  # a bug in fusecli: this file's record, the others go on
        if options.debug:
            raise
        lines = str(error).strip().splitlines()
        message = f"internal error: {type(error).__name__}: {lines[0] if lines else ''}"
        detail = "".join(traceback.format_exception(error))
        return [FileFailure(path, message, PipelineError.exit_code, detail)]
    if not outcomes:
        error = InputError("defines no fusion with inputs to segment", where=str(path))
        return [FileFailure(path, str(error), error.exit_code)]
    return list(outcomes)


def explain_path(
    path: Path, options: ExplainOptions, runner: Runner | None = None
) -> list[ExplainOutcome]:
    """Segment every fusion in ``path`` under ``options``, keeping the decision log; with the
    nvFuser engine, also run it through real nvFuser (``runner``: how; tests inject one)."""

    validate_options(options)
    if options.runs_nvfuser:
        from fusecli.app.engines import compare_with_fusecli, resolve_engine, run_nvfuser

        resolve_engine("nvfuser", runner)  # exit 4 here, before any work, without nvFuser
    outcomes = []
    for loaded in load_path(path, device=options.device, seed=options.seed, evaluate=False):
        outcome = ExplainOutcome(loaded, loaded.fusion, None, list(loaded.notices))
        if options.runs_nvfuser:
            outcome.nvfuser = run_nvfuser(loaded, runner)
        if options.runs_fusecli:
            _segment(outcome, options)
        if options.compare_engines:
            outcome.comparison = compare_with_fusecli(outcome.segmented, outcome.nvfuser)
        outcomes.append(outcome)
    return outcomes


def _segment(outcome: ExplainOutcome, options: ExplainOptions) -> None:
    loaded = outcome.loaded
    try:
        outcome.segmented = segment_fusion(
            loaded.fusion, loaded.inputs, profile=options.rules,
            switches=options.switches(), keep_log=True,
        )
    except Exception as error:  # one fusion's crash is its record; the others go on
        if options.debug:
            raise
        lines = str(error).strip().splitlines()
        outcome.error = f"internal error: {type(error).__name__}: {lines[0] if lines else ''}"
        outcome.detail = "".join(traceback.format_exception(error))
