"""take_along_axis with broadcast dimensions, and index_put_accumulate, as a script calls them:
each result against eager torch (torch.take_along_dim, torch.index_put with accumulate=True),
through the ATen executor and through the reference."""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.builder import DefinitionError
from fusecli.reference import run_reference
from fusecli.segment.segmenter import segment_fusion

TORCH_DTYPES = {
    torch.float32: DataType.Float, torch.float64: DataType.Double,
    torch.complex64: DataType.ComplexFloat, torch.int32: DataType.Int32,
    torch.int64: DataType.Int, torch.bfloat16: DataType.BFloat16,
}


def _input(fd: FusionDefinition, tensor: torch.Tensor):
    """A fusion input shaped as ``tensor``: size-1 dims broadcast, others symbolic."""
    return fd.define_tensor(
        shape=[1 if size == 1 else -1 for size in tensor.shape],
        contiguity=[True] * tensor.dim(), dtype=TORCH_DTYPES[tensor.dtype],
    )


def _both_ways(fd: FusionDefinition, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The one output as the executor computes it and as the reference does."""
    (executed,) = fd.execute([x.clone() for x in inputs])
    (reference,) = run_reference(fd.fusion, [x.clone() for x in inputs]).outputs
    return executed, reference


# -- take_along_axis: the index's dims and the input's broadcast against each other -------------

BROADCAST_CASES = [
    # (input shape, index shape, dim): broadcast dims of the index or of the input
    ((4, 2, 3), (8, 2, 1), 0),
    ((4, 2, 3), (8, 1, 3), 0),
    ((4, 2, 3), (8, 1, 1), -3),
    ((4, 1, 3), (8, 5, 3), 0),
    ((4, 1), (1, 5), 0),
    ((4, 2, 3), (4, 1, 7), 2),
]


@pytest.mark.parametrize(("input_shape", "index_shape", "dim"), BROADCAST_CASES)
def test_take_along_axis_broadcasts_like_torch_take_along_dim(input_shape, index_shape, dim):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(input_shape, generator=generator)
    index = torch.randint(0, input_shape[dim], index_shape, generator=generator)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.take_along_axis(_input(fd, x), _input(fd, index), dim))
    expected = torch.take_along_dim(x, index, dim=dim)
    for result in _both_ways(fd, [x, index]):
        assert result.shape == expected.shape
        assert torch.equal(result, expected)


def test_take_along_axis_keeps_an_expanded_index_dims_size():
    x = torch.randn(4, 1)
    index = torch.randint(0, 4, (3, 1)).expand(3, 6)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        t1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Int)
        wide = fd.ops.expand(t1, [3, 6])
        fd.add_output(fd.ops.take_along_axis(t0, wide, 0))
    expected = torch.take_along_dim(x, index, dim=0)
    for result in _both_ways(fd, [x, index[:, :1].contiguous()]):
        assert result.shape == (3, 6)
        assert torch.equal(result, expected)


# -- index_put_accumulate --------------------------------------------------------------------


def _index_put_case(dtype: torch.dtype, index_dtype: torch.dtype):
    generator = torch.Generator().manual_seed(1)
    if dtype.is_floating_point or dtype.is_complex:
        acc = torch.randn(16, 5, generator=generator).to(dtype)
        value = torch.randn(40, 5, generator=generator).to(dtype)
    else:
        acc = torch.randint(-50, 50, (16, 5), generator=generator, dtype=dtype)
        value = torch.randint(-50, 50, (40, 5), generator=generator, dtype=dtype)
    index = torch.randint(0, 16, (40,), generator=generator).to(index_dtype)  # repeats rows
    return acc, index, value


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.int64,
                                   torch.int32])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_index_put_accumulate_adds_every_row_its_index_sends(dtype, index_dtype):
    acc, index, value = _index_put_case(dtype, index_dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.index_put_accumulate(
            _input(fd, acc), _input(fd, index), _input(fd, value)))
    expected = torch.index_put(acc, (index.long(),), value, accumulate=True)
    for result in _both_ways(fd, [acc, index, value]):
        assert result.dtype == acc.dtype
        torch.testing.assert_close(result, expected)


def test_index_put_accumulate_takes_nvfusers_keywords_and_leaves_acc_alone():
    acc, index, value = _index_put_case(torch.float32, torch.int64)
    with FusionDefinition() as fd:
        t0, t1, t2 = _input(fd, acc), _input(fd, index), _input(fd, value)
        fd.add_output(fd.ops.index_put_accumulate(acc=t0, index=t1, value=t2))
    before = acc.clone()
    (result,) = fd.execute([acc, index, value])
    assert torch.equal(acc, before)
    torch.testing.assert_close(result, torch.index_put(acc, (index,), value, accumulate=True))
    assert "indexPutAccumulate( T0_g_float" in fd.fusion_ir()
    assert "fd.ops.index_put_accumulate(T0, T1, T2)" in repr(fd)


def test_index_put_accumulate_runs_alone_through_aten_as_nvfusers_expr_eval():
    acc, index, value = _index_put_case(torch.float32, torch.int64)
    with FusionDefinition() as fd:
        t0, t1, t2 = _input(fd, acc), _input(fd, index), _input(fd, value)
        fd.add_output(fd.ops.relu(fd.ops.index_put_accumulate(fd.ops.neg(t0), t1, t2)))
    segmented = segment_fusion(fd.fusion)
    schedulers = [segment.scheduler for segment in segmented.segments]
    assert "expr_eval" in schedulers and len(schedulers) > 1
    (result,) = fd.execute([acc, index, value])
    expected = torch.relu(torch.index_put(-acc, (index,), value, accumulate=True))
    torch.testing.assert_close(result, expected)


def test_a_float32_accumulation_stays_within_its_error_bound():
    # Rows hit by many values round as often: eager float32 against the float64 value.
    acc, index, value = _index_put_case(torch.float32, torch.int64)
    index = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(2))
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.index_put_accumulate(
            _input(fd, acc), _input(fd, index), _input(fd, value)))
    exact = run_reference(fd.fusion, [acc, index, value], float64=True, bounds=True)
    eager = torch.index_put(acc, (index,), value, accumulate=True)
    error = (eager.double() - exact.outputs[0]).abs()
    assert bool((error <= exact.bounds[0].hard).all())
    assert float(exact.bounds[0].hard.max()) > 0


@pytest.mark.parametrize(("index_shape", "value_shape", "value_dtype", "words"), [
    ((4, 2), (8, 5), DataType.Float, "index must be 1-D"),
    ((8,), (8,), DataType.Float, "acc's rank"),
    ((8,), (8, 5), DataType.Double, "dtypes match"),
    ((8,), (7, 5), DataType.Float, "index and value differ in size"),
    ((8,), (8, 4), DataType.Float, "acc and value differ in size"),
])
def test_index_put_accumulate_says_what_is_wrong(index_shape, value_shape, value_dtype, words):
    with pytest.raises(DefinitionError, match=words):
        with FusionDefinition() as fd:
            acc = fd.define_tensor(shape=[16, 5], dtype=DataType.Float)
            index = fd.define_tensor(shape=list(index_shape), dtype=DataType.Int)
            value = fd.define_tensor(shape=list(value_shape), dtype=value_dtype)
            fd.ops.index_put_accumulate(acc, index, value)
