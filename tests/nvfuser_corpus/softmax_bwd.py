import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 12, 512, 512], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 12, 512, 512], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.mul(T2, T3)
    T5 = fd.ops.sum(T4, dims=[3], keepdim=False, dtype=DataType.Null)
    T11 = fd.ops.broadcast_in_dim(T5, shape=[2, 12, 512, 1], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.broadcast_in_dim(T11, shape=[2, 12, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T18 = fd.ops.sub(T2, T17)
    T19 = fd.ops.mul(T3, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    fd.add_output(T20)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 12, 512, 512), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 12, 512, 512), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
