"""Whose bug a failure under real nvFuser is: nvFuser's, or fusecli's translation of the fusion.

``--engine nvfuser`` runs a repro through nvFuser after rewriting it for ``nvfuser_direct``, so a
failure can come from nvFuser or from that rewrite. The question is asked the C-Reduce way: the
fusion, written as a plain nvfuser_direct script with no fusecli import
(``fusecli.engines.nvfuser.direct_script``), runs with this Python in a fresh process. When it
fails with the same signature, nvFuser fails that way through its own API: ``nvfuser``.
Otherwise (it passes, or fails another way) the failure came from the translation:
``translation``, with how the plain script ran. A wrong result is asked the same way, of a
plain script that checks its own outputs against fusecli's reference and error bounds
(``fusecli.app.plain_repro``): nvFuser's when that check fails there too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fusecli.app.corpus import Cluster, error_failure_signature
from fusecli.app.pipeline import RunOptions
from fusecli.app.worker import WorkerProcesses, death_message, timeout_message
from fusecli.errors import FusecliError, PipelineError

NVFUSER, TRANSLATION = "nvfuser", "translation"
PASSES = "passes"


@dataclass(frozen=True, slots=True)
class Attribution:
    verdict: str  # NVFUSER or TRANSLATION
    plain: str  # how the plain script ran: PASSES, or its failure's signature


@dataclass(frozen=True, slots=True)
class ScriptRun:
    """What became of a script run alone: ``status`` pass, crash (it exited non-zero), died
    (a signal) or hang (killed at the timeout)."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        """Both streams, stderr last (where a traceback's final exception is)."""
        return self.stdout + self.stderr


def run_script(path: Path, timeout: float | None, env: dict[str, str] | None = None
               ) -> ScriptRun:
    """``python PATH`` with this Python in a fresh process, in the script's folder and a
    session of its own; killed with all it started at ``timeout``, and when it ends."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, path.name], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True, cwd=path.parent,
        env=_child_environment(env or {}),
    )
    hung = False
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
    finally:  # done, timed out or interrupted: what it started goes with it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    if hung:
        stdout, stderr = process.communicate()
    code = process.returncode
    status = "hang" if hung else "pass" if code == 0 else "died" if code < 0 else "crash"
    return ScriptRun(status, None if hung else code, stdout.decode("utf-8", "replace"),
                     stderr.decode("utf-8", "replace"), time.perf_counter() - started)


def _child_environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment and ``extra``, with PYTHONPATH's entries made absolute
    against this process's folder: the child runs in the script's folder, where a relative
    entry (``PYTHONPATH=tests/standin``) would name another place."""
    environment = {**os.environ, **extra}
    entries = environment.get("PYTHONPATH")
    if entries:
        environment["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(entry) if entry else os.getcwd() for entry in entries.split(os.pathsep))
    return environment


def run_alone(script: str, timeout: float | None) -> ScriptRun:
    """``script`` written to a folder of its own and run there (``run_script``)."""
    with tempfile.TemporaryDirectory(prefix="fusecli-plain-") as folder:
        path = Path(folder) / "plain.py"
        path.write_text(script, encoding="utf-8")
        return run_script(path, timeout)


def plain_signature(script: str, timeout: float | None) -> str | None:
    """Run ``script`` alone (``run_script``); None when it passes, else its failure's
    signature, made as a corpus run makes a failing fusion's."""
    run = run_alone(script, timeout)
    if run.status == "hang":
        return error_failure_signature(timeout_message(timeout or 0), None)
    if run.status == "pass":
        return None
    return error_failure_signature(death_message(run.returncode), run.output)


def attribute_script(script: str, signature: str, timeout: float | None) -> Attribution:
    """``nvfuser`` when the plain script fails with ``signature``, else ``translation``."""
    plain = plain_signature(script, timeout)
    verdict = NVFUSER if plain == signature else TRANSLATION
    return Attribution(verdict, plain or PASSES)


def attribute_cluster(
    cluster: Cluster, options: RunOptions, workers: WorkerProcesses | None = None
) -> Attribution:
    """The attribution of a cluster of nvFuser failures, asked of its smallest member; sets
    the cluster's ``attribution`` and ``plain``. PipelineError when the member cannot be
    written as a plain script (loading it, in a worker, failed)."""
    outcome = cluster.smallest_outcome
    if outcome is None:
        raise PipelineError(f"the cluster {cluster.signature!r} has no members")
    workers = workers if workers is not None else WorkerProcesses()
    wrong = outcome.status == "mismatch"
    script = workers.direct_script(Path(outcome.path), outcome.name, options, checked=wrong)
    if wrong:
        attribution = attribute_wrong_result(script, options.timeout)
    else:
        attribution = attribute_script(script, cluster.signature, options.timeout)
    cluster.attribution, cluster.plain = attribution.verdict, attribution.plain
    return attribution


def attribute_wrong_result(script: str, timeout: float | None) -> Attribution:
    """``nvfuser`` when the self-checking plain script's check fails (an output of another
    shape, or outside its bound), else ``translation``, with how it ran."""
    run = run_alone(script, timeout)
    if run.status == "pass":
        return Attribution(TRANSLATION, PASSES)
    lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
    if run.status == "crash" and lines and lines[-1].startswith("AssertionError: output "):
        return Attribution(NVFUSER, "wrong result: " + lines[-1].removeprefix("AssertionError: "))
    if run.status == "hang":
        plain = error_failure_signature(timeout_message(timeout or 0), None)
    elif run.status == "died":
        plain = error_failure_signature(death_message(run.returncode), run.output)
    else:
        plain = error_failure_signature(None, run.output)
    return Attribution(TRANSLATION, plain)


def attribute_clusters(clusters: list[Cluster], options: RunOptions, jobs: int = 1) -> None:
    """``--engine nvfuser``: attribute each cluster of pipeline failures (wrong results, and
    exit 3: nvFuser's errors and crashes, not bad input), ``jobs`` clusters at once (each runs
    processes: a worker writes the plain script, then the script runs alone); with fusecli's
    engine there is nothing to attribute."""
    if options.engine == "fusecli":
        return
    workers = WorkerProcesses()
    todo = [
        cluster for cluster in clusters
        if (outcome := cluster.smallest_outcome) is not None
        and (outcome.status == "mismatch"
             or outcome.status == "error" and outcome.exit_code == 3)
    ]

    def attribute(cluster: Cluster) -> None:
        try:
            attribute_cluster(cluster, options, workers)
        except FusecliError as error:
            cluster.plain = str(error)

    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo) or 1)))
    try:
        for _ in pool.map(attribute, todo):
            pass
    except BaseException:  # Ctrl-C: the workers go now; the scripts end at their timeout
        workers.stop()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
