"""The conformance run's skips (tests/conformance/scope.py): which of nvFuser's tests are out of
fusecli's scope, and which have a reference that fails on this host's torch."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

_PATH = Path(__file__).resolve().parent / "conformance" / "scope.py"
_spec = importlib.util.spec_from_file_location("conformance_scope", _PATH)
scope = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scope)


def _out_of_scope(text: str) -> str | None:
    for reason, pattern in scope.OUT_OF_SCOPE:
        if pattern.search(text):
            return reason
    return None


def test_the_direct_frontends_user_schedules_are_out_of_scope():
    # lines of nvFuser's tests/python/direct/test_stream.py and test_tutorial.py
    for line in (
        "out.outer_split(1, c)",
        "out.axis(1).parallelize(ParallelType.stream)",
        "tv1.axis(1).parallelize(ParallelType.block_x)",
        "heuristic_params = check_auto_schedule(schedule.schedule)(",
        "id_model = idm.IdModel(fd.fusion)",
        "ke = KernelExecutor()",
    ):
        assert _out_of_scope(line).startswith("user schedules (direct"), line


def test_nvfusers_lowered_kernel_text_is_out_of_scope():
    for line in ("assert fd.fusion.print_kernel() == cuda_kernel",
                 "assert fd.fec.get_scheduled_ir(inputs) == scheduled_ir",
                 "assert fd.fec.get_cuda_kernel(inputs) == cuda_kernel"):
        assert _out_of_scope(line).startswith("nvFuser's lowered CUDA kernel"), line


def test_a_plain_definition_runs():
    source = """def test_add(nvfuser_direct_test):
    t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    t1 = fd.ops.split(t0, [2, 2], 0)  # the op, not a schedule
    fd.add_output(fd.ops.reshape(t0, [2, -1]))
    print(fd.fusion.print_math())
    nvf_out, _ = nvfuser_direct_test.exec_nvfuser(fusion_func, inputs)
"""
    assert _out_of_scope(source) is None


def test_integer_divisions_reference_raises_on_the_cpu_and_only_it_is_skipped():
    (reason, pattern, probe), = [entry for entry in scope.WRONG_REFERENCE
                                 if "integer torch.div" in entry[0]]
    # the claim, asked of this torch: nvFuser's reference divides make_tensor draws (in
    # [-9, 10): zeros among them) and torch's CPU kernel raises where CUDA's returns a value
    assert probe() is True
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(torch.tensor([7, -7]), torch.tensor([3, 0]), rounding_mode="trunc")
    assert pattern.search("python/direct/test_python_frontend.py::test_integer_division["
                          "nvfuser_direct_test=eager]")
    assert pattern.search(
        "python/test_python_frontend.py::TestNvFuserFrontend::test_integer_division")
    assert not pattern.search("python/test_python_frontend.py::test_integer_division_and_more")
