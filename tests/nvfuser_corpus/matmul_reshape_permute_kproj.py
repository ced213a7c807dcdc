import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 512, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[4096, 1024], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.matmul(T0, T1)
    T8 = fd.ops.reshape(T2, new_shape=[1, 512, 8, 128])
    T9 = fd.ops.permute(T8, dims=[0, 2, 1, 3])
    fd.add_output(T9)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 512, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4096, 1024), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
