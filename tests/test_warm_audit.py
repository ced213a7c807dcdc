"""benchmarks/warm_audit.py: the GPU path's warm run, read on a machine without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from warm_audit import audit, stand_in_device, steps  # noqa: E402

from fusecli.frontend import DataType, FusionDefinition  # noqa: E402
from fusecli.runtime import registry  # noqa: E402


def _sum_reshape_sum() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        rows = fd.ops.reshape(fd.ops.sum(x, dims=[1]), new_shape=[8, 16])
        fd.add_output(rows)
        fd.add_output(fd.ops.sum(fd.ops.mul(rows, w), dims=[1]))
    return fd


def test_the_audit_reads_plain_launches_and_a_view_between_them() -> None:
    fd = _sum_reshape_sum()
    inputs = [torch.randn(128, 4096), torch.randn(8, 16)]
    with stand_in_device(), torch.no_grad():
        line, slow = audit("sum_reshape_sum", fd, inputs, show=False)
    assert line.split()[1:] == ["PVP", "locals"] and not slow, line


def test_a_host_scalar_tensor_keeps_the_launch_plain() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(fd.ops.exp(fd.ops.mul(x, s)))
    with stand_in_device(), torch.no_grad():
        line, slow = audit("scaled", fd, [torch.randn(64, 64), torch.tensor(0.5)], show=False)
    assert line.split()[1:] == ["P", "locals"] and not slow, line


def test_the_stand_ins_are_taken_back() -> None:
    empty, zeros = torch.empty, torch.zeros
    before = registry._made.get("cupy")
    with stand_in_device():
        assert torch.empty is not empty
    assert torch.empty is empty and torch.zeros is zeros
    assert registry._made.get("cupy") is before


def test_steps_name_a_general_launch_and_the_environment() -> None:
    source = ("def run(flat):\n    (v1,) = flat\n    env = BASE.copy()\n    env[1] = v1\n"
              "    v4 = L6(S7, [v1], env, ctx, X8)[4]\n    return [v4]\n")
    assert steps(source) == ("L", "locals", True)


def test_a_part_run_as_parts_of_its_own_is_replayed_kernel_by_kernel() -> None:
    """Two reductions over dim 0, one of a slice (rows of another length): the segment's
    reduction part is cut again (runtime.parts); the warm run replays every kernel of both
    levels, in the order they ran, instead of giving up on the segment."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                             dtype=DataType.Double)
        whole = fd.ops.sum(fd.ops.ceil(x), dims=[0], keepdim=True)
        fd.add_output(fd.ops.minimum(whole, fd.define_scalar(2.0, dtype=DataType.Double)))
        cut = fd.ops.slice(x, start_indices=[14, 0, 0], end_indices=[16, 64, 256])
        fd.add_output(fd.ops.var(cut, dims=[0], correction=0, keepdim=False))
    with stand_in_device(), torch.no_grad():
        line, slow = audit("nested parts", fd, [torch.randn(16, 64, 256, dtype=torch.float64)],
                           show=False)
    assert not slow, line
    assert line.split()[2] == "PPP", line
