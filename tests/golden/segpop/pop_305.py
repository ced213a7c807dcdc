# segmentation population, seed 305 (fit): rotate_half, sum_empty, linear
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_305(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T2 = fd.ops.slice(T1, start_indices=[0, 0], end_indices=[64, 2048])
    T3 = fd.ops.slice(T1, start_indices=[0, 2048], end_indices=[64, 4096])
    T4 = fd.ops.neg(T3)
    T5 = fd.ops.cat([T4, T2], dim=1)
    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T7 = fd.ops.sum(T6, dims=[0], keepdim=False)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[64, 4096], broadcast_dims=[1])
    T9 = fd.ops.add(T5, T8)
    T10 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T11 = fd.ops.linear(T9, T10)
    fd.add_output(T11)

with FusionDefinition() as fd:
    pop_305(fd)

g = torch.Generator().manual_seed(305)
inputs = [
    torch.randn((4096, 64), generator=g, dtype=torch.float32).t().to('cuda:0'),
    torch.randn((0, 4096), generator=g, dtype=torch.float32).to('cuda:0'),
    torch.randn((4096, 4096), generator=g, dtype=torch.float32).to('cuda:0'),
]
fd.execute(inputs)
