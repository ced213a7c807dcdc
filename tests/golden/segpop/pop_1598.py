# segmentation population, seed 1598 (fit): outer_sum, outer_sum, cat_empty
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_1598(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0, 1])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.ops.sum(T2, dims=[0], keepdim=False)
    fd.add_output(T3)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[2048, 4096], broadcast_dims=[1])
    T5 = fd.ops.sub(T2, T4)
    T6 = fd.ops.sum(T5, dims=[0], keepdim=False)
    fd.add_output(T6)
    T7 = fd.ops.broadcast_in_dim(T6, shape=[2048, 4096], broadcast_dims=[1])
    T8 = fd.ops.sub(T5, T7)
    T9 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T10 = fd.ops.cat([T8, T9], dim=1)
    T11 = fd.ops.cast(T10, dtype=DataType.BFloat16)
    fd.add_output(T11)

with FusionDefinition() as fd:
    pop_1598(fd)

g = torch.Generator().manual_seed(1598)
inputs = [
    torch.randn((4096, 2048), generator=g, dtype=torch.bfloat16).t().to('cuda:0'),
    torch.randn((2048, 0), generator=g, dtype=torch.float32).to('cuda:0'),
]
fd.execute(inputs)
