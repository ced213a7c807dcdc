import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    S4 = fd.define_scalar(None, dtype=DataType.Int)
    S5 = fd.define_scalar(None, dtype=DataType.Int)
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    S7 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S8 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T13 = fd.ops.uniform(S7, S8, shape=[2, 1024, 768], rng_seed=S4, rng_offset=S5, dtype=DataType.Float)
    S14 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T15 = fd.ops.lt(T13, S14)
    S16 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T17 = fd.ops.where(T15, T6, S16)
    S18 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T19 = fd.ops.mul(T17, S18)
    T20 = fd.ops.cast(T1, dtype=DataType.Float)
    T21 = fd.ops.add(T19, T20)
    T22 = fd.ops.cast(T21, dtype=DataType.BFloat16)
    T23 = fd.ops.cast(T22, dtype=DataType.Float)
    T24, T25 = fd.ops.var_mean(T23, dims=[2], correction=0, keepdim=False)
    T30 = fd.ops.broadcast_in_dim(T24, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    T35 = fd.ops.broadcast_in_dim(T25, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    S36 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T37 = fd.ops.add(T30, S36)
    T38 = fd.ops.rsqrt(T37)
    T43 = fd.ops.broadcast_in_dim(T35, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T44 = fd.ops.sub(T23, T43)
    T49 = fd.ops.broadcast_in_dim(T38, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T50 = fd.ops.mul(T44, T49)
    T55 = fd.ops.broadcast_in_dim(T2, shape=[2, 1024, 768], broadcast_dims=[2])
    T56 = fd.ops.cast(T55, dtype=DataType.Float)
    T57 = fd.ops.mul(T50, T56)
    T62 = fd.ops.broadcast_in_dim(T3, shape=[2, 1024, 768], broadcast_dims=[2])
    T63 = fd.ops.cast(T62, dtype=DataType.Float)
    T64 = fd.ops.add(T57, T63)
    T65 = fd.ops.cast(T64, dtype=DataType.BFloat16)
    fd.add_output(T22)
    fd.add_output(T65)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
    42,
    0,
]
fd.execute(inputs)
