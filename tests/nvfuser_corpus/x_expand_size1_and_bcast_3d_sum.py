import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4096], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[8, 512, 4096], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.ops.expand(T0, shape=[2048, 4096])
    T6 = fd.ops.sum(T5, dims=[0], keepdim=False, dtype=DataType.Null)
    T11 = fd.ops.broadcast_in_dim(T6, shape=[8, 512, 4096], broadcast_dims=[2])
    T12 = fd.ops.sum(T11, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T13 = fd.ops.add(T11, T1)
    fd.add_output(T6)
    fd.add_output(T12)
    fd.add_output(T13)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 4096), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((8, 512, 4096), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
