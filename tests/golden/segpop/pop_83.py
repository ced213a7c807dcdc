# segmentation population, seed 83 (fit): mixed_dtype
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_83(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0, 1])
    T3 = fd.ops.cast(T2, dtype=DataType.Float)
    T4 = fd.ops.add(T1, T3)
    fd.add_output(T4)

with FusionDefinition() as fd:
    pop_83(fd)

g = torch.Generator().manual_seed(83)
inputs = [
    torch.randn((4096, 2048), generator=g, dtype=torch.float32).t().to('cuda:0'),
    torch.randn((4096, 2048), generator=g, dtype=torch.bfloat16).t().to('cuda:0'),
]
fd.execute(inputs)
