import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048, 4096], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[2048, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.sum(T0, dims=[0], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.mul(T0, T1)
    T4 = fd.ops.sum(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T2)
    fd.add_output(T4)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((4096,), dtype=torch.float32, device='cuda:0').as_strided((2048, 4096), (0, 1)),
    torch.testing.make_tensor((2048, 4096), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
