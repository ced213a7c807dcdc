import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[64, 65536], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T1, shape=[64, 1], broadcast_dims=[0])
    T9 = fd.ops.broadcast_in_dim(T5, shape=[64, 65536], broadcast_dims=[0, 1])
    T10 = fd.ops.sub(T0, T9)
    T11 = fd.ops.exp(T10)
    T12 = fd.ops.sum(T11, dims=[1], keepdim=False, dtype=DataType.Null)
    T16 = fd.ops.broadcast_in_dim(T12, shape=[64, 1], broadcast_dims=[0])
    T20 = fd.ops.broadcast_in_dim(T16, shape=[64, 65536], broadcast_dims=[0, 1])
    T21 = fd.ops.div(T11, T20)
    fd.add_output(T21)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64, 65536), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
