import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[32, 32000], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T2, shape=[32, 1], broadcast_dims=[0])
    T10 = fd.ops.broadcast_in_dim(T6, shape=[32, 32000], broadcast_dims=[0, 1])
    T11 = fd.ops.eq(T1, T10)
    S12 = fd.define_scalar(32000, dtype=DataType.Int)
    S13 = fd.define_scalar(0, dtype=DataType.Int)
    S14 = fd.define_scalar(1, dtype=DataType.Int)
    T15 = fd.ops.iota(S12, S13, S14, dtype=DataType.Int)
    T19 = fd.ops.broadcast_in_dim(T15, shape=[32, 32000], broadcast_dims=[1])
    S20 = fd.define_scalar(32000, dtype=DataType.Int)
    T21 = fd.ops.where(T11, T19, S20)
    T22 = fd.ops.min(T21, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T22)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((32, 32000), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
