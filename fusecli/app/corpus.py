"""Corpus runs for CI: ``fusecli run DIR --jobs N --shard K/N --junit FILE``.

``run_corpus`` runs every repro file under the given paths, one worker process per GPU (or per
CPU worker without GPUs), and returns the same ``RunReport`` as ``run_paths``, in file order
whatever order the workers finish in. ``--shard K/N`` (K from 1 to N) keeps every N-th file
of the sorted list starting at the K-th, so the N jobs of a CI matrix split a corpus without
overlap. ``cluster_failures`` groups failing fusions by a signature (the error with paths,
numbers and names normalized, or the kind of mismatch), so that a hundred failures with one
cause read as one line.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fusecli.app.pipeline import (
    FusionOutcome,
    RunOptions,
    RunReport,
    internal_error_outcome,
    skipped_notices,
)
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
    """Run every fusion under ``paths`` (this shard of them) with ``jobs`` worker processes."""
    from fusecli.app.pipeline import run_paths
    from fusecli.errors import FusecliError
    from fusecli.load import discover

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
    if jobs <= 1 or len(files) <= 1:
        report = run_paths(files, options, progress) if files else RunReport()
        report.notices[:0] = skipped_notices(skipped)
        return report
    report = RunReport(notices=skipped_notices(skipped))
    devices = _gpu_count()
    workers = min(jobs, len(files))
    context = multiprocessing.get_context("spawn")  # no forked torch state in workers
    slots = context.Queue()
    for worker in range(workers):
        slots.put(worker % devices if devices else None)
    threads = max(1, (os.cpu_count() or 1) // workers)
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start_worker,
        initargs=(slots, threads),
    )
    try:
        futures = [pool.submit(_run_file, path, options) for path in files]
        for path, future in zip(files, futures):
            if progress:
                progress(str(path))
            try:
                report.fusions.extend(future.result())
            except Exception as error:  # the worker died (a crash in native code, the OOM killer)
                report.fusions.append(internal_error_outcome(str(path), path.stem, error))
    except KeyboardInterrupt as stop:
        # Only the parent may have been signalled (timeout -s INT, a CI runner): stop the
        # workers instead of waiting for them, and keep what finished.
        report.interrupted = str(stop) or "interrupted"
        _stop_workers(pool)
    else:
        pool.shutdown()
    return report


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    workers = list(getattr(pool, "_processes", {}).values())  # no public handle on them
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=5)


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def _start_worker(slots: multiprocessing.Queue, threads: int) -> None:
    """Pin this worker to one GPU (before torch initializes CUDA) and its share of threads."""
    device = slots.get()
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    import torch

    torch.set_num_threads(threads)


def _run_file(path: Path, options: RunOptions) -> list[FusionOutcome]:
    from fusecli.app.pipeline import run_paths

    return run_paths([path], options).fusions


# -- failure signatures --------------------------------------------------------------------------


@dataclass(slots=True)
class Cluster:
    signature: str
    members: list[str] = field(default_factory=list)  # "path: name"

    @property
    def count(self) -> int:
        return len(self.members)


_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.+-]+)+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_NAME = re.compile(r"\b[TSV]\d+\b")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def normalize_message(message: str) -> str:
    """The message with what changes from run to run or step to step replaced: paths,
    addresses, value names and numbers (expr positions shift as exprs are removed)."""
    text = _PATH.sub("<path>", message.strip())
    text = _HEX.sub("<addr>", text)
    text = _NAME.sub("<val>", text)
    return _NUMBER.sub("N", text)


def failure_signature(outcome: FusionOutcome) -> str | None:
    """What a failing fusion's failure looks like, with incidental detail removed."""
    if outcome.status == "error":
        return f"error: {normalize_message(outcome.error or '')}"
    if outcome.status != "mismatch":
        return None
    kinds = sorted({_mismatch_kind(diff) for diff in outcome.outputs if not diff.ok})
    return "mismatch: " + ", ".join(kinds)


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


def cluster_failures(report: RunReport) -> list[Cluster]:
    """Failing fusions grouped by signature, the largest group first."""
    clusters: dict[str, Cluster] = {}
    for outcome in report.fusions:
        signature = failure_signature(outcome)
        if signature is not None:
            cluster = clusters.setdefault(signature, Cluster(signature))
            cluster.members.append(f"{outcome.path}: {outcome.name}")
    return sorted(clusters.values(), key=lambda c: (-c.count, c.signature))
