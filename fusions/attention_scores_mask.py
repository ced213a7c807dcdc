import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 4, 64, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 4, 64, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 4, 64, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.ops.permute(T1, dims=[0, 1, 3, 2])
    T4 = fd.ops.matmul(T0, T3)
    T5 = fd.ops.cast(T4, dtype=DataType.Float)
    S6 = fd.define_scalar(0.125000, dtype=DataType.Double)
    T7 = fd.ops.mul(T5, S6)
    S8 = fd.define_scalar(64, dtype=DataType.Int)
    S9 = fd.define_scalar(0, dtype=DataType.Int)
    S10 = fd.define_scalar(1, dtype=DataType.Int)
    T11 = fd.ops.iota(S8, S9, S10, dtype=DataType.Int)
    T15 = fd.ops.broadcast_in_dim(T11, shape=[64, 64], broadcast_dims=[0])
    T19 = fd.ops.broadcast_in_dim(T11, shape=[64, 64], broadcast_dims=[1])
    T20 = fd.ops.ge(T15, T19)
    T26 = fd.ops.broadcast_in_dim(T20, shape=[2, 4, 64, 64], broadcast_dims=[2, 3])
    S27 = fd.define_scalar(float("-inf"), dtype=DataType.Double)
    T28 = fd.ops.where(T26, T7, S27)
    T29 = fd.ops.max(T28, dims=[3], keepdim=False, dtype=DataType.Null)
    T35 = fd.ops.broadcast_in_dim(T29, shape=[2, 4, 64, 1], broadcast_dims=[0, 1, 2])
    T41 = fd.ops.broadcast_in_dim(T35, shape=[2, 4, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T42 = fd.ops.sub(T28, T41)
    T43 = fd.ops.exp(T42)
    T44 = fd.ops.sum(T43, dims=[3], keepdim=False, dtype=DataType.Null)
    T50 = fd.ops.broadcast_in_dim(T44, shape=[2, 4, 64, 1], broadcast_dims=[0, 1, 2])
    T56 = fd.ops.broadcast_in_dim(T50, shape=[2, 4, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T57 = fd.ops.div(T43, T56)
    T58 = fd.ops.cast(T57, dtype=DataType.BFloat16)
    T59 = fd.ops.matmul(T58, T2)
    fd.add_output(T59)
    fd.add_output(T58)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 4, 64, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 4, 64, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 4, 64, 64), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
