# segmentation population, seed 461 (fit): pad_slice, pad_slice, mixed_dtype, inner_max
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_461(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[0, 1])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.ops.pad(T2, [1, 1])
    T4 = fd.ops.slice(T3, start_indices=[0, 1], end_indices=[512, 65])
    T5 = fd.ops.pad(T4, [1, 1])
    T6 = fd.ops.slice(T5, start_indices=[0, 1], end_indices=[512, 65])
    T7 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[0, 1])
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.add(T6, T8)
    T10 = fd.ops.max(T9, dims=[1], keepdim=False)
    fd.add_output(T10)
    T11 = fd.ops.cast(T9, dtype=DataType.Half)
    fd.add_output(T11)

with FusionDefinition() as fd:
    pop_461(fd)

g = torch.Generator().manual_seed(461)
inputs = [
    torch.randn((64, 512), generator=g, dtype=torch.float16).t().to('cuda:0'),
    torch.randn((64, 512), generator=g, dtype=torch.float16).t().to('cuda:0'),
]
fd.execute(inputs)
