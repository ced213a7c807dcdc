"""One file of a run in a worker process of its own, so that no file can break the run.

A script is code: it may call ``os._exit``, kill itself, segfault inside nvFuser, raise
``KeyboardInterrupt``, ignore ``SIGALRM`` and loop forever, or write to file descriptor 1.
``WorkerProcesses`` runs each file in a fresh ``python -m fusecli.app.worker`` (never a fork of
this torch-loaded process), in a session of its own, and turns whatever happens to it into that
file's outcomes:

- the worker's descriptors 1 and 2 are one pipe to the parent, which relays it to stderr and
  keeps its last lines as the ``detail`` of a worker that died: nothing the script or the
  engine writes reaches the parent's stdout;
- the request (a pickle) arrives on stdin; results and heartbeats (one per file phase: the
  load, each fusion) go back as pickles on a pipe of their own (``pass_fds``);
- a phase may take ``--timeout`` (the worker's own alarm reports it) plus a grace; past that,
  the worker's whole process group is killed with SIGKILL;
- a worker that dies without reporting is one error record naming its exit status or signal.
"""

from __future__ import annotations

import collections
import contextlib
import faulthandler
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fusecli.app.pipeline import FusionOutcome, RunOptions
from fusecli.errors import PipelineError

if TYPE_CHECKING:
    from fusecli.app.explain import ExplainOptions

STARTUP_GRACE = 20.0  # seconds, past --timeout, to start Python and import torch (and nvFuser)
PHASE_GRACE = 3.0  # seconds, past --timeout, for the worker's own alarm to report a slow phase
DRAIN_SECONDS = 1.0  # how long output is still read once the worker is gone
DETAIL_LINES = 40
_HEADER = struct.Struct(">Q")  # the length of each pickled message on the result pipe
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)

_NATIVE_CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT}


def death_message(returncode: int) -> str:
    """Why a process ended without reporting, from its exit status (negative: a signal)."""
    if returncode >= 0:
        return (
            f"the worker exited with status {returncode} before reporting "
            "(os._exit or sys.exit in the script?)"
        )
    try:
        number = signal.Signals(-returncode)
    except ValueError:
        return f"the worker died: killed by signal {-returncode}"
    if number in _NATIVE_CRASHES:
        why = " (a crash in native code: nvFuser or a CUDA library)"
    elif number == signal.SIGKILL:
        why = " (the out-of-memory killer, or the script itself?)"
    else:
        why = ""
    return f"the worker died: killed by signal {number.name}{why}"


def timeout_message(seconds: float) -> str:
    return f"took longer than --timeout {seconds:g} s; the worker was killed"


@dataclass(slots=True)
class Finished:
    """How one worker ended: its result if it sent one, else why not."""

    result: Any = None
    reported: bool = False
    returncode: int | None = None
    timed_out: bool = False
    output: str = ""  # its last DETAIL_LINES lines of stdout and stderr

    @property
    def failure(self) -> str:
        """The one-line reason a worker that did not report gave no result."""
        if self.timed_out:
            return "timed out"
        return death_message(self.returncode if self.returncode is not None else 0)


class WorkerProcesses:
    """The worker processes of one run, each started for one request; ``stop`` kills them
    all (Ctrl-C or SIGTERM of the parent) and refuses new ones."""

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self._echo = echo if echo is not None else _to_stderr
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen] = set()
        self._stopped = False

    def run_file(
        self, path: Path, options: RunOptions, env: Mapping[str, str] | None = None
    ) -> list[FusionOutcome]:
        """``pipeline.run_file(path, options)`` in a worker: its outcomes, or one error
        record saying how the worker died."""
        finished = self._call({"task": "run", "path": path, "options": options}, options, env)
        if finished.reported:
            return finished.result
        error = (
            timeout_message(options.timeout) if finished.timed_out and options.timeout
            else finished.failure
        )
        return [
            FusionOutcome(
                path=str(path), name=path.stem, status="error", error=error,
                exit_code=PipelineError.exit_code,
                detail=finished.output or "(the worker wrote nothing to stdout or stderr)",
            )
        ]

    def explain_file(self, path: Path, options: ExplainOptions) -> list[Any]:
        """``explain_path(path, options)`` in a worker: its outcomes, or one ``FileFailure``
        saying why it gave none (the file's error, or how the worker died)."""
        from fusecli.app.explain import FileFailure

        finished = self._call({"task": "explain", "path": path, "options": options}, options,
                              None)
        if finished.reported:
            return finished.result
        error = (
            timeout_message(options.timeout) if finished.timed_out and options.timeout
            else finished.failure
        )
        detail = finished.output or "(the worker wrote nothing to stdout or stderr)"
        return [FileFailure(path, error, PipelineError.exit_code, detail)]

    def direct_script(self, path: Path, name: str, options: RunOptions,
                      checked: bool = False) -> str:
        """The fusion ``name`` of ``path`` as a plain nvfuser_direct script, made in a worker
        (loading runs the script); ``checked``: one that checks its outputs too
        (``worker_tasks.direct_script``). PipelineError when it cannot be made."""
        request = {"task": "direct_script", "path": path, "name": name, "options": options,
                   "checked": checked}
        finished = self._call(request, options, None)
        if not finished.reported:
            raise PipelineError(f"could not write it as a plain script: {finished.failure}")
        kind, text = finished.result
        if kind != "script":
            raise PipelineError(f"could not write it as a plain script: {text}")
        return text

    def convert_file(self, source: Path, output: Path | None, to: str | None, force: bool,
                     timeout: float | None) -> str:
        """``load.convert.convert_file`` in a worker (loading runs the script): the text, or
        the error it raised (an InputError stays one: exit 2), or PipelineError saying how the
        worker died or that it took longer than ``timeout``."""
        from fusecli.errors import FusecliError, InputError

        request = {"task": "convert", "path": source, "output": output, "to": to,
                   "force": force, "timeout": timeout}
        finished = self._call(request, RunOptions(timeout=timeout), None)
        if not finished.reported:
            error = (timeout_message(timeout) if finished.timed_out and timeout
                     else finished.failure)
            raise PipelineError(error, str(source))
        kind, value = finished.result
        if kind == "text":
            return value
        message, exit_code = value
        error_class = next((c for c in (InputError, PipelineError) if c.exit_code == exit_code),
                           FusecliError)
        error = error_class(message)
        error.exit_code = exit_code
        raise error

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            live = list(self._live)
        for process in live:
            _kill_group(process)

    def _call(
        self, request: dict[str, Any], options: RunOptions | ExplainOptions,
        env: Mapping[str, str] | None,
    ) -> Finished:
        read_end, write_end = os.pipe()
        try:
            with self._lock:
                if self._stopped:
                    raise PipelineError("the run was stopped before this file started")
                process = subprocess.Popen(
                    [sys.executable, "-m", "fusecli.app.worker", str(write_end),
                     *_engine_flags(options)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    pass_fds=(write_end,), start_new_session=True, env=worker_env(env),
                )
                self._live.add(process)
        finally:
            os.close(write_end)
        try:
            with contextlib.suppress(BrokenPipeError):  # it died before reading: see below
                process.stdin.write(pickle.dumps(request))
                process.stdin.close()
            return self._watch(process, read_end, options.timeout)
        finally:
            _kill_group(process)  # what the script started and left behind
            process.wait()
            os.close(read_end)
            with self._lock:
                self._live.discard(process)

    def _watch(self, process: subprocess.Popen, results: int, timeout: float | None) -> Finished:
        finished = Finished()
        tail: collections.deque[str] = collections.deque(maxlen=DETAIL_LINES)
        received, partial = bytearray(), bytearray()
        selector = selectors.DefaultSelector()
        selector.register(results, selectors.EVENT_READ)
        selector.register(process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout + STARTUP_GRACE if timeout else None
        gone_at: float | None = None
        while selector.get_map():
            now = time.monotonic()
            if deadline is not None and now > deadline and process.poll() is None:
                finished.timed_out = True
                _kill_group(process)
                deadline = None
            if gone_at is None and process.poll() is not None:
                gone_at = now  # its leftovers may hold the pipes open: read a moment more
            if gone_at is not None and now - gone_at > DRAIN_SECONDS:
                break
            waits = [0.2] + ([deadline - now] if deadline is not None else [])
            for key, _ in selector.select(max(0.0, min(waits))):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fd == results:
                    received += chunk
                    for kind, value in _messages(received):
                        if kind == "phase" and timeout and deadline is not None:
                            deadline = time.monotonic() + timeout + PHASE_GRACE
                        elif kind == "result":
                            finished.result, finished.reported = value, True
                else:
                    partial += chunk
                    self._relay(partial, tail)
        selector.close()
        if partial:
            self._relay(partial + b"\n", tail)
        if not finished.reported:
            _kill_group(process)
        finished.returncode = process.wait()
        finished.output = "\n".join(tail)
        return finished

    def _relay(self, partial: bytearray, tail: collections.deque[str]) -> None:
        """Complete lines of a worker's output: shown on stderr, the last ones kept."""
        end = partial.rfind(b"\n")
        if end < 0:
            return
        text = partial[: end + 1].decode("utf-8", "replace")
        del partial[: end + 1]
        tail.extend(text.splitlines())
        with self._lock:
            self._echo(text)


def worker_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a worker: fusecli importable from where it was loaded,
    output unbuffered (the lines before a crash are its detail), plus ``extra``."""
    env = {**os.environ, **(extra or {})}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([_PACKAGE_ROOT, *paths]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _engine_flags(options: RunOptions | ExplainOptions) -> list[str]:
    """The worker's own command-line flags that ``prepare_dlopen`` reads, as ``main`` does."""
    flags = ["--engine", options.engine]
    return [*flags, "--compare-engines"] if options.compare_engines else flags


def _messages(buffer: bytearray) -> list[tuple[str, Any]]:
    """The complete messages at the start of ``buffer``, removed from it."""
    messages = []
    while len(buffer) >= _HEADER.size:
        (size,) = _HEADER.unpack_from(buffer)
        if len(buffer) < _HEADER.size + size:
            break
        messages.append(pickle.loads(bytes(buffer[_HEADER.size: _HEADER.size + size])))
        del buffer[: _HEADER.size + size]
    return messages


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


# -- the worker's side ---------------------------------------------------------------------------


def main(argv: list[str]) -> None:
    """``python -m fusecli.app.worker RESULT_FD [--engine E] [--compare-engines]``."""
    from fusecli.engines.nvfuser import prepare_dlopen

    prepare_dlopen(argv[1:])  # nvFuser's wheel loads only so, and only before torch
    faulthandler.enable()  # a native crash prints the Python stack: the record's detail
    channel = os.fdopen(int(argv[0]), "wb")
    request = pickle.load(sys.stdin.buffer)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the script reads nothing of ours
    os.close(devnull)

    owner = os.getpid()

    def send(kind: str, value: Any) -> None:
        if os.getpid() != owner:  # a child the script forked, run on into fusecli: not ours
            os._exit(0)
        payload = pickle.dumps((kind, value))
        channel.write(_HEADER.pack(len(payload)) + payload)
        channel.flush()

    from fusecli.app import worker_tasks as tasks

    if request["task"] == "run":
        outcomes = tasks.run(request["path"], request["options"], send)
        try:
            send("result", outcomes)
        except Exception as error:  # an outcome that does not pickle: a fusecli bug
            from fusecli.app.pipeline import internal_error_outcome

            path = request["path"]
            send("result", [internal_error_outcome(str(path), path.stem, error)])
    elif request["task"] == "explain":
        send("phase", str(request["path"]))
        entries = tasks.explain(request["path"], request["options"])
        try:
            send("result", entries)
        except Exception as error:  # an outcome that does not pickle: a fusecli bug
            from fusecli.app.explain import FileFailure

            message = f"internal error: {type(error).__name__}: {error}"
            send("result", [FileFailure(request["path"], message, PipelineError.exit_code)])
    elif request["task"] == "convert":
        send("phase", str(request["path"]))
        send("result", tasks.convert(request))
    else:
        send("result", tasks.direct_script(request["path"], request["name"], request["options"],
                                           request.get("checked", False)))
    channel.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # reported: what native libraries do at exit cannot change the result


if __name__ == "__main__":
    main(sys.argv[1:])
