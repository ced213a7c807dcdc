import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 16, 512, 512], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[3], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.broadcast_in_dim(T2, shape=[2, 16, 512, 1], broadcast_dims=[0, 1, 2])
    T14 = fd.ops.broadcast_in_dim(T8, shape=[2, 16, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T15 = fd.ops.sub(T1, T14)
    T16 = fd.ops.exp(T15)
    T17 = fd.ops.sum(T16, dims=[3], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.broadcast_in_dim(T17, shape=[2, 16, 512, 1], broadcast_dims=[0, 1, 2])
    T29 = fd.ops.broadcast_in_dim(T23, shape=[2, 16, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T30 = fd.ops.div(T16, T29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    fd.add_output(T31)
    fd.add_output(T16)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 16, 512, 512), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
