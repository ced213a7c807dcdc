import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[8192, 1024], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1024], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[1024], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.ops.sum(T0, dims=[0], keepdim=False, dtype=DataType.Null)
    S4 = fd.define_scalar(8192.00, dtype=DataType.Double)
    T5 = fd.ops.div(T3, S4)
    T9 = fd.ops.broadcast_in_dim(T5, shape=[1, 1024], broadcast_dims=[1])
    T13 = fd.ops.broadcast_in_dim(T9, shape=[8192, 1024], broadcast_dims=[0, 1])
    T14 = fd.ops.sub(T0, T13)
    T15 = fd.ops.mul(T14, T14)
    T16 = fd.ops.sum(T15, dims=[0], keepdim=False, dtype=DataType.Null)
    S17 = fd.define_scalar(8192.00, dtype=DataType.Double)
    T18 = fd.ops.div(T16, S17)
    S19 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T20 = fd.ops.add(T18, S19)
    T21 = fd.ops.rsqrt(T20)
    T25 = fd.ops.broadcast_in_dim(T21, shape=[1, 1024], broadcast_dims=[1])
    T29 = fd.ops.broadcast_in_dim(T25, shape=[8192, 1024], broadcast_dims=[0, 1])
    T30 = fd.ops.mul(T14, T29)
    T34 = fd.ops.broadcast_in_dim(T1, shape=[8192, 1024], broadcast_dims=[1])
    T35 = fd.ops.mul(T30, T34)
    T39 = fd.ops.broadcast_in_dim(T2, shape=[8192, 1024], broadcast_dims=[1])
    T40 = fd.ops.add(T35, T39)
    fd.add_output(T40)
    fd.add_output(T5)
    fd.add_output(T21)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8192, 1024), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1024,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1024,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
