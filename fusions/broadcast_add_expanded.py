import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
    T4 = fd.ops.add(T0, T1)
    T8 = fd.ops.broadcast_in_dim(T2, shape=[128, 256], broadcast_dims=[0, 1])
    T9 = fd.ops.mul(T4, T8)
    T13 = fd.ops.broadcast_in_dim(T3, shape=[128, 256], broadcast_dims=[])
    T14 = fd.ops.sub(T9, T13)
    T15 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T14)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((128, 256), dtype=torch.float32, device='cuda:0'),
    torch.randn((256,), dtype=torch.float32, device='cuda:0').as_strided((128, 256), (0, 1)),
    torch.testing.make_tensor((1, 256), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((), dtype=torch.float32, device='cpu'),
]
fd.execute(inputs)
