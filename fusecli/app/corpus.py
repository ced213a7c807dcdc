"""Corpus runs for CI: ``fusecli run DIR --jobs N --shard K/N --junit FILE``.

``run_corpus`` runs every repro file under the given paths, each in a worker process of its
own (``fusecli.app.worker``; up to ``jobs`` at once, one GPU each where there are GPUs), and
returns the same ``RunReport`` as ``run_paths``, in file order whatever order the workers finish
in: a worker that exits, crashes or hangs is that file's error record. ``--shard K/N`` (K from 1
to N) keeps every N-th file of the sorted list starting at the K-th, so the N jobs of a CI
matrix split a corpus without overlap. ``cluster_failures`` groups failing fusions by a
signature (an error's ``ErrorSignature.key``: an nvFuser assert's location and normalized
words; or the kind of mismatch), so that a hundred failures with one cause read as one line,
with its smallest member to debug first.
"""
from __future__ import annotations

import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fusecli.app.pipeline import (
    FusionOutcome,
    RunOptions,
    RunReport,
    internal_error_outcome,
    skipped_notices,
)
from fusecli.app.worker import WorkerProcesses
from fusecli.errors import InputError


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` as (K, N), 1 <= K <= N; None for None. InputError otherwise."""
    if text is None:
        return None
    try:
        k_text, n_text = text.split("/")
        shard, count = int(k_text), int(n_text)
    except ValueError:
        raise InputError(f"--shard {text!r}: expected K/N, e.g. 2/4") from None
    if not 1 <= shard <= count:
        raise InputError(f"--shard {text!r}: K must be between 1 and N")
    return shard, count


def select_shard(files: Sequence[Path], shard: tuple[int, int] | None) -> list[Path]:
    if shard is None:
        return list(files)
    k, n = shard
    return [path for index, path in enumerate(files) if index % n == k - 1]


def run_corpus(
    paths: Sequence[Path],
    options: RunOptions,
    jobs: int = 1,
    shard: tuple[int, int] | str | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunReport:
    """Run every fusion under ``paths`` (this shard of them), each file in a worker process of
    its own, ``jobs`` at a time (see ``runs_in_process`` for the exceptions)."""
    from fusecli.app.pipeline import run_paths
    from fusecli.errors import FusecliError
    from fusecli.load import discover, runs_code

    if isinstance(shard, str):
        shard = parse_shard(shard)
    skipped: list[Path] = []
    try:
        files = discover(list(paths), skipped)
    except FusecliError:
        files = []
    if not files:  # run_paths reports why, as one error outcome
        return run_paths(list(paths), options, progress)
    files = select_shard(files, shard)
    alone = len(files) == 1 and jobs <= 1
    if runs_in_process(options) or (alone and not runs_code(files[0])):
        # one YAML file alone runs here (a worker costs an interpreter start); a script, even
        # alone, runs in a worker: it may exit, fork a child that holds stdout, or ignore the
        # signal --timeout is kept with, and must still give a record and one JSON document
        report = run_paths(files, options, progress) if files else RunReport()
        report.notices[:0] = skipped_notices(skipped)
        return report
    report = RunReport(notices=skipped_notices(skipped))
    if files:
        _run_in_workers(files, options, jobs, report, progress)
    return report


def runs_in_process(options: RunOptions) -> bool:
    """Whether files run in this process instead of a worker each: with ``--debug`` (an error
    raises with its traceback, a debugger can stop in the script), with an injected nvFuser
    runner (a callable: tests), or with ``FUSECLI_IN_PROCESS=1`` (tests that patch fusecli's
    functions). A script can then end or hang the whole run."""
    return (
        options.debug or options.nvfuser_runner is not None
        or os.environ.get("FUSECLI_IN_PROCESS") == "1"
    )


def _run_in_workers(
    files: Sequence[Path],
    options: RunOptions,
    jobs: int,
    report: RunReport,
    progress: Callable[[str], None] | None,
) -> None:
    """Up to ``jobs`` workers at once, each pinned to one GPU (by slot) and its share of the
    CPU threads; outcomes in file order whatever order the workers finish in."""
    workers = min(jobs, len(files))
    devices = _visible_gpus()
    slots: queue.SimpleQueue[dict[str, str]] = queue.SimpleQueue()
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    for worker in range(workers):
        env = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads)}
        if devices:
            env["CUDA_VISIBLE_DEVICES"] = devices[worker % len(devices)]
        slots.put(env)
    processes = WorkerProcesses()

    def run_one(path: Path) -> list[FusionOutcome]:
        env = slots.get()
        try:
            return processes.run_file(path, options, env)
        finally:
            slots.put(env)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fusecli-worker")
    try:
        futures = [pool.submit(run_one, path) for path in files]
        for path, future in zip(files, futures):
            if progress:
                progress(str(path))
            try:
                report.fusions.extend(future.result())
            except Exception as error:  # starting the worker failed (no memory, no fds)
                report.fusions.append(internal_error_outcome(str(path), path.stem, error))
    except KeyboardInterrupt as stop:
        # Ctrl-C or SIGTERM of this process: the workers, in sessions of their own, were not
        # signalled. Kill them instead of waiting, and keep what finished.
        report.interrupted = str(stop) or "interrupted"
        processes.stop()
        pool.shutdown(wait=True, cancel_futures=True)
    else:
        pool.shutdown()


def _visible_gpus() -> list[str]:
    """The GPUs workers are pinned to, as CUDA_VISIBLE_DEVICES entries (this process's own
    selection, if it has one)."""
    try:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return []
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return visible[:count] if visible else [str(index) for index in range(count)]


# -- failure signatures --------------------------------------------------------------------------


def failure_signature(outcome: FusionOutcome) -> str | None:
    """What a failing fusion's failure looks like, with incidental detail removed: for an
    error, its ``ErrorSignature.key`` (an nvFuser assert: its location and normalized words);
    for a mismatch, the kinds of wrong outputs."""
    if outcome.status == "error":
        return error_failure_signature(outcome.error, outcome.detail)
    if outcome.status != "mismatch":
        return None
    kinds = sorted({_mismatch_kind(diff) for diff in outcome.outputs if not diff.ok})
    return "mismatch: " + ", ".join(kinds)


def error_failure_signature(error: str | None, detail: str | None) -> str:
    """The signature of an error from its one line and its detail. The detail (an engine's
    whole error text, a traceback, a dead worker's last output) decides when it names an
    assert, a CUDA error or an exception type; a dead worker's output is otherwise anything
    the script printed, so the one line decides."""
    from fusecli.engines.signature import error_signature

    if detail:
        detailed = error_signature(detail)
        if detailed.kind != "error" or detailed.error_type != "Error":
            return f"error: {detailed.key}"
    return f"error: {error_signature(error or detail or '').key.removeprefix('Error: ')}"


def _mismatch_kind(diff: object) -> str:
    if not getattr(diff, "shape_ok", True):
        return "wrong shape"
    if not getattr(diff, "dtype_ok", True):
        return "wrong dtype"
    if not getattr(diff, "strides_ok", True):
        return "wrong strides"
    if getattr(diff, "nan_mismatch", 0) or getattr(diff, "inf_mismatch", 0):
        return f"NaN/inf in {diff.expected_dtype}"
    return f"values in {diff.expected_dtype}"


@dataclass(slots=True)
class Cluster:
    """Failing fusions of one signature. ``smallest``: the member to debug first (fewest ops
    where its segments say, else the smallest file). ``attribution`` (``--engine nvfuser``):
    ``nvfuser`` when a plain nvfuser_direct script of the smallest member fails the same way,
    ``translation`` when it does not, with how it ran in ``plain``."""

    signature: str
    members: list[str] = field(default_factory=list)  # "path: name"
    files: list[str] = field(default_factory=list)
    smallest_outcome: FusionOutcome | None = field(default=None, repr=False)
    attribution: str | None = None
    plain: str | None = None

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def smallest(self) -> str | None:
        """The smallest member, as ``path: name``."""
        outcome = self.smallest_outcome
        return None if outcome is None else f"{outcome.path}: {outcome.name}"

    def add(self, outcome: FusionOutcome) -> None:
        self.members.append(f"{outcome.path}: {outcome.name}")
        if outcome.path not in self.files:
            self.files.append(outcome.path)
        smallest = self.smallest_outcome
        if smallest is None or fusion_size(outcome) < fusion_size(smallest):
            self.smallest_outcome = outcome


def fusion_size(outcome: FusionOutcome) -> tuple[int, int, int]:
    """How large a failing fusion is, to order a cluster's members: its op count where its
    segments give one (sorted first), else its file's size in bytes."""
    ops = sum(len(segment.exprs) for segment in outcome.segments)
    try:
        size = os.path.getsize(outcome.path)
    except OSError:
        size = 0
    return (0, ops, size) if ops else (1, 0, size)


def cluster_failures(report: RunReport) -> list[Cluster]:
    """Failing fusions grouped by signature, the largest group first."""
    clusters: dict[str, Cluster] = {}
    for outcome in report.fusions:
        signature = failure_signature(outcome)
        if signature is not None:
            clusters.setdefault(signature, Cluster(signature)).add(outcome)
    return sorted(clusters.values(), key=lambda c: (-c.count, c.signature))
