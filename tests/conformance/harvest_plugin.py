"""A pytest plugin that keeps every fusion nvFuser's own tests execute, as a repro script.

Loaded by ``scripts/harvest-nvfuser-tests.py`` (``-p harvest_plugin``) in a pytest process over
an exported nvFuser suite (``tests/conformance/run.py --export``). It wraps ``execute`` of the
``FusionDefinition`` of the frontend the suite imports (``$FUSECLI_HARVEST_MODULE``:
``nvfuser_direct``, or legacy ``nvfuser``): real nvFuser on a GPU host, fusecli's frontend
where ``plugin.py`` maps it (``--device cpu``). Before the real execute runs, the fusion's
``repro_script_for(inputs)``, ending in ``fd.execute(inputs)``, is written to
``$FUSECLI_HARVEST_OUT/<file>__<test>__<k>.py``: a fusion whose execution kills the process
is kept too. A definition only complete once executed (a legacy ``FusionDefinition`` subclass
with ``definition()``) is written after execute instead.

- ``<file>`` is the test file's name without ``test_`` (fusecli's discovery passes over
  ``test_*.py`` files in a folder: they are pytest modules, not scripts), ``<test>`` the test's
  name with its parameters, ``<k>`` the execute call's ordinal within the test;
- a fusion already kept, by any process of the harvest (the same definition text and input
  shapes, dtypes, strides and devices), is not written again: the first one is kept
  (``$FUSECLI_HARVEST_SEEN``, a folder of markers created exclusively);
- harvesting never fails a test: its errors are logged, not raised. Every harvest, duplicate
  and error is one JSON line in ``$FUSECLI_HARVEST_LOG``, which the script tallies;
- once ``$FUSECLI_HARVEST_DEADLINE`` (seconds since the epoch) has passed, the remaining tests
  are skipped, so that the run ends with what it harvested; without ``plugin.py`` (which has a
  time limit of its own) each test has ``$FUSECLI_HARVEST_TIME_LIMIT_S``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("FUSECLI_HARVEST_DEVICE") == "cuda":
    # real nvFuser's wheel, before anything imports torch (.nvfuser/activate.sh says why)
    sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)

INCOMPLETE = "nvfuser_incomplete_fusion"  # legacy repr of a definition not yet made
NAME_LENGTH = 150  # characters of a harvested file's name, before ``.py``


def input_signature(value: Any) -> str:
    """What of an input decides a fusion's segmentation: a tensor's dtype, shape, strides and
    device type; a scalar's type (not its value)."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"{value.dtype}{tuple(value.shape)}{value.stride()}@{value.device.type}"
    return type(value).__name__


def fusion_key(definition: str, inputs: list) -> str:
    """The identity of a harvested fusion: its definition text and its inputs' signatures."""
    text = definition + "\n" + "\n".join(input_signature(value) for value in inputs)
    return hashlib.sha256(text.encode()).hexdigest()


def harvest_name(nodeid: str, ordinal: int, prefix: str = "") -> str:
    """``<file>__<test>__<k>`` for the ``ordinal``-th execute of the test ``nodeid``, as a
    file name: other characters than letters, digits and ``_`` become ``_``; a name too long
    is cut and ends in a hash of the whole, so that two tests never share one."""
    path, _, test = nodeid.partition("::")
    stem = Path(path).stem.removeprefix("test_")
    test = re.sub(r"\W", "_", test.replace("::", "__")).strip("_")
    name = f"{prefix}{stem}__{test}"
    if len(name) > NAME_LENGTH:
        name = name[: NAME_LENGTH - 9] + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name}__{ordinal}"


def with_execute_line(script: str) -> str:
    """The script, ending in ``fd.execute(inputs)`` (added where the frontend left it out)."""
    if re.search(r"^fd\.execute\(inputs\)\s*$", script, re.MULTILINE):
        return script
    return script.rstrip("\n") + "\nfd.execute(inputs)\n"


def claim(seen: Path, key: str) -> bool:
    """Whether ``key`` is new to the whole harvest; if so it is now taken (atomic across
    processes: the marker file is created exclusively)."""
    try:
        os.close(os.open(seen / key, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


class Harvester:
    """Writes the fusions the running test executes; one per process."""

    def __init__(self, out: Path, seen: Path, log: Path, prefix: str = "") -> None:
        self.out, self.seen, self.log, self.prefix = out, seen, log, prefix
        self.test = "<no test>"
        self.ordinal = 0
        self.executing = False  # an execute inside execute (validate's) is the same fusion

    def start_test(self, nodeid: str) -> None:
        self.test, self.ordinal = nodeid, 0

    def record(self, event: str, **fields: Any) -> None:
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(json.dumps({"test": self.test, "event": event, **fields}) + "\n")

    def harvest(self, fd: Any, inputs: list, ordinal: int) -> bool:
        """Write ``fd``'s repro for ``inputs`` unless a duplicate; False while its definition
        is incomplete (to be harvested after execute)."""
        definition = repr(fd)
        if INCOMPLETE in definition:
            return False
        key = fusion_key(definition, inputs)
        if not claim(self.seen, key):
            self.record("duplicate", key=key)
            return True
        name = harvest_name(self.test, ordinal, self.prefix)
        script = with_execute_line(fd.repro_script_for(inputs))
        (self.out / f"{name}.py").write_text(script, encoding="utf-8")
        self.record("harvested", name=name, key=key)
        return True

    def harvest_safely(self, fd: Any, inputs: Any, ordinal: int) -> bool:
        """``harvest``, its errors logged and never raised: True when done (or failed)."""
        try:
            return self.harvest(fd, list(inputs), ordinal)
        except Exception as error:  # harvesting must not fail the test
            message = f"{type(error).__name__}: {error}".splitlines()[0][:300]
            self.record("error", error=message)
            return True

    def wrap(self, cls: type) -> None:
        """Make ``cls.execute`` harvest before (or, when incomplete, after) executing."""
        execute = cls.execute

        @functools.wraps(execute)
        def harvesting_execute(fd, inputs, *args, **kwargs):
            if self.executing:
                return execute(fd, inputs, *args, **kwargs)
            ordinal, self.ordinal = self.ordinal, self.ordinal + 1
            done = self.harvest_safely(fd, inputs, ordinal)
            self.executing = True
            try:
                outputs = execute(fd, inputs, *args, **kwargs)
            finally:
                self.executing = False
            if not done:
                self.harvest_safely(fd, inputs, ordinal)
            return outputs

        cls.execute = harvesting_execute


_harvester: Harvester | None = None


def pytest_configure(config) -> None:
    """Wrap the frontend's execute (``plugin.py``, when loaded, has mapped it to fusecli's by
    now), and without ``plugin.py`` limit each test's time."""
    global _harvester
    env = os.environ
    _harvester = Harvester(Path(env["FUSECLI_HARVEST_OUT"]), Path(env["FUSECLI_HARVEST_SEEN"]),
                           Path(env["FUSECLI_HARVEST_LOG"]), env.get("FUSECLI_HARVEST_PREFIX", ""))
    module = importlib.import_module(env.get("FUSECLI_HARVEST_MODULE", "nvfuser_direct"))
    _harvester.wrap(module.FusionDefinition)
    if not config.pluginmanager.has_plugin("plugin"):
        config.pluginmanager.register(TimeLimit(int(env.get("FUSECLI_HARVEST_TIME_LIMIT_S", 60))))


@pytest.hookimpl(tryfirst=True)  # before fixtures run: they may execute fusions too
def pytest_runtest_setup(item) -> None:
    _harvester.start_test(item.nodeid)
    deadline = os.environ.get("FUSECLI_HARVEST_DEADLINE")
    if deadline and time.time() > float(deadline):
        pytest.skip("the harvest's time budget is spent")


class TimeLimit:
    """Each test's call ends in a TimeoutError after ``seconds`` (what Python code can stop:
    a kernel compiling in C++ finishes first)."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def _expire(self, signum, frame):
        raise TimeoutError(f"over {self.seconds} s")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        previous = signal.signal(signal.SIGALRM, self._expire)
        signal.alarm(self.seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
