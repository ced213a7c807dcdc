"""Fresh interpreters for oracle questions, started two ways.

``run_exec``: a new ``python -m fusecli.bisect ...`` per question, exactly what a replay command
runs; importing torch costs about 1.5 s each time. ``Zygotes``: a server process imports torch
and fusecli once and does nothing else; each question runs in a child forked from it, in a
session of its own, with the asker's directory and environment. Each question still gets a
process of its own (its memory, its crash, its timeout), from the same pristine state, for the
price of a fork. Both give the child's ``Verdict``, or what became of it: a hang, a death.

Protocol with a zygote (one question at a time; there is one zygote per parallel job): the
asker writes one JSON line (args, env, cwd, output file); the zygote forks, answers
``started PID`` and, when the child ends, ``exit CODE`` (negative: killed by that signal).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from fusecli.bisect.check import Verdict

PHASE_LINE, VERDICT_LINE = "FUSECLI_PHASE ", "FUSECLI_VERDICT "
PRELOAD = (
    "torch", "fusecli.bisect.__main__", "fusecli.bisect.check", "fusecli.bisect.questions",
    "fusecli.load", "fusecli.reference", "fusecli.compare", "fusecli.runtime",
    "fusecli.runtime.segmented", "fusecli.segment.segmenter", "fusecli.app.pipeline",
)
CLOSE_SECONDS = 5.0  # how long closing a pool waits for its zygotes to exit before killing


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


# -- a new interpreter ---------------------------------------------------------------------------


def run_exec(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> Verdict:
    """Run ``argv`` (a ``python -m fusecli.bisect`` command) in a new interpreter."""
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,  # its own process group, so a hang is killed whole
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        stdout, stderr = process.communicate()
        return _hang(stdout, timeout)
    return interpret(stdout, process.returncode, stderr)


# -- forked from a zygote ------------------------------------------------------------------------


class ZygoteDied(RuntimeError):
    """The zygote itself is gone; the question is asked again in a new interpreter."""


class Zygote:
    """One server process, preloaded, that forks a child per question. ``global_symbols``:
    torch is loaded with RTLD_GLOBAL, as real nvFuser's wheel needs (its questions import
    nvfuser_direct in the child, after the fork: nothing of CUDA is touched before it)."""

    def __init__(self, global_symbols: bool = False) -> None:
        start = "from fusecli.bisect.fresh import serve; serve()"
        if global_symbols:
            start = "import os, sys; sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL); " + start
        self.process = subprocess.Popen(
            [sys.executable, "-c", start],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            bufsize=0,  # unbuffered: select() must see every reply line the zygote wrote
        )

    def ask(self, args: list[str], env: dict[str, str], output: Path,
            timeout: float) -> tuple[int, bool]:
        """Run one question; (exit code, whether it hung and was killed)."""
        request = {"args": args, "env": env, "cwd": os.getcwd(), "output": str(output)}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ZygoteDied() from None
        pid = int(self._reply("started", None))
        hung = False
        try:
            code = self._reply("exit", timeout)
        except TimeoutError:
            hung = True
            _kill_group(pid)
            code = self._reply("exit", None)
        return int(code), hung

    def _reply(self, word: str, timeout: float | None) -> str:
        stream = self.process.stdout
        if timeout is not None and not select.select([stream], [], [], timeout)[0]:
            raise TimeoutError()
        line = stream.readline().decode().split()
        if len(line) != 2 or line[0] != word:
            raise ZygoteDied()
        return line[1]

    def close(self, deadline: float | None = None) -> None:
        """Ask it to exit (end of its input), wait until ``deadline`` (``time.monotonic``;
        default: 5 s from now), then kill it."""
        self.release()
        deadline = time.monotonic() + CLOSE_SECONDS if deadline is None else deadline
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def release(self) -> None:
        """End its input: an idle zygote exits (``close`` waits for it)."""
        if self.process.poll() is None and not self.process.stdin.closed:
            self.process.stdin.close()


class Zygotes:
    """Zygotes, each answering one question at a time, started when needed: as many as
    questions asked at once. One pool serves the whole process (``zygotes()``)."""

    def __init__(self, global_symbols: bool = False) -> None:
        self.global_symbols = global_symbols
        self.idle: queue.Queue[Zygote] = queue.Queue()
        self.started: list[Zygote] = []
        self.size = 1
        self.broken = False
        self._lock = threading.Lock()

    def run(self, args: list[str], timeout: float, env: dict[str, str], fallback: list[str],
            workdir: Path) -> Verdict:
        """Answer ``python -m fusecli.bisect ARGS`` in a forked child; ``fallback`` (the full
        command) runs in a new interpreter if no zygote can be had."""
        if self.broken:
            return run_exec(fallback, timeout, env)
        zygote = self._take()
        workdir.mkdir(parents=True, exist_ok=True)
        output = workdir / f"child{os.getpid()}_{id(zygote)}.log"
        try:
            code, hung = zygote.ask(args, env, output, timeout)
        except ZygoteDied:
            self.broken = True
            return run_exec(fallback, timeout, env)
        self.idle.put(zygote)
        try:
            text = output.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            text = ""
        output.unlink(missing_ok=True)
        return _hang(text, timeout) if hung else interpret(text, code, text)

    def _take(self) -> Zygote:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if len(self.started) < self.size:
                zygote = Zygote(self.global_symbols)
                self.started.append(zygote)
                return zygote
        return self.idle.get()

    def close(self) -> None:
        """Every zygote asked to exit at once, then each waited for until one shared deadline
        (an interpreter with torch loaded takes a few seconds to exit: one after the other,
        a pool of 8 held the bisect's exit for up to 40 s)."""
        for zygote in self.started:
            zygote.release()
        deadline = time.monotonic() + CLOSE_SECONDS
        for zygote in self.started:
            zygote.close(deadline)
        self.started.clear()
        self.idle = queue.Queue()


_pools: dict[bool, Zygotes] = {}


def zygotes(size: int, global_symbols: bool = False) -> Zygotes:
    """The process's pool (one for torch loaded with global symbols, one without), grown to
    ``size`` zygotes at most; closed when the process exits."""
    pool = _pools.get(global_symbols)
    if pool is None:
        pool = _pools[global_symbols] = Zygotes(global_symbols)
        atexit.register(pool.close)
    pool.size = max(pool.size, size)
    return pool


def serve() -> None:
    """The zygote: preload, then fork a child per request line on stdin (see above)."""
    for module in PRELOAD:
        importlib.import_module(module)
    replies = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os.setsid()  # a session of its own: a hang is killed with whatever it started
            os.close(replies)
            os.dup2(devnull, 0)
            _child(request["args"], request["env"], request["cwd"], request["output"])
        os.write(replies, f"started {pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(replies, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())


def _child(args: list[str], env: dict[str, str], cwd: str, output: str) -> None:
    """In the forked child: the asker's directory and environment, output to a file."""
    code = 1
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(descriptor, 1)
        os.dup2(descriptor, 2)
        from fusecli.bisect.__main__ import main

        code = main(args)
    except BaseException:  # reported as the interpreter would; the exit status says 1
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# -- what became of a child ----------------------------------------------------------------------


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _phase(stdout: str) -> str:
    phases = [line[len(PHASE_LINE):].strip() for line in stdout.splitlines()
              if line.startswith(PHASE_LINE)]
    return phases[-1] if phases else "load"


def _hang(stdout: str, timeout: float) -> Verdict:
    return Verdict("hang", message=f"no answer within {timeout:g}s", phase=_phase(stdout),
                   seconds=timeout)


def interpret(stdout: str, returncode: int, stderr: str) -> Verdict:
    """The child's verdict line; else what killed it (a signal, an abrupt exit)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(VERDICT_LINE):
            return Verdict.from_json(line[len(VERDICT_LINE):])
    if returncode < 0:
        try:
            cause = signal.Signals(-returncode).name
        except ValueError:
            cause = f"signal {-returncode}"
    else:
        cause = f"exit status {returncode}"
    lines = [line.strip() for line in stderr.splitlines()
             if line.strip() and not line.startswith(PHASE_LINE)]
    message = lines[-1] if lines else f"the interpreter died ({cause})"
    return Verdict("died", cause, message, _phase(stdout))
