"""``benchmarks/vs_nvfuser.py --population``: the population it draws, its dry run, and its
refusal to measure without CUDA or nvFuser (the measurement itself runs on the GPU machine)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import population  # noqa: E402

from fusecli.bisect import random_fusion  # noqa: E402

SMALL = 1 << 12  # elements per large tensor: a population CI draws in seconds


def _script(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / "vs_nvfuser.py"), *arguments],
                          capture_output=True, text=True, timeout=600)


def test_the_dry_run_prints_the_same_population_for_the_same_seed() -> None:
    arguments = ("--population", "6", "--seed", "5", "--dry-run", "--min-elements", str(SMALL))
    first, second = _script(*arguments), _script(*arguments)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("population of 6 fusions (seed 5")
    assert len(lines) == 7 and "gelu_tanh" in lines[1] and "fuzz_" in lines[2]
    assert first.stdout == second.stdout
    assert _script("--population", "6", "--seed", "6", "--dry-run", "--min-elements",
                   str(SMALL)).stdout != first.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="measures on a GPU")
def test_without_a_gpu_the_measured_run_exits_4_saying_why() -> None:
    result = _script("--population", "2", "--min-elements", str(SMALL))
    assert result.returncode == 4
    assert "needs a CUDA device" in result.stderr and "--dry-run" in result.stderr


def test_the_population_covers_every_template_and_the_generator() -> None:
    members = population.draw(2 * len(population.TEMPLATES), seed=1, min_elements=SMALL)
    names = [m.name.split(" ", 1)[1] for m in members if m.source == "template"]
    assert names == [name for name, _ in population.TEMPLATES]
    generated = [m for m in members if m.source == "generator"]
    assert len(generated) == len(population.TEMPLATES)
    assert random_fusion._base_sizes.__module__ == random_fusion.__name__  # given back
    ops = {e.op.value for m in members for e in m.fd.fusion.exprs}
    assert {"pow", "slice", "cat", "pad", "permute", "var_mean", "sum", "max"} <= ops
    assert any(len(m.fd.fusion.outputs) > 1 for m in members)


@pytest.mark.parametrize("name", [name for name, _ in population.TEMPLATES])
def test_templates_are_memory_bound_and_run(name: str) -> None:
    members = population.draw(2 * len(population.TEMPLATES), seed=2, min_elements=SMALL)
    (member,) = [m for m in members if m.name.endswith(f" {name}")]
    inputs = member.make_inputs("cpu")
    assert population.largest_tensor(inputs) >= SMALL
    outputs = member.fd.execute(inputs)
    assert outputs and all(isinstance(out, torch.Tensor) for out in outputs)


def test_generated_members_reach_the_size_asked_for() -> None:
    members = population.draw(8, seed=3, min_elements=SMALL)
    for member in members:
        if member.source == "generator":
            inputs = member.make_inputs("cpu")
            sizes = [x.numel() for x in inputs if isinstance(x, torch.Tensor)]
            assert max(sizes) >= SMALL, (member.name, member.summary)


def test_torch_compile_runs_the_fusion_as_one_traced_graph() -> None:
    """``--compile`` times ``torch.compile`` of the member's aten ops traced into one graph
    (``compiled_graph``), which computes what eager torch does; compiling the reference
    interpreter itself ran eager behind Dynamo's guards past its recompile limit. Here with
    the aot_eager backend (Inductor's CPU code is the GPU machine's business): the traced
    graph is one graph, with no Python of fusecli's left in it."""
    import vs_nvfuser

    from fusecli.reference import run_reference

    for member in population.draw(3, 0, min_elements=SMALL)[1:]:  # a generated one, powers
        inputs = member.make_inputs("cpu")

        def eager(*tensors, fusion=member.fd.fusion):
            return run_reference(fusion, list(tensors)).outputs

        torch._dynamo.utils.counters.clear()
        compiled = vs_nvfuser.compiled_graph(eager, inputs, backend="aot_eager")
        for got, want in zip(compiled(*inputs), eager(*inputs), strict=True):
            torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2, equal_nan=True)
        counts = torch._dynamo.utils.counters["stats"]
        assert counts["unique_graphs"] == 1, dict(counts)


def test_the_compile_summary_lists_where_torch_compile_wins_with_each_engines_kernels(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Where torch.compile beats nvFuser and fusecli does not beat it, the summary names the
    member with the three times and each engine's kernels (profiled by ``measure``); members
    where fusecli wins, where torch.compile trails nvFuser or nvFuser did not run are counted
    or left out, not listed."""
    import population_bench as bench

    def result(name: str, fusecli: float, nvfuser: float | None, compiled: float,
               kernels: dict[str, str] | None = None) -> bench.Result:
        return bench.Result(name, "", ms={"fusecli": fusecli, "nvfuser": nvfuser,
                                          "compile": compiled},
                            compile_s=0.5, kernels=kernels or {})

    results = [result("a", 1.0, 2.0, 1.5),  # fusecli beats both
               result("b", 2.0, 2.5, 1.0, {"fusecli": "device 1900 us: k 1900us",
                                           "torch.compile": "device 900 us: t 900us"}),
               result("c", 1.0, 0.5, 0.8),  # torch.compile behind nvFuser
               result("d", 1.0, None, 0.5)]  # nvFuser did not run
    assert [r.name for r in results if bench.compile_wins(r)] == ["b"]
    bench.print_compile_summary(results)
    out = capsys.readouterr().out
    assert "torch.compile beats nvFuser on 2; fusecli beats torch.compile on 1 of those" in out
    assert "not b: fusecli 2.000 ms, torch.compile 1.000 ms, nvFuser 2.500 ms" in out
    assert "fusecli device 1900 us: k 1900us" in out
    assert "torch.compile device 900 us: t 900us" in out
    assert "not a" not in out and "not c" not in out and "not d" not in out


def test_a_profile_that_fails_is_the_members_line_not_the_runs_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import population_bench as bench

    def broken(run):
        raise RuntimeError("CUPTI is not available\nmore")

    monkeypatch.setattr(bench.tools, "device_profile", broken)
    assert bench._device_line(lambda: None) == "not profiled: CUPTI is not available"
    monkeypatch.setattr(bench.tools, "device_profile", lambda run: (0.0123, "k 12us"))
    assert bench._device_line(lambda: None) == "device 12 us: k 12us"
