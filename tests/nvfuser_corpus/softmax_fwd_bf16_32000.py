import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[512, 32000], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T2, shape=[512, 1], broadcast_dims=[0])
    T10 = fd.ops.broadcast_in_dim(T6, shape=[512, 32000], broadcast_dims=[0, 1])
    T11 = fd.ops.sub(T1, T10)
    T12 = fd.ops.exp(T11)
    T13 = fd.ops.sum(T12, dims=[1], keepdim=False, dtype=DataType.Null)
    T17 = fd.ops.broadcast_in_dim(T13, shape=[512, 1], broadcast_dims=[0])
    T21 = fd.ops.broadcast_in_dim(T17, shape=[512, 32000], broadcast_dims=[0, 1])
    T22 = fd.ops.div(T12, T21)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    fd.add_output(T23)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((512, 32000), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
