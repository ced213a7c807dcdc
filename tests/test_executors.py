"""The executor protocol: one registry, and fallback and fault injection done once around it."""

from __future__ import annotations

import pytest
import torch

from fusecli.cli.run import run
from fusecli.errors import InputError, PipelineError
from fusecli.frontend import DataType, FusionDefinition
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.executor import run_segment
from fusecli.runtime.names import EXECUTOR_NAMES
from fusecli.runtime.registry import EXECUTORS, executor_named, fallback_executor
from fusecli.segment.segmenter import segment_fusion


class Declining:
    """An executor that runs nothing and says why."""

    name = "declining"
    injects_faults = False

    def __init__(self) -> None:
        self.asked = []

    def attempt(self, segment, env, ctx):
        self.asked.append(segment.id)
        return "no kernel for this, on purpose"


class Running(Declining):
    """An executor that runs everything, correctly (through ATen's evaluation)."""

    name = "running"

    def attempt(self, segment, env, ctx):
        self.asked.append(segment.id)
        AtenExecutor().run_exprs(segment.exprs, env, ctx)
        return None


def exp_fusion():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(t0))
    x = torch.randn(8)
    (segment,) = segment_fusion(fd.fusion, [x]).segments
    return fd.fusion, segment, x


def context(fusion, x, faults=frozenset()):
    return ExecutionContext.for_fusion(fusion, device="cpu", faults=faults,
                                       extents=bind_inputs(fusion, [x]).extents)


def test_the_registry_holds_every_name_the_cli_offers():
    assert set(EXECUTORS) | {"auto"} == set(EXECUTOR_NAMES)
    (executor_option,) = [p for p in run.params if p.name == "executor"]
    assert tuple(executor_option.type.choices) == EXECUTOR_NAMES
    assert executor_named("aten") is executor_named("aten")  # made once, shared
    assert fallback_executor().name == "aten"
    with pytest.raises(InputError, match="unknown executor 'tvm'; choose one of: auto, aten"):
        executor_named("tvm")
    if not torch.cuda.is_available():
        assert executor_named("auto").name == "aten"


def test_a_declining_executor_falls_back_with_its_reason():
    fusion, segment, x = exp_fusion()
    env = {fusion.inputs[0].uid: x}
    executor = Declining()
    outcome = run_segment(executor, segment, env, context(fusion, x), fallback=AtenExecutor())
    assert executor.asked == [segment.id]
    assert (outcome.executor, outcome.fallback) == ("aten", "no kernel for this, on purpose")
    torch.testing.assert_close(env[fusion.output_values[0].uid], torch.exp(x))


def test_strict_makes_a_refusal_an_error():
    fusion, segment, x = exp_fusion()
    with pytest.raises(PipelineError, match=r"segment 0 \(pointwise\) has no CUDA kernel: no "):
        run_segment(Declining(), segment, {fusion.inputs[0].uid: x}, context(fusion, x),
                    fallback=AtenExecutor(), strict=True)


def test_an_executor_that_runs_it_is_the_one_reported():
    fusion, segment, x = exp_fusion()
    env = {fusion.inputs[0].uid: x}
    outcome = run_segment(Running(), segment, env, context(fusion, x), fallback=AtenExecutor())
    assert (outcome.executor, outcome.fallback) == ("running", None)


def test_faulted_ops_never_reach_an_executor_that_cannot_fault_them():
    fusion, segment, x = exp_fusion()
    env = {fusion.inputs[0].uid: x}
    executor = Running()
    ctx = context(fusion, x, faults=frozenset({"exp"}))
    outcome = run_segment(executor, segment, env, ctx, fallback=AtenExecutor())
    assert executor.asked == [] and outcome.fallback == "fault injection names exp"
    wrong = env[fusion.output_values[0].uid]
    assert not torch.allclose(wrong, torch.exp(x))  # computed wrongly, on purpose
    # and an executor that does fault ops itself is asked
    executor.injects_faults = True
    assert run_segment(executor, segment, {fusion.inputs[0].uid: x}, ctx,
                       fallback=AtenExecutor()).executor == "running"
