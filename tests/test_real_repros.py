"""Repro scripts written the way people paste them into nvFuser and Thunder issues.

Each script here is in the style of real issue repros (timing loops with CUDA events, profiler
ranges, warm-up loops, trailing asserts on nvFuser's result, pytest functions): fusecli must load
it on a machine without a GPU, record each distinct fusion once, and still check it.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from fusecli.load import load_path
from fusecli.load.devices import cuda_mapped_to_cpu

HEADER = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16,
                          is_cpu=False)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.mul(T1, T1)
    T3 = fd.ops.cast(T2, dtype=DataType.BFloat16)
    fd.add_output(T3)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.randn(64, 128, dtype=torch.bfloat16, device='cuda:0')]
"""


def write(tmp_path, body: str, name: str = "repro.py"):
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    return path


def test_a_timing_loop_with_events_and_profiler_ranges_loads_as_one_fusion(tmp_path):
    path = write(tmp_path, """\
        torch.cuda.cudart().cudaProfilerStart()
        print(torch.cuda.get_device_name(), torch.cuda.get_device_capability())
        for _ in range(5):  # warm-up
            fd.execute(inputs)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.nvtx.range_push("fusion")
        start.record()
        for _ in range(100):
            out = fd.execute(inputs)
        end.record()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        elapsed = start.elapsed_time(end)
        assert elapsed >= 0.0
        print(f"{elapsed / 100:.3f} ms per call")
        torch.cuda.cudart().cudaProfilerStop()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        """)
    (loaded,) = load_path(path, device="cpu")
    assert loaded.inputs[0].shape == (64, 128)
    assert any("called 105 times" in notice for notice in loaded.notices), loaded.notices
    assert "CUDA devices mapped to the CPU" in loaded.notices


def test_all_calls_keeps_every_call(tmp_path):
    path = write(tmp_path, """\
        for _ in range(3):
            fd.execute(inputs)
        """)
    assert len(load_path(path, device="cpu", all_calls=True)) == 3
    assert len(load_path(path, device="cpu")) == 1


def test_calls_with_other_signatures_are_other_fusions(tmp_path):
    path = write(tmp_path, """\
        fd.execute(inputs)
        fd.execute([torch.randn(8, 16, dtype=torch.bfloat16, device='cuda')])
        fd.execute([torch.randn(128, 64, dtype=torch.bfloat16, device='cuda').t()])
        fd.execute(inputs)
        """)
    loaded = load_path(path, device="cpu")
    assert [tuple(f.inputs[0].shape) for f in loaded] == [(64, 128), (8, 16), (64, 128)]
    assert loaded[2].inputs[0].stride() == (1, 64)  # the transposed one is its own check


def test_a_trailing_assert_on_the_result_is_a_notice_not_a_load_failure(tmp_path):
    path = write(tmp_path, """\
        (out,) = fd.execute(inputs)
        expected = (inputs[0].float() * inputs[0].float()).bfloat16()
        assert torch.equal(out, expected + 1), "nvFuser gives the wrong result"
        """)
    (loaded,) = load_path(path, device="cpu")
    (notice,) = [n for n in loaded.notices if "AssertionError" in n]
    assert "repro.py:" in notice and "nvFuser gives the wrong result" in notice
    assert notice.endswith("after its fd.execute call(s): ignored")


def test_an_invalid_definition_after_a_fusion_is_still_an_error(tmp_path):
    from fusecli.errors import InputError

    path = write(tmp_path, """\
        fd.execute(inputs)
        with FusionDefinition() as fd2:
            t0 = fd2.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            fd2.ops.add(t0, "not an operand")
        """)
    with pytest.raises(InputError, match="repro.py:"):
        load_path(path, device="cpu")


def test_pytest_functions_are_called_when_the_script_runs_no_fusion(tmp_path):
    path = tmp_path / "test_issue.py"
    path.write_text(textwrap.dedent("""\
        import pytest
        import torch
        from nvfuser import FusionDefinition, DataType

        @pytest.mark.parametrize("size", [16, 32])
        @pytest.mark.parametrize("dtype", [DataType.Float, DataType.Half])
        def test_neg(size, dtype):
            with FusionDefinition() as fd:
                t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
                fd.add_output(fd.ops.neg(t0))
            torch_dtype = torch.float32 if dtype == DataType.Float else torch.float16
            (out,) = fd.execute([torch.randn(size, device="cuda", dtype=torch_dtype)])
            assert out.shape == (size,)

        def test_needs_a_fixture(tmp_path):
            raise AssertionError("not called")

        def test_asserts_nvfusers_wrong_answer():
            with FusionDefinition() as fd:
                t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
                fd.add_output(fd.ops.exp(t0))
            fd.execute([torch.zeros(4, device="cuda")])
            assert False, "wrong"
        """), encoding="utf-8")
    loaded = load_path(path, device="cpu")
    assert len(loaded) == 5  # 2 sizes x 2 dtypes, and the exp fusion
    notices = set(loaded[0].notices)
    assert any("called its tests test_neg[0-0]" in n for n in notices), notices
    assert any("tests not called: test_needs_a_fixture (needs pytest fixtures: tmp_path)" in n
               for n in notices)
    assert any(n.startswith("test_asserts_nvfusers_wrong_answer raised AssertionError")
               for n in notices)


def test_unittest_cases_are_called_too(tmp_path):
    path = tmp_path / "repro_case.py"
    path.write_text(textwrap.dedent("""\
        import unittest
        import torch
        from nvfuser import FusionDefinition, DataType

        class TestIssue(unittest.TestCase):
            def setUp(self):
                self.x = torch.ones(3, device="cuda")

            def test_relu(self):
                with FusionDefinition() as fd:
                    t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
                    fd.add_output(fd.ops.relu(t0))
                fd.execute([self.x])

        if __name__ == "__main__" and False:
            unittest.main()
        """), encoding="utf-8")
    (loaded,) = load_path(path, device="cpu")
    assert any("TestIssue.test_relu" in n for n in loaded.notices)


def test_cuda_queries_describe_the_modeled_gpu_while_mapped():
    with cuda_mapped_to_cpu():
        assert torch.cuda.is_available() is False or torch.cuda.is_available()  # untouched
        event, later = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        event.record()
        later.record()
        assert later.elapsed_time(event) <= 0.0 <= event.elapsed_time(later)
        with torch.cuda.stream(torch.cuda.Stream()), torch.cuda.device(0):
            pass
        if not torch.cuda.is_available():
            assert torch.cuda.get_device_capability() == (9, 0)
            assert "H200" in torch.cuda.get_device_properties(0).name
    untimed = torch.cuda.Event  # restored
    assert untimed.__module__.startswith("torch")


# -- Python numbers as operands, as nvfuser_direct repros write them ---------------------------


def test_python_numbers_are_operands_with_nvfuser_s_scalar_dtypes(tmp_path):
    from fusecli.app.pipeline import RunOptions, run_loaded
    from fusecli.ir.dtype import DataType

    path = tmp_path / "numbers.py"
    path.write_text(textwrap.dedent("""\
        import torch
        from nvfuser_direct import FusionDefinition, DataType
        with FusionDefinition() as fd:
            T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            S0 = fd.define_scalar(None, dtype=DataType.Double)
            T1 = fd.ops.add(3, fd.ops.mul(T0, 2))
            T2 = fd.ops.mul(T1, fd.ops.div(S0, 16))
            T3 = fd.ops.where(fd.ops.gt(T2, 1.0), T2, 0.0)
            fd.add_output(fd.ops.sub(T3, True))
        fd.execute([torch.randn(8, 16), 4.0])
        """), encoding="utf-8")
    (loaded,) = load_path(path, device="cpu")
    constants = [e for e in loaded.fusion.exprs for v in e.inputs
                 if getattr(v, "is_constant", False)]
    dtypes = {type(v.value): v.dtype for e in constants for v in e.inputs
              if getattr(v, "is_constant", False)}
    assert dtypes[int] is DataType.Int and dtypes[float] is DataType.Double
    assert dtypes[bool] is DataType.Bool
    assert run_loaded(loaded, RunOptions(executor="aten", device="cpu")).status == "pass"
    x = loaded.inputs[0]
    expected = ((x * 2 + 3) * 0.25)
    expected = torch.where(expected > 1, expected, 0.0) - 1
    assert "fd.ops.cast(2, dtype=DataType.Float)" in repr(loaded.fd)  # an Int, cast to Float
    from fusecli.reference import run_reference

    (out,) = run_reference(loaded.fusion, [x, 4.0]).outputs
    assert torch.allclose(out, expected)


def test_an_operand_that_is_no_number_names_the_op():
    from fusecli.frontend import DataType, FusionDefinition

    with pytest.raises(TypeError, match=r"mul\(\): incompatible function arguments. expected a "
                                        r"Tensor, a Scalar or a Python number, got 'two'"):
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
            fd.ops.mul(t0, "two")


# -- uniform in low precision stays inside [low, high) --------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_uniform_stays_below_high_in_every_precision(dtype):
    # nvFuser bug #1653: a float64 draw rounded to bfloat16 returned 1.0 for one draw in 512.
    from fusecli.ir.rng import random_tensor

    values = random_tensor("uniform", (1 << 18,), dtype, 0.0, 1.0, seed=0, offset=0)
    assert values.dtype == dtype
    assert float(values.min()) >= 0.0 and float(values.max()) < 1.0
    narrow = random_tensor("uniform", (4096,), dtype, 10.0, 10.01, seed=1, offset=0)
    assert bool((narrow >= 10.0).all() and (narrow.double() < 10.01).all())
    # Still uniform: the mean of 2**18 draws is 1/2 within a few standard errors.
    assert abs(float(values.double().mean()) - 0.5) < 5 * (1 / 12) ** 0.5 / 512


def test_a_random_op_takes_any_int64_seed():
    # nvFuser's seeds are int64 values: one near 2**62 overflowed torch's manual_seed.
    from fusecli.ir.rng import random_tensor

    big = random_tensor("uniform", (8,), torch.float32, 0.0, 1.0, seed=2**62 + 5, offset=3)
    again = random_tensor("uniform", (8,), torch.float32, 0.0, 1.0, seed=2**62 + 5, offset=3)
    assert torch.equal(big, again) and bool(((big >= 0) & (big < 1)).all())
    small = random_tensor("uniform", (8,), torch.float32, 0.0, 1.0, seed=7, offset=1)
    assert not torch.equal(big, small)


def test_explain_segmentation_needs_no_eager_evaluation(tmp_path):
    # Eager torch raises on these inputs (an index past the end); the explanation is still given.
    from click.testing import CliRunner

    from fusecli.cli.main import cli, register

    register()
    path = tmp_path / "out_of_range.py"
    path.write_text(textwrap.dedent("""\
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
            fd.add_output(fd.ops.exp(fd.ops.index_select(T0, T1, 0)))
        fd.execute([torch.randn(4, 3), torch.tensor([7, 9])])
        """), encoding="utf-8")
    explained = CliRunner().invoke(cli, ["explain-segmentation", str(path), "--json"])
    assert explained.exit_code == 0, explained.output
    assert "pointwise" in explained.stdout
    ran = CliRunner().invoke(cli, ["run", str(path), "--json"])
    assert ran.exit_code == 3 and "index out of range" in ran.stdout  # run does evaluate


def test_the_repeated_execute_benchmark_script_is_one_record(tmp_path):
    """benchmarks/repeated_execute.py's repro (warm-up, then a timed loop of 95 calls), small:
    one record for 100 calls, checked once (the benchmark measures it at 500 MB)."""
    import importlib.util
    from pathlib import Path

    from fusecli.app.pipeline import RunOptions, run_loaded

    source = Path(__file__).parent.parent / "benchmarks" / "repeated_execute.py"
    spec = importlib.util.spec_from_file_location("repeated_execute", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / "repeated.py"
    path.write_text(module.SCRIPT.format(rows=8, timed=95), encoding="utf-8")
    (loaded,) = load_path(path, device="cpu")
    assert any("called 100 times" in notice for notice in loaded.notices), loaded.notices
    assert run_loaded(loaded, RunOptions(executor="aten", device="cpu")).status == "pass"


def test_a_scalar_output_is_compared_as_a_zero_dim_tensor(tmp_path):
    """``fd.add_output(S)`` of a scalar: fd.execute returns a 0-dim tensor and the reference a
    Python number; ``fusecli run`` compares the two (it used to stop on an internal error)."""
    from click.testing import CliRunner

    from fusecli.cli.main import cli, register

    register()
    script = tmp_path / "scalar_output.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from nvfuser import FusionDefinition, DataType

        def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
            T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
            S1 = fd.define_scalar(None, dtype=DataType.Double)
            S2 = fd.define_scalar(None, dtype=DataType.Double)
            S3 = fd.ops.mul(S1, S2)
            T4 = fd.ops.mul(T0, S3)
            fd.add_output(T4)
            fd.add_output(S3)

        with FusionDefinition() as fd:
            nvfuser_fusion_id0(fd)

        inputs = [torch.randn(8, device='cuda:0'), 1.5, -2.0]
        fd.execute(inputs)
        """))
    result = CliRunner().invoke(cli, ["run", str(script), "--json"])
    assert result.exit_code == 0, result.output
    import json

    (record,) = json.loads(result.stdout)["fusions"]
    assert record["status"] == "pass"
    assert record["outputs"][1]["shape"] == [] and record["outputs"][1]["ok"]
