# segmentation population, seed 272 (fit): cat_empty
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_272(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.cat([T2, T3], dim=1)
    T5 = fd.ops.cast(T4, dtype=DataType.Half)
    fd.add_output(T5)

with FusionDefinition() as fd:
    pop_272(fd)

g = torch.Generator().manual_seed(272)
inputs = [
    torch.randn((2048, 1024), generator=g, dtype=torch.float16).to('cuda:0'),
    torch.randn((2048, 0), generator=g, dtype=torch.float32).to('cuda:0'),
]
fd.execute(inputs)
