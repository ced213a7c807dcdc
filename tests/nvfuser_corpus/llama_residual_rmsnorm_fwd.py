import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.add(T3, T4)
    T6 = fd.ops.cast(T5, dtype=DataType.BFloat16)
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.mul(T7, T7)
    T9 = fd.ops.sum(T8, dims=[2], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.broadcast_in_dim(T9, shape=[1, 2048, 1], broadcast_dims=[0, 1])
    S15 = fd.define_scalar(4096.00, dtype=DataType.Double)
    T16 = fd.ops.div(T14, S15)
    S17 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T18 = fd.ops.add(T16, S17)
    T19 = fd.ops.rsqrt(T18)
    T24 = fd.ops.broadcast_in_dim(T19, shape=[1, 2048, 4096], broadcast_dims=[0, 1, 2])
    T25 = fd.ops.mul(T7, T24)
    T26 = fd.ops.cast(T25, dtype=DataType.BFloat16)
    T31 = fd.ops.broadcast_in_dim(T2, shape=[1, 2048, 4096], broadcast_dims=[2])
    T32 = fd.ops.cast(T26, dtype=DataType.Float)
    T33 = fd.ops.cast(T31, dtype=DataType.Float)
    T34 = fd.ops.mul(T32, T33)
    T35 = fd.ops.cast(T34, dtype=DataType.BFloat16)
    fd.add_output(T6)
    fd.add_output(T35)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4096,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
