import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 32000], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.div(T2, S1)
    T4 = fd.ops.max(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.broadcast_in_dim(T4, shape=[2, 1], broadcast_dims=[0])
    T12 = fd.ops.broadcast_in_dim(T8, shape=[2, 32000], broadcast_dims=[0, 1])
    T13 = fd.ops.sub(T3, T12)
    T14 = fd.ops.exp(T13)
    T15 = fd.ops.sum(T14, dims=[1], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.broadcast_in_dim(T15, shape=[2, 1], broadcast_dims=[0])
    T23 = fd.ops.broadcast_in_dim(T19, shape=[2, 32000], broadcast_dims=[0, 1])
    T24 = fd.ops.div(T14, T23)
    fd.add_output(T24)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 32000), dtype=torch.bfloat16, device='cuda:0'),
    0.7,
]
fd.execute(inputs)
