"""Loading a Python repro script: run it verbatim, and capture what it asks nvFuser to run.

The script runs as ``python script.py`` would run it (``__name__ == "__main__"``, its folder on
``sys.path``), with three differences while it runs:

- ``import nvfuser`` and ``import nvfuser_direct`` give fusecli's frontend (``load.shim``);
- every ``fd.execute(inputs)`` is recorded with a copy of its inputs and returns eager torch's
  outputs instead of running a fusion (running is the pipeline's job, later);
- without CUDA (or with ``device="cpu"``) its CUDA device requests go to the CPU
  (``load.devices``), with one notice.

What the script prints goes to stderr, so that stdout stays the CLI's. Global torch state a
script may change (RNG, default dtype and device, grad mode) and ``sys.argv`` / ``sys.path``
are put back afterwards.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fusecli.errors import FusecliError, InputError
from fusecli.frontend import session as frontend_session
from fusecli.frontend.definition import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.builder import DefinitionError
from fusecli.ir.nodes import TensorView, evaluate_extent
from fusecli.load.devices import cuda_mapped_to_cpu, resolve_device
from fusecli.load.failures import raise_user_error, user_line
from fusecli.load.inputs import clone_exact
from fusecli.load.model import LoadedFusion
from fusecli.load.script_tests import ScriptTests, defines_tests, run_script_tests
from fusecli.load.shim import nvfuser_modules
from fusecli.load.source_text import read_source
from fusecli.runtime.bind import bind_inputs


@dataclass(slots=True)
class _Captured:
    fd: FusionDefinition
    inputs: list[Any]
    line: int | None
    repeats: int = 0  # later calls with the same definition and input signature


def call_signature(fd: FusionDefinition, inputs: list[Any]) -> tuple:
    """What makes two execute calls the same check: the definition (as nvFuser would print it,
    so a definition rebuilt in a loop is the same) and each input's dtype, shape, strides and
    device, or a scalar's type and value."""
    described = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            described.append((
                str(value.dtype), tuple(value.shape), tuple(value.stride()), value.device.type,
            ))
        else:
            described.append((type(value).__name__, repr(value)))
    return repr(fd), tuple(described)


class _CallRecorder(list):
    """``Session.calls`` for a loaded script.

    The session appends each call *before* running it, so this is where the inputs are copied
    untouched (a fusion with an aliased output writes into its input) and where the script's
    line of the call is on the stack. A call with the signature of an earlier one (a warm-up
    or timing loop) is counted, not copied, unless every call is to be kept; when it is given
    the very tensors of that call, unchanged since, it gets that call's outputs instead of a
    new evaluation. Without ``evaluate`` (explaining, not running) a call gets zero tensors of
    its outputs' shapes and dtypes: eager torch never runs, so inputs it would refuse still load.
    """

    def __init__(self, filename: str, all_calls: bool = False, evaluate: bool = True) -> None:
        super().__init__()
        self.filename = filename
        self.all_calls = all_calls
        self.evaluate = evaluate
        self.captured: list[_Captured] = []
        self._seen: dict[tuple, tuple[_Captured, frontend_session.ExecuteCall, tuple, bool]] = {}

    def append(self, call: frontend_session.ExecuteCall) -> None:
        inputs = list(call.inputs)
        if not self.evaluate:
            call.outputs = placeholder_outputs(call.fd, inputs)
        key = None if self.all_calls else call_signature(call.fd, inputs)
        earlier = self._seen.get(key) if key is not None else None
        if earlier is not None:
            captured, first_call, versions, refused = earlier
            captured.repeats += 1
            if call.outputs is None and (refused or _versions(inputs) == versions):
                # The same tensors, unchanged: the same results; or inputs of a signature
                # already refused (the signature decides binding): no outputs again.
                call.outputs = [] if refused else first_call.outputs
            return
        refused = self.evaluate and not _binds(call.fd, inputs)
        if refused:
            # Inputs nvFuser would refuse at execute: the fusion is still captured, and its run
            # reports the refusal as its own error (exit 2); the script goes on with no outputs.
            call.outputs = []
        super().append(call)
        captured = _Captured(call.fd, clone_exact(inputs), _calling_line(self.filename))
        self.captured.append(captured)
        if key is not None:
            self._seen[key] = (captured, call, _versions(inputs), refused)


def _versions(inputs: list[Any]) -> tuple:
    """Which objects, in which state: a tensor's identity and version counter (bumped by every
    in-place change), a scalar's value."""
    return tuple(
        (id(v), v._version) if isinstance(v, torch.Tensor) else (type(v), repr(v)) for v in inputs
    )


def _binds(fd: FusionDefinition, inputs: list[Any]) -> bool:
    try:
        bind_inputs(fd.fusion, inputs)
    except FusecliError:
        return False
    return True


def placeholder_outputs(fd: FusionDefinition, inputs: list[Any]) -> list[Any]:
    """Zero tensors with the shapes and dtypes the fusion's outputs would have for ``inputs``
    (sizes the inputs do not decide count as 1); nothing when the inputs do not fit."""
    try:
        extents = bind_inputs(fd.fusion, inputs).extents
    except FusecliError:
        return []
    outputs = []
    for output in fd.fusion.outputs:
        value = output.value
        if output.alias_input is not None or not isinstance(value, TensorView):
            continue
        shape = []
        for extent in value.shape:
            try:
                shape.append(evaluate_extent(extent, extents))
            except (KeyError, TypeError, ZeroDivisionError):
                shape.append(1)
        outputs.append(torch.zeros(shape, dtype=dt.to_torch(value.dtype)))
    return outputs


def _calling_line(filename: str) -> int | None:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


def load_python(
    path: str | Path,
    *,
    device: str = "auto",
    seed: int = 0,
    all_calls: bool = False,
    evaluate: bool = True,
    source: str | None = None,
) -> list[LoadedFusion]:
    """Run the repro script at ``path``; one LoadedFusion per distinct ``fd.execute`` call.

    Calls with the same definition and input signature (``call_signature``) are one fusion,
    checked once; ``all_calls`` keeps every call. Without ``evaluate``, the script's execute
    calls return placeholders instead of eager torch's outputs (``_CallRecorder``).

    A script that makes no call but leaves ``fd`` and ``inputs`` defined gives those. Torch is
    seeded with ``seed`` first, so that random inputs are the same on every load. Errors in
    the script become InputError naming the script's line.

    ``source``: the script's text when it is not the whole file (a repro taken from an issue or
    a log, at the file's own line numbers); messages and lines still name ``path``.
    """
    path = Path(path)
    filename = str(path)
    if source is None:
        try:
            source = read_source(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the script: {exc}", filename) from None
    try:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec")
    except SyntaxError as exc:
        raise InputError(f"syntax error: {exc.msg}", f"{filename}:{exc.lineno}") from None

    map_to_cpu = resolve_device(device) == "cpu"
    recorder = _CallRecorder(filename, all_calls, evaluate)
    session = frontend_session.Session(
        map_cuda_to_cpu=map_to_cpu, run_executes=False, calls=recorder
    )
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__file__": filename,
        "__builtins__": builtins,
    }
    mapping_context = cuda_mapped_to_cpu() if map_to_cpu else contextlib.nullcontext()
    with (
        _script_environment(path, seed),
        nvfuser_modules(),
        frontend_session.capturing(session),
        mapping_context as mapping,
    ):
        def after_a_fusion(exc: BaseException) -> bool:
            # The script's own code failing once a fusion was captured (a trailing assert on
            # nvFuser's wrong result, a print): the fusion still runs; fusecli's errors do not.
            return bool(recorder.captured) and not _raised_by_fusecli(exc)

        script_notices = []
        trailing = _run_guarded(filename, lambda: _run_script(code, namespace), after_a_fusion)
        if trailing is not None:
            script_notices.append(f"{trailing}, after its fd.execute call(s): ignored")
        if not recorder.captured and trailing is None and defines_tests(namespace, filename):
            script_notices += _run_tests(namespace, filename)
        captured = recorder.captured or _captured_globals(namespace, tree, filename)

    if not captured:
        raise InputError(
            "the script runs no fusion: it makes no fd.execute(inputs) call and leaves no "
            "`fd` and `inputs` defined",
            filename,
        )
    notices = (mapping.notice,) if mapping is not None and mapping.notice else ()
    return [
        LoadedFusion(
            path=path,
            name=path.stem if index == 0 else f"{path.stem}#{index + 1}",
            fd=call.fd,
            inputs=call.inputs,
            line=call.line,
            source_kind="python",
            notices=(*notices, *script_notices, *_repeat_notice(call)),
        )
        for index, call in enumerate(captured)
    ]


def _repeat_notice(call: _Captured) -> tuple[str, ...]:
    if not call.repeats:
        return ()
    line = f" (line {call.line})" if call.line is not None else ""
    return (
        f"fd.execute{line} was called {call.repeats + 1} times with this fusion and inputs of "
        "one signature: checked once (--all-calls checks every call)",
    )


def _run_guarded(
    filename: str, run: Any, tolerate: Callable[[BaseException], bool] | None = None
) -> str | None:
    """Run the script's code; its errors become InputError naming its line, except those
    ``tolerate`` accepts, which are returned as one line instead."""
    try:
        run()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            line = user_line(exc, filename)
            where = f"{filename}:{line}" if line is not None else filename
            # sys.exit("text") prints the text and exits with status 1, as Python does
            said = (f"with status {exc.code}" if isinstance(exc.code, int)
                    else f"with status 1: {exc.code}")
            if tolerate is not None and tolerate(exc):
                return f"{where}: the script exited {said}"
            raise InputError(f"the script exited {said}", where) from None
    except Exception as exc:
        line = user_line(exc, filename)
        where = f"{filename}:{line}" if line is not None else filename
        if tolerate is not None and tolerate(exc):
            return f"{where}: the script raised {type(exc).__name__}: {exc}"
        raise_user_error(exc, where)
    return None


def _run_script(code: Any, namespace: dict[str, Any]) -> None:
    """``exec`` the script. A child process the script forked that runs on to its end (or
    raises) ends there, silently: past the script it would run fusecli's own code a second
    time, and print a second report or JSON document."""
    owner = os.getpid()
    try:
        exec(code, namespace)
    finally:
        if os.getpid() != owner:
            os._exit(0)


def _raised_by_fusecli(exc: BaseException) -> bool:
    """fusecli's errors, and errors raised inside fusecli (bad arguments to ``fd.ops``)."""
    if isinstance(exc, FusecliError | DefinitionError):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(_PACKAGE)


_PACKAGE = Path(__file__).resolve().parent.parent


def _run_tests(namespace: dict[str, Any], filename: str) -> list[str]:
    """The script defines tests and captured nothing: call them (see ``script_tests``)."""
    run = ScriptTests()

    def call_tests() -> None:
        nonlocal run
        run = run_script_tests(namespace, filename, fatal=_raised_by_fusecli)

    _run_guarded(filename, call_tests)
    notices = []
    if run.ran:
        notices.append(f"the script runs no fusion itself: fusecli called its tests "
                       f"{', '.join(run.ran[:8])}{', ...' if len(run.ran) > 8 else ''}")
    if run.skipped:
        notices.append(f"tests not called: {'; '.join(run.skipped)}")
    for label, error in run.failures:
        line = user_line(error, filename)
        where = f" at line {line}" if line is not None else ""
        notices.append(f"{label} raised {type(error).__name__}{where}: {error}: ignored")
    return notices


def _captured_globals(
    namespace: dict[str, Any], tree: ast.Module, filename: str
) -> list[_Captured]:
    """``fd`` and ``inputs`` left by a script that never called ``fd.execute``."""
    fd, inputs = namespace.get("fd"), namespace.get("inputs")
    if not isinstance(fd, FusionDefinition) or not isinstance(inputs, list | tuple):
        return []
    if fd.id() is None:
        # Subclass style (``definition()`` overridden): nvFuser defines it on first execute.
        _run_guarded(filename, fd._ensure_defined)
    return [_Captured(fd, clone_exact(list(inputs)), _assignment_line(tree, "inputs"))]


def _assignment_line(tree: ast.Module, name: str) -> int | None:
    line = None
    for statement in tree.body:
        targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            line = statement.lineno
    return line


@contextlib.contextmanager
def _script_environment(path: Path, seed: int) -> Iterator[None]:
    """Seed torch; put back what the script may change in the process; its prints to stderr."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_dtype, saved_grad = torch.get_default_dtype(), torch.is_grad_enabled()
    saved_device = torch.get_default_device()
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(sys.stderr):
            torch.manual_seed(seed)
            yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        torch.set_default_dtype(saved_dtype)
        torch.set_grad_enabled(saved_grad)
        if torch.get_default_device() != saved_device:
            torch.set_default_device(saved_device)
