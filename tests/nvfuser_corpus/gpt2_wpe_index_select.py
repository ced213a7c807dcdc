import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1024, 768], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(1024, dtype=DataType.Int)
    S3 = fd.define_scalar(0, dtype=DataType.Int)
    S4 = fd.define_scalar(1, dtype=DataType.Int)
    T5 = fd.ops.iota(S2, S3, S4, dtype=DataType.Int)
    T6 = fd.ops.index_select(T1, T5, dim=0)
    T11 = fd.ops.broadcast_in_dim(T6, shape=[2, 1024, 768], broadcast_dims=[1, 2])
    T12 = fd.ops.cast(T0, dtype=DataType.Float)
    T13 = fd.ops.cast(T11, dtype=DataType.Float)
    T14 = fd.ops.add(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1024, 768), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
