# segmentation population, seed 331 (fit): inplace_counter, pad_slice
import torch
from nvfuser_direct import FusionDefinition, DataType

def pop_331(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False, stride_order=[])
    S4 = fd.define_scalar(1.0, dtype=DataType.Double)
    T5 = fd.ops.add(T3, S4)
    fd.add_output(T5, T3)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[512, 256], broadcast_dims=[])
    T7 = fd.ops.mul(T2, T6)
    T8 = fd.ops.pad(T7, [1, 1])
    T9 = fd.ops.slice(T8, start_indices=[0, 1], end_indices=[512, 257])
    T10 = fd.ops.cast(T9, dtype=DataType.Half)
    fd.add_output(T10)

with FusionDefinition() as fd:
    pop_331(fd)

g = torch.Generator().manual_seed(331)
inputs = [
    torch.randn((512, 256), generator=g, dtype=torch.float16).to('cuda:0'),
    torch.randn((), generator=g, dtype=torch.float32).to('cuda:0'),
]
fd.execute(inputs)
