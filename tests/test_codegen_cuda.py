"""GPU tests (``pytest -m cuda``): generated kernels launched through CuPy, checked against the
reference interpreter on the corpus and on random pointwise fusions.

Outputs are poisoned (NaN, or all bits set) before every launch and each launch is
synchronized, so an unwritten element or a fault shows against the segment that caused it.
Everything here skips without a CUDA device and CuPy.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from fusecli.compare import compare_tensors, tolerance_for
from fusecli.ir.nodes import TensorView
from fusecli.load import discover, load_path
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import CupyExecutor, FallbackReason, cupy_available
from fusecli.segment.segmenter import segment_fusion

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(cupy_available() is not None, reason=f"{cupy_available()}"),
]

CORPUS = discover([Path(__file__).parent.parent / "fusions"])
# Why a corpus or random segment may run on ATen: by design (matmuls, no_op), nothing else.
EXPECTED_FALLBACKS = ("run on ATen",)


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> CupyExecutor:
    return CupyExecutor(poison=True, synchronize=True,
                        cache_dir=tmp_path_factory.mktemp("kernels"))


def on_device(value):
    """``value`` on the GPU with the same strides (expanded and sliced layouts included)."""
    if not isinstance(value, torch.Tensor) or value.device.type == "cuda":
        return value
    if value.dim() == 0:
        return value  # 0-dim CPU scalars stay on the CPU, as nvFuser allows
    storage = torch.tensor([], dtype=value.dtype).set_(value.untyped_storage())
    return storage.cuda().as_strided(value.shape, value.stride(), value.storage_offset())


def reference_values(fusion, inputs) -> dict:
    cloned = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    values = run_reference(fusion, cloned, keep_intermediates=True, device="cuda").values
    values.update({v.uid: x for v, x in zip(fusion.inputs, inputs)})
    return values


def context_for(fusion, inputs) -> ExecutionContext:
    """As the runtime makes it: the inputs' symbolic sizes bound, no fault injection."""
    return ExecutionContext.for_fusion(fusion, device=torch.device("cuda"), faults=frozenset(),
                                       extents=bind_inputs(fusion, inputs).extents)


def check_segments(executor: CupyExecutor, fusion, inputs) -> int:
    """Each segment's kernel on the reference's values of its inputs, against the reference."""
    segmented = segment_fusion(fusion, inputs)
    reference = reference_values(segmented.fusion, inputs)  # the segmenter's copies included
    ctx = context_for(fusion, inputs)
    launched = 0
    for segment in segmented.segments:
        result = executor.execute_segment(segment, dict(reference), ctx)
        if isinstance(result, FallbackReason):
            assert any(text in result.reason for text in EXPECTED_FALLBACKS), result.reason
            continue
        outputs, kernel = result
        launched += 1
        for out in segment.outputs:
            expected = reference[out.uid]
            diff = compare_tensors(outputs[out.uid], expected,
                                   tolerance=tolerance_for(expected.dtype, 4096))
            assert diff.ok, f"segment {segment.id}, {out!r}\n{kernel.source}\n{diff}"
    return launched


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_kernels_match_the_reference(executor: CupyExecutor, path: Path) -> None:
    for loaded in load_path(path, device="cuda"):
        check_segments(executor, loaded.fusion, [on_device(x) for x in loaded.inputs])


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_runs_segment_after_segment(executor: CupyExecutor, path: Path) -> None:
    """Kernel outputs (torch-allocated, dense) feed later segments, ATen fallbacks included."""
    for loaded in load_path(path, device="cuda"):
        inputs = [on_device(x) for x in loaded.inputs]
        fusion = segment_fusion(loaded.fusion, inputs).fusion  # with the segmenter's copies
        reference = reference_values(fusion, inputs)
        env = {v.uid: x for v, x in zip(fusion.inputs, inputs)}
        env.update({uid: v for uid, v in reference.items() if not isinstance(v, torch.Tensor)})
        ctx = context_for(fusion, inputs)
        for segment in segment_fusion(fusion, inputs).segments:
            executor.run_segment(segment, env, ctx)
        for output in fusion.outputs:
            if isinstance(output.value, TensorView) and output.alias_input is None:
                expected = reference[output.value.uid]
                diff = compare_tensors(env[output.value.uid], expected,
                                       tolerance=tolerance_for(expected.dtype, 4096))
                assert diff.ok, f"{path.name}: {output.value!r}\n{diff}"


@pytest.mark.parametrize("seed", range(40))
def test_random_pointwise_fusions_match_the_reference(executor: CupyExecutor, seed: int) -> None:
    from test_codegen import random_pointwise

    fd, inputs = random_pointwise(seed)
    check_segments(executor, fd.fusion, [on_device(x) for x in inputs])


def _tiny_fusion():
    from fusecli.frontend import FusionDefinition

    x = torch.randn(128, device="cuda")
    with FusionDefinition() as fd:
        t = fd.define_tensor(sizes=[128], strides=[1])
        fd.add_output(fd.ops.exp(t))
    return fd.fusion, [x]


def test_warm_launches_cost_little_host_time(tmp_path: Path) -> None:
    from fusecli.app.bench import launch_overhead  # the benchmark's own measurement

    microseconds = launch_overhead(CupyExecutor(cache_dir=tmp_path))
    assert microseconds < 100, f"{microseconds:.1f} µs per warm launch"


def test_a_disk_cache_hit_skips_nvrtc(tmp_path: Path) -> None:
    fusion, inputs = _tiny_fusion()
    (segment,) = segment_fusion(fusion, inputs).segments
    env = {fusion.inputs[0].uid: inputs[0]}
    ctx = context_for(fusion, inputs)
    CupyExecutor(cache_dir=tmp_path).execute_segment(segment, env, ctx)
    fresh = CupyExecutor(cache_dir=tmp_path)
    started = time.perf_counter()
    outputs, _ = fresh.execute_segment(segment, env, ctx)
    seconds = time.perf_counter() - started
    assert fresh.modules.compiles == 0
    assert seconds < 0.5
    torch.testing.assert_close(next(iter(outputs.values())), torch.exp(inputs[0]))


LAUNCH_FAILURE = """
import torch
from fusecli.frontend import FusionDefinition
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import CupyExecutor, KernelLaunchError
from fusecli.segment.segmenter import segment_fusion

x = torch.randn(1 << 20, device="cuda")
with FusionDefinition() as fd:
    fd.add_output(fd.ops.neg(fd.define_tensor(sizes=[1 << 20], strides=[1])))
(segment,) = segment_fusion(fd.fusion, [x]).segments
runner = CupyExecutor(synchronize=True)
ctx = ExecutionContext.for_fusion(fd.fusion, device=torch.device("cuda"), faults=frozenset(),
                                  extents=bind_inputs(fd.fusion, [x]).extents)
prepared = runner._prepare(segment, {}, ctx, [x], x.device)
bogus = [1 << 40, torch.empty_like(x)]  # an input address nothing is mapped at
try:
    runner._launch(segment, prepared, bogus, x.device)
except KernelLaunchError as error:
    print("reported:", error)
"""


def test_a_launch_failure_is_reported_against_its_segment() -> None:
    # In a child process: an illegal address leaves the CUDA context unusable.
    done = subprocess.run([sys.executable, "-c", LAUNCH_FAILURE], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).parent.parent)
    assert "reported: segment 0 (pointwise): kernel fusecli_pointwise_s0 failed" in done.stdout, (
        done.stdout + done.stderr
    )


# -- fault injection reaches the kernels --------------------------------------------------------


def test_an_injected_fault_runs_in_the_kernel_and_bisect_localizes_it(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from fusecli.cli.main import cli, register

    register()
    softmax = Path(__file__).parent.parent / "fusions" / "softmax.yaml"
    env = {"FUSECLI_INJECT_FAULT": "exp"}
    run = CliRunner().invoke(cli, ["run", str(softmax), "--executor", "cupy", "--json"], env=env)
    assert run.exit_code == 1, run.output
    (fusion,) = json.loads(run.stdout)["fusions"]
    assert fusion["status"] == "mismatch"
    assert all(s["executor"] == "cupy" and not s.get("fallback") for s in fusion["segments"])
    bisect = CliRunner().invoke(cli, [
        "bisect", str(softmax), "--executor", "cupy", "--in-process", "--json", "-o",
        str(tmp_path),
    ], env=env)
    assert bisect.exit_code == 0, bisect.output
    document = json.loads(bisect.stdout)
    assert document["reproduced"] and document["minimized"]["exprs"] == ["exp"]


def test_a_folder_of_zero_size_crashing_and_valid_fusions_runs_on_cupy(tmp_path, monkeypatch):
    from mixed_corpus import run_mixed_corpus, write_mixed_corpus

    from fusecli.cli.main import cli, register

    register()
    by_name = run_mixed_corpus(
        write_mixed_corpus(tmp_path, device="cuda"), monkeypatch, cli, "--executor", "cupy"
    )
    assert any(s["executor"] == "cupy" for s in by_name["a_valid"]["segments"])


SYMBOLIC_SLICES = """\
import torch
from nvfuser import FusionDefinition, DataType

def rotate_half(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.BFloat16)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True] * 2, dtype=DataType.BFloat16)
    T2 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[4, 64, 32])
    T3 = fd.ops.slice(T0, start_indices=[0, 0, 32], end_indices=[4, 64, 100])
    T4 = fd.ops.cat([fd.ops.neg(T3), fd.ops.cast(T2, dtype=DataType.Float)], dim=-1)
    T5 = fd.ops.broadcast_in_dim(T1, shape=[4, 64, 64], broadcast_dims=[1, 2])
    T6 = fd.ops.add(fd.ops.mul(T0, T5), fd.ops.mul(T4, T5))
    fd.add_output(fd.ops.cast(T6, dtype=DataType.BFloat16))

with FusionDefinition() as fd:
    rotate_half(fd)

fd.execute([torch.randn(4, 64, 64, dtype=torch.bfloat16, device='cuda'),
            torch.randn(64, 64, dtype=torch.bfloat16, device='cuda')])
"""


def test_slices_of_sizes_the_inputs_give_run_as_kernels(executor: CupyExecutor, tmp_path) -> None:
    """Constant slice bounds into symbolic (-1) sizes, a clamped end among them: the
    lengths are bound with the inputs, so the segment gets a kernel (not an ATen fallback)."""
    path = tmp_path / "rotate_half.py"
    path.write_text(SYMBOLIC_SLICES, encoding="utf-8")
    (loaded,) = load_path(path, device="cuda")
    assert check_segments(executor, loaded.fusion, [on_device(x) for x in loaded.inputs]) == 1


def test_a_no_op_segment_that_computes_runs_a_kernel_of_its_broadcast() -> None:
    """A cast of an input expanded along its only long dim: nvFuser's no_op scheduler takes the
    segment and still compiles a kernel; fusecli's computes the one element and returns it
    expanded, as nvFuser allocates an expanded output (stride 0), in the full run and the
    warm replay."""
    from fusecli.frontend import DataType, FusionDefinition
    from fusecli.runtime.segmented import execute_segmented

    x = torch.arange(1, 2, device="cuda", dtype=torch.int32).view(1, 1).expand(16384, 1)
    with FusionDefinition() as fd:
        t = fd.define_tensor(sizes=[16384, 1], strides=[0, 1], dtype=DataType.Int32)
        fd.add_output(fd.ops.cast(t, DataType.Half))
    run = execute_segmented(segment_fusion(fd.fusion, [x]), [x], executor="cupy")
    assert [(s.scheduler, s.executor) for s in run.segments] == [("no_op", "cupy")]
    for (out,) in [run.outputs, fd.execute([x]), fd.execute([x])]:
        assert out.shape == (16384, 1) and out.dtype == torch.float16
        assert torch.equal(out, x.half())
