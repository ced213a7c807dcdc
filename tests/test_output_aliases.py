"""Outputs that come back in an input's memory, or another output's, as nvFuser returns them.

nvFuser's runtime (csrc/runtime/allocations.cpp, csrc/scheduler/mark_aliases.cpp) hands out a
fusion input added as an output as that input, an output written into an input
(``add_output(out, alias_input)``) and also added as an output as that input, and the meta ops
of an input (reshape, permute, slice, broadcast, ...) as ATen's view of it. Each case is run
three times: the first call runs in full, the later ones on the warm path (runtime.warm).
The reference is eager torch's own view, or plain storage identity.
"""

from __future__ import annotations

import pytest
import torch

from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.frontend import DataType, FusionDefinition
from fusecli.load import load_path
from fusecli.reference import run_reference
from fusecli.runtime import registry
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.segmented import execute
from fusecli.segment.output_aliases import output_allocations
from fusecli.segment.segmenter import segment_fusion

CALLS = 3


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _tensor(fd: FusionDefinition, rank: int):
    return fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=DataType.Float)


@pytest.fixture(autouse=True)
def _no_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)


def test_a_reshape_of_an_input_is_a_view_of_it_on_every_call() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([2, 3, 4], contiguity=[True, True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [2, 12]))
    x = torch.rand(2, 3, 4)
    expected = x.view(2, 12)  # torch's own view: same memory, same strides
    for _ in range(CALLS):
        (y,) = fd.execute([x])
        assert y.data_ptr() == expected.data_ptr() and y.stride() == expected.stride()
        assert torch.equal(y, expected)


def test_a_permute_slice_broadcast_chain_keeps_torchs_view_layout() -> None:
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        t = fd.ops.permute(x, [1, 0])
        t = fd.ops.slice(t, [1, 0], [4, 3])
        fd.add_output(fd.ops.broadcast(t, [False, True, False]))
    x = torch.randn(3, 5)
    expected = x.permute(1, 0)[1:4, 0:3].unsqueeze(1)
    for _ in range(CALLS):
        (y,) = fd.execute([x])
        assert y.data_ptr() == expected.data_ptr() and y.stride() == expected.stride()
        assert torch.equal(y, expected)


def test_an_output_written_into_its_input_and_returned_is_the_input() -> None:
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        relu = fd.ops.where(fd.ops.gt(x, fd.define_scalar(0.0)), x, fd.define_scalar(0.0))
        fd.add_output(relu)
        fd.add_output(relu, x)  # written into x, hidden
        fd.add_output(x)
    x = torch.randn(3, 4)
    for _ in range(CALLS):
        expected = torch.relu(x)
        outputs = fd.execute([x])
        assert len(outputs) == 2
        assert all(out is x for out in outputs)  # nvFuser hands the input buffer out
        assert torch.equal(x, expected)


def test_an_input_returned_as_an_output_is_the_input_every_call() -> None:
    with FusionDefinition() as fd:
        x = _tensor(fd, 1)
        fd.add_output(x)
        fd.add_output(fd.ops.neg(x))
    x = torch.randn(5)
    for _ in range(CALLS):
        same, negated = fd.execute([x])
        assert same is x
        assert torch.equal(negated, -x) and _storage(negated) != _storage(x)


def test_a_tensor_added_twice_is_one_tensor() -> None:
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        y = fd.ops.exp(x)
        fd.add_output(y)
        fd.add_output(y)
    x = torch.randn(2, 3)
    for _ in range(CALLS):
        first, second = fd.execute([x])
        assert first is second
        assert torch.equal(first, torch.exp(x))


def test_a_reshape_that_needs_a_copy_gets_memory_of_its_own() -> None:
    """A transpose cannot merge into a view: torch copies too, and so does nvFuser."""
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        fd.add_output(fd.ops.reshape(fd.ops.permute(x, [1, 0]), [12]))
    x = torch.randn(3, 4)
    expected = x.permute(1, 0).reshape(12)
    assert _storage(expected) != _storage(x)
    for _ in range(CALLS):
        (y,) = fd.execute([x])
        assert _storage(y) != _storage(x)
        assert torch.equal(y, expected)


def test_a_pointwise_segment_returns_an_alias_of_its_output_as_a_view() -> None:
    """markAliases: a broadcast of a pointwise output, also read by the kernel, is evaluated
    from that output, not written by the kernel."""
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        e = fd.ops.exp(x)
        b = fd.ops.broadcast(e, [True, False, False])
        fd.add_output(e)
        fd.add_output(b)
        fd.add_output(fd.ops.add(b, fd.define_scalar(1.0)))
    x = torch.randn(2, 3)
    segmented = segment_fusion(fd.fusion, [x])
    assert [s.scheduler for s in segmented.segments] == ["pointwise"]
    for _ in range(CALLS):
        e, b, plus_one = fd.execute([x])
        assert b.data_ptr() == e.data_ptr() and b.stride() == e.unsqueeze(0).stride()
        assert torch.equal(b, torch.exp(x).unsqueeze(0))
        assert _storage(plus_one) != _storage(e)


def test_only_evaluated_outputs_are_views_of_their_root() -> None:
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        fd.add_output(fd.ops.permute(x, [1, 0]))
        fd.add_output(fd.ops.exp(x))
    x = torch.randn(2, 3)
    permuted, exped = fd.fusion.outputs
    allocations = output_allocations(segment_fusion(fd.fusion, [x]))
    root = permuted.value  # through the segment_set MarkAliasesPrepare puts after x
    while root.uid in allocations.evaluated:
        root = allocations.evaluated[root.uid].root
    assert root is fd.fusion.inputs[0]
    assert exped.value.uid not in allocations.evaluated
    permuted, exped = fd.execute([x])
    assert permuted.data_ptr() == x.data_ptr() and _storage(exped) != _storage(x)


class _CopyingKernels(AtenExecutor):
    """A stand-in for the CuPy executor whose kernels write every output, aliases included,
    into memory of their own, as a generated kernel would."""

    name = "cupy"
    injects_faults = False

    def attempt(self, segment, env, ctx) -> None:
        super().attempt(segment, env, ctx)
        for out in segment.outputs:
            env[out.uid] = env[out.uid].clone()


def test_a_view_a_kernel_wrote_as_a_copy_is_evaluated_again(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_made", {"cupy": _CopyingKernels()})
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        e = fd.ops.exp(x)
        b = fd.ops.broadcast(e, [True, False, False])
        fd.add_output(e)
        fd.add_output(b)
        fd.add_output(fd.ops.add(b, fd.define_scalar(1.0)))
    x = torch.randn(2, 3)
    for _ in range(CALLS):
        e, b, _ = execute(fd.fusion, [x], executor="cupy")
        assert b.data_ptr() == e.data_ptr()
        assert torch.equal(b, torch.exp(x).unsqueeze(0))


RELU_WRITTEN_AND_RETURNED = """
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.gt(T0, fd.define_scalar(0.0, dtype=DataType.Double))
    T4 = fd.ops.where(T2, T0, fd.define_scalar(0.0, dtype=DataType.Double))
    fd.add_output(T4)
    fd.add_output(T4, T0)
    fd.add_output(T0)

fd.execute([torch.randn(3, 4, device="cuda")])
"""


def test_the_reference_returns_a_written_input_as_written() -> None:
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        relu = fd.ops.where(fd.ops.gt(x, fd.define_scalar(0.0)), x, fd.define_scalar(0.0))
        fd.add_output(relu, x)
        fd.add_output(x)
    x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)  # negatives: the write changes x
    (written,) = run_reference(fd.fusion, [x.clone()]).outputs
    assert torch.equal(written, torch.relu(x))


def test_fusecli_run_agrees_with_the_reference_on_a_written_input_it_returns(tmp_path) -> None:
    path = tmp_path / "relu_in_place.py"
    path.write_text(RELU_WRITTEN_AND_RETURNED, encoding="utf-8")
    (loaded,) = load_path(path, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert outcome.status == "pass", outcome.error
    assert len(outcome.outputs) == 2
