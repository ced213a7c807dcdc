import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4096, 3072], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[3072], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.broadcast_in_dim(T1, shape=[4096, 3072], broadcast_dims=[1])
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.add(T2, T7)
    S9 = fd.define_scalar(0.707107, dtype=DataType.Double)
    T10 = fd.ops.mul(T8, S9)
    T11 = fd.ops.erf(T10)
    S12 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.mul(T8, S14)
    T16 = fd.ops.mul(T15, T13)
    T17 = fd.ops.cast(T16, dtype=DataType.BFloat16)
    T18 = fd.ops.sum(T16, dims=[0], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T17)
    fd.add_output(T19)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4096, 3072), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3072,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
