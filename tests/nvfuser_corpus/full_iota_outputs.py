import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(2048, dtype=DataType.Int)
    S2 = fd.define_scalar(0, dtype=DataType.Int)
    S3 = fd.define_scalar(1, dtype=DataType.Int)
    T4 = fd.ops.iota(S1, S2, S3, dtype=DataType.Int)
    T8 = fd.ops.broadcast_in_dim(T4, shape=[1, 2048], broadcast_dims=[1])
    S9 = fd.define_scalar(1, dtype=DataType.Int)
    T13 = fd.ops.full(shape=[1, 2048], fill_value=S9, dtype=DataType.Int)
    S14 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T20 = fd.ops.full(shape=[1, 8, 2048, 128], fill_value=S14, dtype=DataType.BFloat16)
    S21 = fd.define_scalar(0, dtype=DataType.Int)
    T22 = fd.ops.ne(T0, S21)
    fd.add_output(T8)
    fd.add_output(T13)
    fd.add_output(T20)
    fd.add_output(T22)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048), dtype=torch.int64, device='cuda:0', low=0, high=32000),
]
fd.execute(inputs)
