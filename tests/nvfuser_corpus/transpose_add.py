import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4096, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[4096, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.permute(T0, dims=[1, 0])
    T3 = fd.ops.add(T2, T1)
    fd.add_output(T3)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4096, 4096), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((4096, 4096), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
