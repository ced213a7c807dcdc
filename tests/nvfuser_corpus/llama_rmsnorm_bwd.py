import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 2048, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T9 = fd.ops.broadcast_in_dim(T2, shape=[1, 2048, 4096], broadcast_dims=[0, 1, 2])
    T10 = fd.ops.mul(T4, T9)
    T11 = fd.ops.cast(T10, dtype=DataType.BFloat16)
    T12 = fd.ops.cast(T0, dtype=DataType.Float)
    T13 = fd.ops.cast(T11, dtype=DataType.Float)
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.sum(T14, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T16 = fd.ops.cast(T15, dtype=DataType.BFloat16)
    T21 = fd.ops.broadcast_in_dim(T3, shape=[1, 2048, 4096], broadcast_dims=[2])
    T22 = fd.ops.cast(T21, dtype=DataType.Float)
    T23 = fd.ops.mul(T12, T22)
    T24 = fd.ops.cast(T23, dtype=DataType.BFloat16)
    T25 = fd.ops.cast(T24, dtype=DataType.Float)
    T26 = fd.ops.mul(T25, T9)
    T27 = fd.ops.mul(T25, T4)
    T28 = fd.ops.sum(T27, dims=[2], keepdim=False, dtype=DataType.Null)
    T33 = fd.ops.broadcast_in_dim(T28, shape=[1, 2048, 1], broadcast_dims=[0, 1])
    S34 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T35 = fd.ops.pow(T2, S34)
    T36 = fd.ops.mul(T33, T35)
    S37 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T38 = fd.ops.mul(T36, S37)
    S39 = fd.define_scalar(4096.00, dtype=DataType.Double)
    T40 = fd.ops.div(T38, S39)
    T45 = fd.ops.broadcast_in_dim(T40, shape=[1, 2048, 4096], broadcast_dims=[0, 1, 2])
    S46 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T47 = fd.ops.mul(T45, S46)
    T48 = fd.ops.mul(T47, T4)
    T49 = fd.ops.add(T26, T48)
    T50 = fd.ops.cast(T49, dtype=DataType.BFloat16)
    fd.add_output(T50)
    fd.add_output(T16)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((4096,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
