import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16, 64, 64, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[0, 2, 3], correction=0, keepdim=False)
    S6 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T7 = fd.ops.add(T4, S6)
    T8 = fd.ops.rsqrt(T7)
    T14 = fd.ops.broadcast_in_dim(T5, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T20 = fd.ops.broadcast_in_dim(T14, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T21 = fd.ops.sub(T3, T20)
    T27 = fd.ops.broadcast_in_dim(T8, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T33 = fd.ops.broadcast_in_dim(T27, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T34 = fd.ops.mul(T21, T33)
    T40 = fd.ops.broadcast_in_dim(T1, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T46 = fd.ops.broadcast_in_dim(T40, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T47 = fd.ops.cast(T46, dtype=DataType.Float)
    T48 = fd.ops.mul(T34, T47)
    T54 = fd.ops.broadcast_in_dim(T2, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T60 = fd.ops.broadcast_in_dim(T54, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T61 = fd.ops.cast(T60, dtype=DataType.Float)
    T62 = fd.ops.add(T48, T61)
    T63 = fd.ops.cast(T62, dtype=DataType.BFloat16)
    fd.add_output(T63)
    fd.add_output(T5)
    fd.add_output(T8)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 64, 64, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
