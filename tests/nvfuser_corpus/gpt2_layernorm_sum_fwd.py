import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.ops.sum(T0, dims=[2], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.broadcast_in_dim(T3, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    S9 = fd.define_scalar(768.000, dtype=DataType.Double)
    T10 = fd.ops.div(T8, S9)
    T15 = fd.ops.broadcast_in_dim(T10, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T16 = fd.ops.sub(T0, T15)
    T17 = fd.ops.mul(T16, T16)
    T18 = fd.ops.sum(T17, dims=[2], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.broadcast_in_dim(T18, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    S24 = fd.define_scalar(768.000, dtype=DataType.Double)
    T25 = fd.ops.div(T23, S24)
    S26 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T27 = fd.ops.add(T25, S26)
    T28 = fd.ops.rsqrt(T27)
    T33 = fd.ops.broadcast_in_dim(T28, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T34 = fd.ops.mul(T16, T33)
    T39 = fd.ops.broadcast_in_dim(T1, shape=[2, 1024, 768], broadcast_dims=[2])
    T40 = fd.ops.mul(T34, T39)
    T45 = fd.ops.broadcast_in_dim(T2, shape=[2, 1024, 768], broadcast_dims=[2])
    T46 = fd.ops.add(T40, T45)
    fd.add_output(T46)
    fd.add_output(T10)
    fd.add_output(T28)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
