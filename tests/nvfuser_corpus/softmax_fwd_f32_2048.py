import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 2048, 2048], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.ops.max(T0, dims=[2], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T1, shape=[2, 2048, 1], broadcast_dims=[0, 1])
    T11 = fd.ops.broadcast_in_dim(T6, shape=[2, 2048, 2048], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.sub(T0, T11)
    T13 = fd.ops.exp(T12)
    T14 = fd.ops.sum(T13, dims=[2], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.broadcast_in_dim(T14, shape=[2, 2048, 1], broadcast_dims=[0, 1])
    T24 = fd.ops.broadcast_in_dim(T19, shape=[2, 2048, 2048], broadcast_dims=[0, 1, 2])
    T25 = fd.ops.div(T13, T24)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 2048, 2048), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
