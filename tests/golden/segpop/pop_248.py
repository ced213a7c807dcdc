# segmentation population, seed 248 (fit): sum_empty, cat_empty
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_248(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.sum(T3, dims=[0], keepdim=False)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[2048, 4096], broadcast_dims=[1])
    T6 = fd.ops.add(T2, T5)
    T7 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T8 = fd.ops.cat([T6, T7], dim=1)
    T9 = fd.ops.cast(T8, dtype=DataType.BFloat16)
    fd.add_output(T9)

with FusionDefinition() as fd:
    pop_248(fd)

g = torch.Generator().manual_seed(248)
inputs = [
    torch.randn((2048, 4096), generator=g, dtype=torch.bfloat16).to('cuda:0'),
    torch.randn((0, 4096), generator=g, dtype=torch.float32).to('cuda:0'),
    torch.randn((2048, 0), generator=g, dtype=torch.float32).to('cuda:0'),
]
fd.execute(inputs)
