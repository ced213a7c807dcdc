import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 32, 2048, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T6 = fd.ops.reshape(T1, new_shape=[1, 2048, 4096])
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 32, 2048, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
