import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 8, 512, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 8, 512, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    S2 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T12 = fd.ops.pad(T0, [0, 0, 0, 1536, 0, 0, 0, 0], S2)
    S13 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T23 = fd.ops.pad(T1, [0, 0, 0, 1536, 0, 0, 0, 0], S13)
    fd.add_output(T12)
    fd.add_output(T23)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 8, 512, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 8, 512, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
