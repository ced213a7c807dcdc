import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[2], correction=0, keepdim=False)
    T10 = fd.ops.broadcast_in_dim(T4, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    T15 = fd.ops.broadcast_in_dim(T5, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    S16 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T17 = fd.ops.add(T10, S16)
    T18 = fd.ops.rsqrt(T17)
    T23 = fd.ops.broadcast_in_dim(T15, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T24 = fd.ops.sub(T3, T23)
    T29 = fd.ops.broadcast_in_dim(T18, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T30 = fd.ops.mul(T24, T29)
    T35 = fd.ops.broadcast_in_dim(T1, shape=[2, 1024, 768], broadcast_dims=[2])
    T36 = fd.ops.cast(T35, dtype=DataType.Float)
    T37 = fd.ops.mul(T30, T36)
    T42 = fd.ops.broadcast_in_dim(T2, shape=[2, 1024, 768], broadcast_dims=[2])
    T43 = fd.ops.cast(T42, dtype=DataType.Float)
    T44 = fd.ops.add(T37, T43)
    T45 = fd.ops.cast(T44, dtype=DataType.BFloat16)
    fd.add_output(T45)
    fd.add_output(T15)
    fd.add_output(T18)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
