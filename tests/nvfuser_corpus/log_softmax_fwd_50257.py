import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[256, 50257], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T2, shape=[256, 1], broadcast_dims=[0])
    T10 = fd.ops.broadcast_in_dim(T6, shape=[256, 50257], broadcast_dims=[0, 1])
    T11 = fd.ops.sub(T1, T10)
    T12 = fd.ops.exp(T11)
    T13 = fd.ops.sum(T12, dims=[1], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.log(T13)
    T18 = fd.ops.broadcast_in_dim(T14, shape=[256, 1], broadcast_dims=[0])
    T22 = fd.ops.broadcast_in_dim(T18, shape=[256, 50257], broadcast_dims=[0, 1])
    T23 = fd.ops.sub(T11, T22)
    fd.add_output(T23)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((256, 50257), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
