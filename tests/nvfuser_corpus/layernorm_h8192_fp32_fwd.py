import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1024, 8192], contiguity=[None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[8192], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[8192], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3, T4 = fd.ops.var_mean(T0, dims=[2], correction=0, keepdim=False)
    T9 = fd.ops.broadcast_in_dim(T3, shape=[1, 1024, 1], broadcast_dims=[0, 1])
    T14 = fd.ops.broadcast_in_dim(T4, shape=[1, 1024, 1], broadcast_dims=[0, 1])
    S15 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T16 = fd.ops.add(T9, S15)
    T17 = fd.ops.rsqrt(T16)
    T22 = fd.ops.broadcast_in_dim(T14, shape=[1, 1024, 8192], broadcast_dims=[0, 1, 2])
    T23 = fd.ops.sub(T0, T22)
    T28 = fd.ops.broadcast_in_dim(T17, shape=[1, 1024, 8192], broadcast_dims=[0, 1, 2])
    T29 = fd.ops.mul(T23, T28)
    T34 = fd.ops.broadcast_in_dim(T1, shape=[1, 1024, 8192], broadcast_dims=[2])
    T35 = fd.ops.mul(T29, T34)
    T40 = fd.ops.broadcast_in_dim(T2, shape=[1, 1024, 8192], broadcast_dims=[2])
    T41 = fd.ops.add(T35, T40)
    fd.add_output(T41)
    fd.add_output(T14)
    fd.add_output(T17)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 1024, 8192), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((8192,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((8192,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
