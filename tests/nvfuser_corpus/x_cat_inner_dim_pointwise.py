import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 32, 2048, 64], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 32, 2048, 64], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2048, 128], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cat([T0, T1], dim=-1, manual_padding=0)
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    T10 = fd.ops.broadcast_in_dim(T2, shape=[1, 32, 2048, 128], broadcast_dims=[2, 3])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T12 = fd.ops.mul(T4, T11)
    T13 = fd.ops.cast(T12, dtype=DataType.BFloat16)
    fd.add_output(T13)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 32, 2048, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 32, 2048, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2048, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
