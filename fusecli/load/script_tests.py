"""Repros pasted as tests: a script whose fusions run inside ``test_*`` functions.

nvFuser issues often carry a test from the reporter's suite rather than a script: module-level
code defines ``def test_rope(...)`` (maybe with ``@pytest.mark.parametrize``) or a
``unittest.TestCase``, and nothing calls it. When such a script captures no fusion at module
level, the loader calls its tests as pytest would for the simple cases: functions without
parameters, or whose parameters all come from ``parametrize`` marks (every combination, up to
``MAX_CASES``), and ``TestCase`` methods through ``setUp``/``tearDown``. Tests that need pytest
fixtures are passed over and named. A test's own failure (the repro asserting nvFuser's wrong
result) does not stop the others.
"""

from __future__ import annotations

import inspect
import itertools
import unittest
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_CASES = 256


@dataclass(slots=True)
class ScriptTests:
    """What calling a script's tests did: which ran, which were passed over, what raised."""

    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "name (why)"
    failures: list[tuple[str, BaseException]] = field(default_factory=list)


def defines_tests(namespace: dict[str, Any], filename: str) -> bool:
    return any(True for _ in _test_functions(namespace, filename)) or any(
        True for _ in _test_cases(namespace, filename)
    )


def run_script_tests(
    namespace: dict[str, Any], filename: str, fatal: Callable[[BaseException], bool]
) -> ScriptTests:
    """Call the tests the script defines; exceptions for which ``fatal`` is true propagate
    (fusecli's own errors: an invalid definition), the others are the test's failure."""
    run = ScriptTests()
    for name, function in _test_functions(namespace, filename):
        cases = _cases(function)
        if isinstance(cases, str):
            run.skipped.append(f"{name} ({cases})")
            continue
        for label, arguments in cases:
            _call(run, f"{name}{label}", lambda a=arguments, f=function: f(**a), fatal)
    for name, case_class in _test_cases(namespace, filename):
        for method in unittest.TestLoader().getTestCaseNames(case_class):
            test = case_class(method)
            _call(run, f"{name}.{method}", lambda t=test, m=method: _run_case(t, m), fatal)
    return run


def _call(run: ScriptTests, label: str, body: Callable[[], object],
          fatal: Callable[[BaseException], bool]) -> None:
    run.ran.append(label)
    try:
        body()
    except Exception as error:
        if fatal(error):
            raise
        run.failures.append((label, error))


def _run_case(test: unittest.TestCase, method: str) -> None:
    test.setUp()
    try:
        getattr(test, method)()
    finally:
        test.tearDown()


def _defined_here(value: object, filename: str) -> bool:
    code = getattr(value, "__code__", None)
    return code is not None and code.co_filename == filename


def _test_functions(namespace: dict[str, Any], filename: str) -> Iterator[tuple[str, Any]]:
    for name, value in list(namespace.items()):
        if name.startswith("test") and inspect.isfunction(value) and _defined_here(value, filename):
            yield name, value


def _test_cases(namespace: dict[str, Any], filename: str) -> Iterator[tuple[str, type]]:
    for name, value in list(namespace.items()):
        if (
            inspect.isclass(value)
            and issubclass(value, unittest.TestCase)
            and any(_defined_here(m, filename) for m in vars(value).values())
        ):
            yield name, value


def _cases(function: Any) -> list[tuple[str, dict[str, Any]]] | str:
    """Each call to make, as (label, keyword arguments); or why the test cannot be called."""
    axes: list[list[tuple[str, dict[str, Any]]]] = []
    given: set[str] = set()
    for mark in getattr(function, "pytestmark", []):
        if getattr(mark, "name", None) != "parametrize" or len(mark.args) < 2:
            continue
        names = mark.args[0]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        axis = []
        for index, values in enumerate(mark.args[1]):
            values = getattr(values, "values", values)  # pytest.param(...)
            values = values if len(names) > 1 else (values,)
            axis.append((f"{index}", dict(zip(names, values))))
        axes.append(axis)
        given.update(names)
    parameters = inspect.signature(function).parameters
    missing = [name for name, p in parameters.items()
               if name not in given and p.default is inspect.Parameter.empty]
    if missing:
        return f"needs pytest fixtures: {', '.join(missing)}"
    cases = []
    for combination in itertools.islice(itertools.product(*axes), MAX_CASES):
        arguments: dict[str, Any] = {}
        for _, values in combination:
            arguments.update(values)
        label = "[" + "-".join(label for label, _ in combination) + "]" if combination else ""
        cases.append((label, {k: v for k, v in arguments.items() if k in parameters}))
    return cases
