"""A pytest plugin that runs nvFuser's own Python frontend tests against fusecli's frontend.

Loaded by ``run.py`` (``-p plugin``) in a pytest process over nvFuser's ``tests/python`` tree,
extracted outside this repository. For the whole session:

- ``import nvfuser`` and ``import nvfuser_direct`` give fusecli's frontend (``fusecli.load.shim``);
- CUDA devices are mapped to the CPU (``fusecli.load.devices``), fusions execute on ATen as
  ``fusecli run`` does on a CPU host, and the device queries nvFuser's
  test utilities make (``torch.cuda.is_available``, ``get_device_properties``,
  ``get_device_capability``) answer as an H200 (sm_90) would, so that the tests run instead of
  skipping themselves; with ``FUSECLI_CONFORMANCE_DEVICE=cuda`` (``run.py --device cuda``, on a
  GPU host) none of that: CUDA tensors stay on the GPU, fusecli's default executor (generated
  kernels, ATen where none) runs them, the device answers for itself and no address-space cap
  is set (CUDA reserves far more than it uses);
- tests outside fusecli's scope are skipped with a listed reason (``scope.OUT_OF_SCOPE``),
  decided from the test's own source, and so are tests whose own reference is wrong or fails
  on this host's torch (``scope.WRONG_REFERENCE``);
- each test has a time limit; every outcome is written as one JSON line to
  ``$FUSECLI_CONFORMANCE_LOG``, which ``run.py`` tallies.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import signal
from types import SimpleNamespace

import pytest
import torch
from scope import OUT_OF_SCOPE, WRONG_REFERENCE  # tests/conformance/scope.py, on PYTHONPATH

TIME_LIMIT_S = 60
ON_GPU = os.environ.get("FUSECLI_CONFORMANCE_DEVICE", "cpu") == "cuda"

_stack = contextlib.ExitStack()


def _h200_properties(device=None):
    return SimpleNamespace(
        major=9, minor=0, name="NVIDIA H200 (fusecli conformance stand-in)",
        total_memory=141 * 2**30, multi_processor_count=132,
    )


def _install() -> None:
    """The shims, at the plugin's import: nvFuser's conftest files import nvfuser_direct before
    any pytest hook runs."""
    from fusecli.frontend import session
    from fusecli.load.devices import cuda_mapped_to_cpu
    from fusecli.load.shim import nvfuser_modules

    os.environ.setdefault("DEBUG_SERDE", "disable")  # nvFuser's cache serialization: out of scope
    _stack.enter_context(nvfuser_modules())
    if ON_GPU:
        return
    # As fusecli runs a script on the CPU: CPU tensors stand for CUDA ones, ATen executes.
    current = session.current()
    current.map_cuda_to_cpu, current.executor = True, "aten"
    _stack.enter_context(cuda_mapped_to_cpu())
    for name, stand_in in {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "get_device_properties": _h200_properties,
        "get_device_capability": lambda device=None: (9, 0),
        "get_device_name": lambda device=None: _h200_properties().name,
        "current_device": lambda: 0,
    }.items():
        original = getattr(torch.cuda, name, None)
        setattr(torch.cuda, name, stand_in)
        _stack.callback(setattr, torch.cuda, name, original)
    # torch's jit_utils asks the CUDA build's version at import once is_available() says yes
    if not hasattr(torch._C, "_cuda_getCompiledVersion"):
        torch._C._cuda_getCompiledVersion = lambda: 13000
        _stack.callback(delattr, torch._C, "_cuda_getCompiledVersion")


def _limit_memory() -> None:
    """Cap the address space (``FUSECLI_CONFORMANCE_MEMORY_GB``, default 10): a test sized for an
    H200 (2**29 random draws, 100 times) then fails with MemoryError instead of the whole run
    being killed."""
    import resource

    limit = int(float(os.environ.get("FUSECLI_CONFORMANCE_MEMORY_GB", "10")) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


_install()
if not ON_GPU:
    _limit_memory()


def pytest_unconfigure(config) -> None:
    _stack.close()


def _source_of(item) -> str:
    function = getattr(item, "function", None)
    try:
        return inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return ""


def out_of_scope(item) -> str | None:
    text = item.nodeid + "\n" + _source_of(item)
    for reason, pattern in OUT_OF_SCOPE:
        if pattern.search(text):
            return reason
    return None


def wrong_reference(item, answers: dict) -> str | None:
    for reason, pattern, probe in WRONG_REFERENCE:
        if pattern.search(item.nodeid):
            if reason not in answers:
                answers[reason] = probe()
            if answers[reason]:
                return reason
    return None


def pytest_collection_modifyitems(config, items) -> None:
    answers: dict[str, bool] = {}
    for item in items:
        reason = out_of_scope(item)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"out of scope: {reason}"))
            continue
        reason = wrong_reference(item, answers)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def expire(signum, frame):
        raise TimeoutError(f"over {TIME_LIMIT_S} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TIME_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def pytest_runtest_logreport(report) -> None:
    if report.when == "call" or (report.when == "setup" and not report.passed):
        path = os.environ.get("FUSECLI_CONFORMANCE_LOG")
        if not path:
            return
        reason = None
        if report.skipped:
            longrepr = report.longrepr
            if hasattr(report, "wasxfail"):  # an xfail inside the test (nvFuser's JAX guard)
                reason = "xfail: " + (report.wasxfail or str(longrepr).splitlines()[-1])
            else:
                reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        elif report.failed:
            reason = _first_error_line(report)
        record = {"id": report.nodeid, "outcome": report.outcome, "when": report.when,
                  "reason": reason}
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


def pytest_collectreport(report) -> None:
    if report.failed and os.environ.get("FUSECLI_CONFORMANCE_LOG"):
        record = {"id": report.nodeid, "outcome": "failed", "when": "collect",
                  "reason": "collection: " + str(report.longrepr).strip().splitlines()[-1][:300]}
        with open(os.environ["FUSECLI_CONFORMANCE_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


def _first_error_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0][:300] if crash.message else "failed"
    return str(report.longrepr).strip().splitlines()[-1][:300]
