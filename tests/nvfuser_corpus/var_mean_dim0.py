import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[8192, 1024], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1, T2 = fd.ops.var_mean(T0, dims=[0], correction=1, keepdim=False)
    fd.add_output(T1)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8192, 1024), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
