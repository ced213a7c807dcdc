"""Segment outputs that are views: the kernel does not write them, the runtime returns views.

nvFuser's markAliases (csrc/scheduler/mark_aliases.cpp) gives a pointwise, reduction or resize
segment's output whose alias chain (csrc/alias_analysis.cpp) starts at a segment input or
another segment output ``AllocationType::Evaluate``: its kernel computes it only where other
values need it, never stores it, and the runtime hands out ATen's view of the root. Here the
CuPy executor runs with the CPU emulator standing in for the GPU (``EmulatingExecutor``), on
CPU tensors: the kernel's parameters show what it writes, storage shows what comes back, and
eager torch gives the values.
"""

from __future__ import annotations

import pytest
import torch
from test_codegen import EmulatingExecutor, needs_gxx

from fusecli.codegen import Kernel, generate
from fusecli.codegen.kernel import ArgKind
from fusecli.frontend import DataType, FusionDefinition
from fusecli.runtime import registry
from fusecli.runtime.segmented import SegmentRunner
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.output_aliases import output_allocations
from fusecli.segment.segmenter import segment_fusion


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _tensor(fd: FusionDefinition, rank: int, dtype: DataType = DataType.Float):
    return fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=dtype)


@pytest.fixture(autouse=True)
def _emulated_kernels(monkeypatch: pytest.MonkeyPatch) -> EmulatingExecutor:
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)
    executor = EmulatingExecutor(poison=True)
    monkeypatch.setattr(registry, "_made", {"cupy": executor})
    return executor


def _run(fd: FusionDefinition, inputs: list[torch.Tensor]):
    """The outputs as ``fd.execute`` returns them with ``--executor cupy``, and each
    segment's scheduler, executor and kernel."""
    segmented = segment_fusion(fd.fusion, inputs)
    runner = SegmentRunner(segmented, inputs, executor="cupy")
    runs, kernels = [], []
    for segment in segmented.segments:
        runs.append(runner.run(segment))
        kernels.append(registry._made["cupy"].last_kernel if runs[-1].executor == "cupy"
                       else None)
    return runner.outputs(), runs, kernels


def _written(kernel: Kernel) -> list[str]:
    return [arg.name for arg in kernel.args if arg.kind is ArgKind.OUTPUT]


# (build the fusion, eager torch's outputs, the inputs): output 0 is a view of input 0
VIEW_CASES = {
    "permute": (
        lambda fd, x: [p := fd.ops.permute(x, [1, 0]), fd.ops.exp(p)],
        lambda x: [x.permute(1, 0), torch.exp(x.permute(1, 0))], [(64, 96)],
    ),
    "slice": (
        lambda fd, x: [s := fd.ops.slice(x, [0, 8], [64, 72]),
                       fd.ops.add(s, fd.define_scalar(1.0))],
        lambda x: [x[:, 8:72], x[:, 8:72] + 1.0], [(64, 96)],
    ),
    "reshape": (
        lambda fd, x: [r := fd.ops.reshape(x, [64, 4, 24]),
                       fd.ops.sum(fd.ops.mul(r, r), dims=[2])],
        lambda x: [x.view(64, 4, 24), (x.view(64, 4, 24) ** 2).sum(2)], [(64, 96)],
    ),
    "expand": (
        lambda fd, x: [e := fd.ops.expand(fd.ops.broadcast(x, [True, False, False]),
                                          [3, 64, 96]),
                       fd.ops.mul(e, fd.define_scalar(2.0))],
        lambda x: [x.expand(3, 64, 96), x.expand(3, 64, 96) * 2.0], [(64, 96)],
    ),
    # a squeeze of an input's size-1 dim (one of a broadcast made in the fusion cancels
    # against it: RemoveBcastSqueeze, and the output is the input itself)
    "squeeze": (
        lambda fd, x: [q := fd.ops.squeeze(x, [1]), fd.ops.neg(q)],
        lambda x: [x.squeeze(1), -x.squeeze(1)], [(64, 1, 96)],
    ),
}


@needs_gxx
@pytest.mark.parametrize("name", list(VIEW_CASES))
def test_a_view_of_an_input_is_not_written_by_the_kernel_and_comes_back_a_view(name) -> None:
    build, eager, shapes = VIEW_CASES[name]
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=list(shapes[0]),  # static: a slice's extent is known
                             contiguity=[None if size == 1 else True for size in shapes[0]],
                             dtype=DataType.Float)
        for out in build(fd, x):
            fd.add_output(out)
    x = torch.randn(*shapes[0])
    outputs, runs, kernels = _run(fd, [x])
    view, computed = outputs
    expected_view, expected = eager(x)
    assert [r.executor for r in runs] == ["cupy"], runs
    (kernel,) = kernels
    assert kernel.views and len(_written(kernel)) == 1, kernel.source
    assert _storage(view) == _storage(x) and view.stride() == expected_view.stride()
    assert view.data_ptr() == expected_view.data_ptr()
    assert torch.equal(view, expected_view)
    assert _storage(computed) != _storage(x)
    torch.testing.assert_close(computed, expected)


@needs_gxx
def test_a_view_of_a_written_output_is_evaluated_from_that_output() -> None:
    """markAliases: a broadcast of a kernel's output, also read by the kernel, is a view of
    that output (the segment's root is another of its outputs, not an input)."""
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        e = fd.ops.exp(x)
        b = fd.ops.broadcast(e, [True, False, False])
        fd.add_output(e)
        fd.add_output(b)
        fd.add_output(fd.ops.add(b, fd.define_scalar(1.0)))
    x = torch.randn(32, 48)
    (e, b, plus_one), runs, kernels = _run(fd, [x])
    assert [r.executor for r in runs] == ["cupy"], runs
    assert len(_written(kernels[0])) == 2 and kernels[0].views
    assert b.data_ptr() == e.data_ptr() and b.stride() == e.unsqueeze(0).stride()
    torch.testing.assert_close(b, torch.exp(x).unsqueeze(0))
    torch.testing.assert_close(plus_one, torch.exp(x).unsqueeze(0) + 1.0)


@needs_gxx
def test_a_reshape_that_is_no_view_is_written_by_the_kernel() -> None:
    """A transpose does not merge into a view: nvFuser's alias analysis says no alias, torch
    copies, and so does the kernel."""
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        moved = fd.ops.reshape(fd.ops.permute(x, [1, 0]), [64 * 96])
        fd.add_output(moved)
        fd.add_output(fd.ops.exp(moved))
    x = torch.randn(64, 96)
    (moved, exped), runs, kernels = _run(fd, [x])
    allocations = output_allocations(segment_fusion(fd.fusion, [x]))
    assert fd.fusion.outputs[0].value.uid not in allocations.evaluated
    written = [k for k in kernels if k is not None]
    assert written and sum(len(_written(k)) for k in written) == 2
    assert _storage(moved) != _storage(x)
    assert torch.equal(moved, x.t().reshape(-1))
    torch.testing.assert_close(exped, torch.exp(x.t().reshape(-1)))


def test_without_views_the_kernel_writes_every_output() -> None:
    """``generate`` as ``fusecli codegen`` calls it (no runtime, no views): every output."""
    with FusionDefinition() as fd:
        x = _tensor(fd, 2)
        permuted = fd.ops.permute(x, [1, 0])
        fd.add_output(permuted)
        fd.add_output(fd.ops.exp(permuted))
    x = torch.randn(64, 96)
    segmented = segment_fusion(fd.fusion, [x])
    (segment,) = [s for s in segmented.segments if s.scheduler != "expr_eval"]
    inputs = [x for _ in segment.inputs]
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), inputs)
    assert isinstance(kernel, Kernel) and not kernel.views
    assert len(_written(kernel)) == len(segment.outputs) == 2
    views = frozenset(output_allocations(segmented).evaluated)
    viewed = generate(segment, RuntimeInfo(segmented.fusion, [x]), inputs, views=views)
    assert isinstance(viewed, Kernel) and len(_written(viewed)) == 1
    assert [e.op.value for e in viewed.views] == ["permute"]
