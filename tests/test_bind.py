"""fusecli.runtime.bind: the checks nvFuser makes on execute inputs, one InputError line each."""

from __future__ import annotations

import pytest
import torch

from fusecli.errors import InputError
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Fusion, IterDomain, SymbolicExtent, TensorView
from fusecli.runtime import Bindings, bind_inputs


def fusion_of(body) -> Fusion:
    with FusionDefinition() as fd:
        body(fd)
    return fd.fusion


def two_inputs(fd: FusionDefinition) -> None:
    t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                          dtype=DataType.BFloat16)
    s1 = fd.define_scalar(dtype=DataType.Double)
    fd.add_output(fd.ops.mul(t0, s1))


def one_tensor(shape, contiguity, dtype=DataType.Float, stride_order=None) -> Fusion:
    def body(fd):
        kwargs = {"stride_order": stride_order} if stride_order else {}
        t0 = fd.define_tensor(shape=shape, contiguity=contiguity, dtype=dtype, **kwargs)
        fd.add_output(fd.ops.neg(t0))

    return fusion_of(body)


def test_binds_values_and_symbolic_extents() -> None:
    fusion = fusion_of(two_inputs)
    x = torch.randn(2, 3, 4, dtype=torch.bfloat16)
    bindings = bind_inputs(fusion, [x, 2])
    assert isinstance(bindings, Bindings)
    tensor, scalar = fusion.inputs
    assert bindings.values[tensor.uid] is x
    assert bindings.values[scalar.uid] == 2.0 and isinstance(bindings.values[scalar.uid], float)
    assert [bindings.extents[d.extent] for d in tensor.logical] == [2, 3, 4]
    assert bindings.device == torch.device("cpu")


def test_nested_inputs_are_flattened_for_define_vector() -> None:
    def body(fd):
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        shape = fd.define_vector(2)
        fd.add_output(fd.ops.reshape(t0, shape))

    fusion = fusion_of(body)
    bindings = bind_inputs(fusion, [torch.randn(6), (2, 3)])
    assert [bindings.values[s.uid] for s in fusion.inputs[1:]] == [2, 3]
    bindings = bind_inputs(fusion, [[torch.randn(6), [2]], torch.Size([3])])
    assert [bindings.values[s.uid] for s in fusion.inputs[1:]] == [2, 3]


def test_wrong_number_of_inputs_lists_what_is_expected() -> None:
    fusion = fusion_of(two_inputs)
    with pytest.raises(InputError) as error:
        bind_inputs(fusion, [torch.randn(2, 3, 4, dtype=torch.bfloat16)])
    assert str(error.value) == (
        "fusion expects 2 inputs (input 0: bfloat16 tensor of rank 3, "
        "input 1: float64 scalar), got 1"
    )


def test_a_tensor_input_needs_a_tensor() -> None:
    with pytest.raises(InputError, match=r"^input 0: expected a bfloat16 tensor of rank 3, got"):
        bind_inputs(fusion_of(two_inputs), [3.0, 2.0])


def test_wrong_dtype() -> None:
    with pytest.raises(InputError, match=r"^input 0: expected bfloat16, got float32$"):
        bind_inputs(fusion_of(two_inputs), [torch.randn(2, 3, 4), 2.0])


def test_wrong_rank() -> None:
    x = torch.randn(2, 3, dtype=torch.bfloat16)
    with pytest.raises(InputError, match=r"^input 0: expected a tensor of rank 3, got rank 2"):
        bind_inputs(fusion_of(two_inputs), [x, 2.0])


def test_scalar_inputs_need_numbers_of_their_kind() -> None:
    x = torch.randn(2, 3, 4, dtype=torch.bfloat16)
    with pytest.raises(InputError, match=r"^input 1: expected a float64 scalar, got a str"):
        bind_inputs(fusion_of(two_inputs), [x, "2"])
    fusion = fusion_of(two_inputs)
    bindings = bind_inputs(fusion, [x, torch.tensor(1.5)])
    assert bindings.values[fusion.inputs[1].uid] == 1.5

    def int_input(fd):
        fd.add_output(fd.ops.mul(fd.define_scalar(dtype=DataType.Int),
                                 fd.define_scalar(2, dtype=DataType.Int)))

    with pytest.raises(InputError, match=r"^input 0: expected an int64 scalar, got float 2.5"):
        bind_inputs(fusion_of(int_input), [2.5])


def test_static_size_mismatch() -> None:
    fusion = one_tensor([4, -1], [True, True])
    bind_inputs(fusion, [torch.randn(4, 7)])
    with pytest.raises(InputError, match=r"^input 0: dimension 0 has static size 4 .* got 5$"):
        bind_inputs(fusion, [torch.randn(5, 7)])


def test_zero_size_static_dimension() -> None:
    fusion = one_tensor([0, -1], [True, True])
    bind_inputs(fusion, [torch.randn(0, 3)])
    with pytest.raises(InputError, match="static size 0"):
        bind_inputs(fusion, [torch.randn(2, 3)])


def test_broadcast_dimension_needs_size_one() -> None:
    fusion = one_tensor([-1, 1], [True, None])
    bind_inputs(fusion, [torch.randn(3, 1)])
    with pytest.raises(InputError, match=r"^input 0: dimension 1 is a broadcast dimension"):
        bind_inputs(fusion, [torch.randn(3, 2)])


def test_symbolic_extent_shared_within_one_input() -> None:
    shared = SymbolicExtent()
    square = TensorView(
        DataType.Float, (IterDomain.iteration(shared), IterDomain.iteration(shared)),
        contiguity=(False, False),
    )
    other = TensorView(DataType.Float, (IterDomain.iteration(shared),), contiguity=(True,))
    fusion = Fusion(inputs=(square, other), outputs=(), exprs=())
    bindings = bind_inputs(fusion, [torch.randn(3, 3), torch.randn(5)])  # across inputs: fine
    assert bindings.extents[shared] == 3
    with pytest.raises(InputError, match="dimensions 0 and 1 share one symbolic size"):
        bind_inputs(fusion, [torch.randn(3, 4), torch.randn(3)])


def test_stride_mismatch_with_contiguity() -> None:
    fusion = one_tensor([-1, -1], [True, True])
    transposed = torch.randn(4, 3).t()
    with pytest.raises(InputError, match=r"^input 0: Stride mismatch with contiguity info"):
        bind_inputs(fusion, [transposed])
    sliced = torch.randn(3, 8)[:, :4]  # inner dim contiguous, outer stride 8 != 4
    with pytest.raises(InputError, match="dimension 0 is marked contiguous and needs stride 4"):
        bind_inputs(fusion, [sliced])
    bind_inputs(one_tensor([-1, -1], [False, True]), [sliced])
    bind_inputs(one_tensor([-1, -1], [False, False]), [transposed])


def test_stride_order_definitions() -> None:
    channels_last = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    fusion = one_tensor([-1] * 4, [True] * 4, stride_order=[3, 0, 2, 1])
    bind_inputs(fusion, [channels_last])
    with pytest.raises(InputError, match="Stride mismatch"):
        bind_inputs(fusion, [torch.randn(2, 3, 4, 5)])


def test_broadcast_contiguity_needs_stride_zero_or_size_one() -> None:
    fusion = one_tensor([-1, -1], [True, None])  # dim 1: an expanded broadcast
    bind_inputs(fusion, [torch.randn(3, 1).expand(3, 4)])
    with pytest.raises(InputError, match="dimension 1 is a broadcast dimension .* stride 0"):
        bind_inputs(fusion, [torch.randn(3, 4)])


def test_size_one_dimensions_may_have_any_stride() -> None:
    fusion = one_tensor([-1, -1], [True, True])
    column = torch.randn(1, 3).t()  # shape (3, 1), strides (1, 3)
    bind_inputs(fusion, [column])


def test_tensors_defined_from_strides_accept_their_own_layout() -> None:
    for tensor in (
        torch.randn(2, 3, 4).permute(2, 0, 1),
        torch.randn(3, 1).expand(3, 4),
        torch.randn(4, 6)[:, ::2],
    ):
        def body(fd, tensor=tensor):
            t0 = fd.define_tensor(sizes=list(tensor.shape), strides=list(tensor.stride()),
                                  dtype=dt.from_torch(tensor.dtype))
            fd.add_output(fd.ops.neg(t0))

        bind_inputs(fusion_of(body), [tensor])
