import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[64, 128], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[64, 128], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[64, 128], contiguity=[True, True], dtype=DataType.Int32, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[128], contiguity=[True], dtype=DataType.Int32, is_cpu=False, stride_order=[0])
    T4 = fd.ops.div(T0, T1)
    T5 = fd.ops.fmod(T0, T1)
    T6 = fd.ops.remainder(T0, T1)
    T7 = fd.ops.mul(T4, T1)
    T8 = fd.ops.add(T7, T5)
    S9 = fd.define_scalar(255, dtype=DataType.Int)
    T10 = fd.ops.bitwise_and(T0, S9)
    T11 = fd.ops.bitwise_or(T0, T1)
    S12 = fd.define_scalar(90, dtype=DataType.Int)
    T13 = fd.ops.bitwise_xor(T2, S12)
    S14 = fd.define_scalar(15, dtype=DataType.Int)
    T15 = fd.ops.bitwise_and(T2, S14)
    T19 = fd.ops.broadcast_in_dim(T3, shape=[64, 128], broadcast_dims=[1])
    T20 = fd.ops.bitwise_left_shift(T15, T19)
    S21 = fd.define_scalar(2, dtype=DataType.Int)
    T22 = fd.ops.bitwise_right_shift(T0, S21)
    T23 = fd.ops.add(T2, T0)
    S24 = fd.define_scalar(0, dtype=DataType.Int)
    T25 = fd.ops.lt(T0, S24)
    T26 = fd.ops.ne(T6, S24)
    T27 = fd.ops.logical_and(T25, T26)
    T28 = fd.ops.where(T27, T4, T6)
    T29 = fd.ops.eq(T8, T0)
    T30 = fd.ops.truediv(T0, T1)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T29)
    fd.add_output(T10)
    fd.add_output(T11)
    fd.add_output(T13)
    fd.add_output(T20)
    fd.add_output(T22)
    fd.add_output(T23)
    fd.add_output(T28)
    fd.add_output(T30)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64, 128), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((64, 128), dtype=torch.int64, device='cuda:0', low=1, high=16),
    torch.testing.make_tensor((64, 128), dtype=torch.int32, device='cuda:0'),
    torch.testing.make_tensor((128,), dtype=torch.int32, device='cuda:0', low=0, high=8),
]
fd.execute(inputs)
