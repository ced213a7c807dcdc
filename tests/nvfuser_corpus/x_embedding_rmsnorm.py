import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[8192, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[2048], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    S3 = fd.define_scalar(2.00000, dtype=DataType.Double)
    S4 = fd.define_scalar(False, dtype=DataType.Bool)
    S5 = fd.define_scalar(False, dtype=DataType.Bool)
    T6 = fd.ops.embedding_fwd(T0, T1, None, None, S3, S4, S5)
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.mul(T7, T7)
    T9 = fd.ops.sum(T8, dims=[2], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.broadcast_in_dim(T9, shape=[1, 2048, 1], broadcast_dims=[0, 1])
    S15 = fd.define_scalar(2048.00, dtype=DataType.Double)
    T16 = fd.ops.div(T14, S15)
    S17 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T18 = fd.ops.add(T16, S17)
    T19 = fd.ops.rsqrt(T18)
    T24 = fd.ops.broadcast_in_dim(T19, shape=[1, 2048, 2048], broadcast_dims=[0, 1, 2])
    T25 = fd.ops.mul(T7, T24)
    T30 = fd.ops.broadcast_in_dim(T2, shape=[1, 2048, 2048], broadcast_dims=[2])
    T31 = fd.ops.cast(T30, dtype=DataType.Float)
    T32 = fd.ops.mul(T25, T31)
    T33 = fd.ops.cast(T32, dtype=DataType.BFloat16)
    fd.add_output(T6)
    fd.add_output(T33)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048), dtype=torch.int64, device='cuda:0', low=0, high=8192),
    torch.testing.make_tensor((8192, 2048), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2048,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
