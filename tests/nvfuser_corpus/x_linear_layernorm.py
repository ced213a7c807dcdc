import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 512, 768], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[768, 768], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.ops.linear(T0, T1, T2)
    T6 = fd.ops.cast(T5, dtype=DataType.Float)
    T7, T8 = fd.ops.var_mean(T6, dims=[2], correction=0, keepdim=False)
    T13 = fd.ops.broadcast_in_dim(T7, shape=[1, 512, 1], broadcast_dims=[0, 1])
    T18 = fd.ops.broadcast_in_dim(T8, shape=[1, 512, 1], broadcast_dims=[0, 1])
    S19 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T20 = fd.ops.add(T13, S19)
    T21 = fd.ops.rsqrt(T20)
    T26 = fd.ops.broadcast_in_dim(T18, shape=[1, 512, 768], broadcast_dims=[0, 1, 2])
    T27 = fd.ops.sub(T6, T26)
    T32 = fd.ops.broadcast_in_dim(T21, shape=[1, 512, 768], broadcast_dims=[0, 1, 2])
    T33 = fd.ops.mul(T27, T32)
    T38 = fd.ops.broadcast_in_dim(T3, shape=[1, 512, 768], broadcast_dims=[2])
    T39 = fd.ops.cast(T38, dtype=DataType.Float)
    T40 = fd.ops.mul(T33, T39)
    T45 = fd.ops.broadcast_in_dim(T4, shape=[1, 512, 768], broadcast_dims=[2])
    T46 = fd.ops.cast(T45, dtype=DataType.Float)
    T47 = fd.ops.add(T40, T46)
    T48 = fd.ops.cast(T47, dtype=DataType.BFloat16)
    fd.add_output(T48)
    fd.add_output(T8)
    fd.add_output(T21)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 512, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
