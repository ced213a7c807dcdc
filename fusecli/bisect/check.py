"""One oracle question, answered: run a fusion on the executor under test and judge the result.

``evaluate`` segments the fusion and runs the first ``segments`` segments (all by default) on
the executor under test, with ``FUSECLI_INJECT_FAULT`` in effect, and the rest on the reference
interpreter, which ignores faults; then it compares every output with eager torch, with the
float64 tie-break, exactly as ``fusecli run`` does. The answer is a ``Verdict``: plain data that
crosses a process boundary as one line of JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fusecli.app.judge import (
    clone_inputs,
    diff_outputs,
    float64_reference,
    identical_outputs,
    reference_inputs,
)
from fusecli.app.pipeline import RunOptions
from fusecli.engines.signature import normalize_message
from fusecli.ir.nodes import Fusion, Vector
from fusecli.reference import run_reference
from fusecli.runtime.outputs import collect_outputs
from fusecli.runtime.segmented import SegmentRunner, execute_segmented
from fusecli.segment.result import SegmentedFusion
from fusecli.segment.segmenter import segment_fusion

# Statuses. pass: outputs match; mismatch: some output does not; crash: the executor under test
# raised; hang: no answer within the timeout; died: the interpreter itself died (a signal, an
# os._exit) before answering; invalid: the question itself is bad (the file does not load, the
# reference cannot evaluate it); environment: what was asked for is missing here.
FAILURES = ("mismatch", "crash", "hang", "died")


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    error_type: str | None = None  # the exception's class, or the signal, for crash and died
    message: str = ""  # first line of the error, or what did not match
    phase: str = ""  # load, execute: where a crash, a hang or a death happened
    seconds: float = 0.0
    fusions: int = 1  # how many fusions the file holds (for the first question about a file)
    key: str | None = None  # an engine error's signature (fusecli.engines.signature)
    location: str | None = None  # an nvFuser assert's source location
    detail: str = ""  # the engine's whole error text, for reports
    group: int | None = None  # nvFuser's "Error from segmentation group N"

    @property
    def failed(self) -> bool:
        return self.status in FAILURES

    @property
    def signature(self) -> str:
        """What identifies this failure across minimization steps: kind, type, normalized text."""
        if self.status in ("mismatch", "hang"):
            return self.status
        if self.status == "died":  # what a dying interpreter prints last varies; the cause not
            return f"died: {self.error_type}"
        if self.key is not None:
            return f"{self.status}: {self.key}"
        parts = [self.status, self.error_type or "", normalize_message(self.message)]
        return ": ".join(p for p in parts if p)

    def summary(self) -> str:
        if self.status == "pass":
            return "pass"
        named = self.error_type and self.error_type not in self.message  # said once
        kind = f"{self.status} ({self.error_type})" if named else self.status
        return f"{kind}: {self.message}" if self.message else kind

    def to_json(self) -> str:
        return json.dumps(asdict(self), allow_nan=False)

    @staticmethod
    def from_json(text: str) -> Verdict:
        return Verdict(**json.loads(text))


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def error_verdict(error: BaseException, phase: str) -> Verdict:
    """What an exception means: bad input, missing environment, or a crash under test."""
    from fusecli.errors import InputError, MissingEnvironmentError

    if isinstance(error, MissingEnvironmentError):
        return Verdict("environment", type(error).__name__, first_line(error), phase)
    if isinstance(error, InputError):
        return Verdict("invalid", type(error).__name__, first_line(error), phase)
    return Verdict("crash", type(error).__name__, first_line(error), phase)


def load_verdict(error: BaseException) -> Verdict:
    """What a file that fails to load means: bad input (a script that raises is a bad repro,
    not a crash under test), or a missing environment."""
    verdict = error_verdict(error, "load")
    if verdict.status == "crash":
        return Verdict("invalid", verdict.error_type, verdict.message, "load")
    return verdict


# -- evaluation --------------------------------------------------------------------------------


def evaluate(
    loaded: Any, options: RunOptions, segments: int | None = None, log_to: str | None = None
) -> Verdict:
    """Run ``loaded`` (a LoadedFusion) as the oracle question with the given plan: on fusecli's
    pipeline (``segments``: how many run under test), or on another engine, all of it (with
    ``log_to``, that run's own segmenter log is written there)."""
    from fusecli.reference import ReferenceInputError, run_reference

    started = time.perf_counter()
    fusion, inputs = loaded.fusion, loaded.inputs
    if options.engine != "fusecli":
        run = _engine_run(loaded, options)
        if log_to is not None:
            Path(log_to).write_text(run.segmentation.text, encoding="utf-8")
        if run.error is not None or run.outputs is None:
            rejected = reference_rejects(loaded, options)
            return _timed(rejected or engine_verdict(run), started)
        actual, inputs = run.outputs, run.inputs
    else:
        try:
            actual = run_under_test(fusion, clone_inputs(inputs), options, segments)
        except Exception as error:  # a crash of the executor under test, whatever it raised
            return _timed(error_verdict(error, "execute"), started)
    try:
        eager_inputs = reference_inputs(fusion, inputs)
        expected = run_reference(fusion, eager_inputs, seed=options.seed).outputs
        identical = identical_outputs(actual, expected)
        precise, bounds = float64_reference(fusion, inputs, options, identical)
    except ReferenceInputError as error:
        return _timed(Verdict("invalid", type(error).__name__, first_line(error)), started)
    except Exception as error:  # the reference cannot answer: not a question for the executor
        return _timed(Verdict("invalid", type(error).__name__, first_line(error)), started)
    failing = compare_outputs(
        fusion, inputs, actual, expected, precise, options, bounds, identical
    )
    if failing:
        return _timed(Verdict("mismatch", message="; ".join(failing)), started)
    return _timed(Verdict("pass"), started)


def _engine_run(loaded: Any, options: RunOptions) -> Any:
    from fusecli.engines.base import get_engine

    engine = get_engine(options.engine, options.nvfuser_runner)
    engine.check()
    return engine.execute(loaded, options)


def reference_rejects(loaded: Any, options: RunOptions) -> Verdict | None:
    """An ``invalid`` verdict when eager torch itself cannot run the question (a negative pad
    wider than its shrunk input, a reshape that no longer fits): the engine's error then says
    nothing about the engine. None when the reference runs, or lacks a rule (no opinion)."""
    from fusecli.reference import ReferenceError, ReferenceInputError

    try:
        eager_inputs = reference_inputs(loaded.fusion, loaded.inputs)
        run_reference(loaded.fusion, eager_inputs, seed=options.seed)
    except ReferenceInputError as error:
        return Verdict("invalid", type(error).__name__, first_line(error))
    except ReferenceError as error:
        if error.__cause__ is not None:  # torch raised on these values: eager fails too
            return Verdict("invalid", type(error).__name__, first_line(error))
    except Exception:  # noqa: S110 - the reference's own trouble is no verdict on the question
        pass
    return None


def engine_verdict(run: Any) -> Verdict:
    """An engine's error as a crash verdict carrying its signature."""
    signature = run.signature
    if signature is None:
        return Verdict("crash", None, "the engine returned no outputs", "execute")
    return Verdict(
        "crash", signature.error_type, signature.headline(), "execute", key=signature.key,
        location=signature.location, detail=(run.error_text or run.error or "")[:4000],
        group=signature.group,
    )


def _timed(verdict: Verdict, started: float) -> Verdict:
    from dataclasses import replace

    return replace(verdict, seconds=round(time.perf_counter() - started, 6))


def compare_outputs(
    fusion: Fusion,
    inputs: Sequence[Any],
    actual: Sequence[Any],
    expected: Sequence[Any],
    precise: Sequence[Any] | None,
    options: RunOptions,
    bounds: Sequence[Any] | None = None,
    identical: Sequence[Any] | None = None,
) -> list[str]:
    """One line per output that does not match (``fusecli run``'s tolerances and tie-break)."""
    if len(actual) != len(expected):
        return [f"{len(actual)} outputs, the reference has {len(expected)}"]
    diffs = diff_outputs(fusion, inputs, actual, expected, precise, options, bounds, identical)
    return [f"output {i}: {d.summary()}" for i, d in enumerate(diffs) if not d.ok]


def run_under_test(
    fusion: Fusion, inputs: list[Any], options: RunOptions, segments: int | None
) -> list[Any]:
    """Segment ``fusion`` and run it: the first ``segments`` segments on the executor under
    test, the rest through the reference interpreter; all of them when ``segments`` is None."""
    segmented = segment_fusion(fusion, inputs, profile=options.rules)
    executor = options.executor
    if segments is None or segments >= len(segmented.segments) or segmented.failure:
        return execute_segmented(segmented, inputs, executor=executor, seed=options.seed).outputs
    return _run_prefix(segmented, inputs, segments, executor, options.seed)


def _run_prefix(
    segmented: SegmentedFusion, inputs: list[Any], count: int, executor: str, seed: int
) -> list[Any]:
    fusion = segmented.fusion
    runner = SegmentRunner(segmented, inputs, executor=executor, seed=seed)
    env, ctx, bindings = runner.env, runner.ctx, runner.bindings
    for segment in segmented.segments[:count]:
        runner.run(segment)
    runner.scalars.run_ready()
    pending = {e.uid for e in runner.scalars.pending}
    done = {e.uid for s in segmented.segments[:count] for e in s.exprs}
    done |= {e.uid for e in fusion.exprs if not e.tensor_outputs() and e.uid not in pending}
    rest = tuple(e for e in fusion.exprs if e.uid not in done)
    produced = {o.uid for e in rest for o in e.outputs}
    boundary: dict[int, Any] = {}
    for expr in rest:
        for value in expr.inputs:
            for item in value.elements if isinstance(value, Vector) else (value,):
                if item.uid in env and item.uid not in produced:
                    boundary.setdefault(item.uid, item)
    tail = Fusion(inputs=tuple(boundary.values()), outputs=(), exprs=rest)
    values = [env[uid] for uid in boundary]
    env.update(run_reference(tail, values, seed=seed, keep_intermediates=True).values)
    return collect_outputs(fusion, env, bindings, ctx, runner.allocations)
