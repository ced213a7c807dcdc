"""runtime/warm_views.py: a compiled warm run makes a shape expr's view by the torch method
itself, and that view is the one the ATen entry makes, for the call it was compiled on and for
a later call of the same signature whose tensor sits elsewhere in its storage."""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.optype import OpType
from fusecli.runtime.warm_views import direct_view


def _runs(fd) -> list:
    return [run for run in fd.fusion.memo.get("warm", {}).values() if run is not None]


def _sliced(fd, x):
    return fd.ops.slice(x, start_indices=[1, 0, 2], end_indices=[3, 8, 14])


CASES = {
    "reshape": (lambda fd, x: fd.ops.reshape(x, new_shape=[4, 8 * 16]),
                lambda x: x.reshape(4, 128)),
    "permute": (lambda fd, x: fd.ops.permute(x, dims=[2, 0, 1]), lambda x: x.permute(2, 0, 1)),
    "broadcast": (lambda fd, x: fd.ops.broadcast(x, is_broadcast_dim=[True, False, False,
                                                                      True, False]),
                  lambda x: x[None, :, :, None]),
    "slice": (_sliced, lambda x: x[1:3, 0:8, 2:14]),
    "segment_set then permute": (
        lambda fd, x: fd.ops.permute(fd.ops.segment_set(x), dims=[1, 0, 2]),
        lambda x: x.permute(1, 0, 2)),
    "slice then reshape (a copy)": (
        lambda fd, x: fd.ops.reshape(_sliced(fd, x), new_shape=[2 * 8 * 12]),
        lambda x: x[1:3, 0:8, 2:14].reshape(-1)),
}


@pytest.mark.parametrize("case", CASES)
def test_the_replay_makes_the_view_by_its_method_and_as_the_entry_does(case) -> None:
    define, eager = CASES[case]
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                             dtype=DataType.Float)
        fd.add_output(define(fd, x))
    storage = torch.randn(2 * 4 * 8 * 16 + 64)
    first, later = storage[:512].view(4, 8, 16), storage[64:576].view(4, 8, 16)
    fd.execute([first])
    got = fd.execute([first])[0]
    (run,) = _runs(fd)
    assert " = A" not in run.source, run.source  # no step through the ATen entry
    for tensor in (first, later):  # the later call: the same signature, 64 elements on
        got = fd.execute([tensor])[0]
        expected = eager(tensor)
        assert torch.equal(got, expected)
        assert got.stride() == expected.stride()
        assert (got.untyped_storage().data_ptr() == storage.untyped_storage().data_ptr()) == (
            expected.untyped_storage().data_ptr() == storage.untyped_storage().data_ptr())
    assert len(_runs(fd)) == 1


def test_an_expand_and_a_squeeze_of_an_expanded_dim() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True],
                             dtype=DataType.Half)
        wide = fd.ops.expand(x, shape=[4, 6, 16])
        fd.add_output(fd.ops.squeeze(wide, dims=[1], squeeze_expanded=True))
        fd.add_output(fd.ops.add(wide, wide))
    x = torch.randn(4, 1, 16).half()
    for _ in range(3):
        squeezed, doubled = fd.execute([x])
    assert torch.equal(squeezed, x[:, 0]) and torch.equal(doubled, (x + x).expand(4, 6, 16))


def test_a_call_that_would_differ_is_not_taken() -> None:
    """A method whose view differs from the entry's result (here, a stand-in result of
    another layout) is refused: the step keeps the entry."""
    import types

    x = torch.randn(4, 8)
    expr = types.SimpleNamespace(op=OpType.permute, attr=lambda name: (1, 0))
    assert direct_view(expr, [x], x.t()) == ("permute", (1, 0))
    assert direct_view(expr, [x], x.t().contiguous()) is None
    assert direct_view(expr, [x], 3.0) is None
