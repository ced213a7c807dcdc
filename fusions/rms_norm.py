import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 64, 512], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[512], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.mul(T2, T2)
    T4 = fd.ops.sum(T3, dims=[2], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.broadcast_in_dim(T4, shape=[2, 64, 1], broadcast_dims=[0, 1])
    S10 = fd.define_scalar(512.000, dtype=DataType.Double)
    T11 = fd.ops.div(T9, S10)
    S12 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    T14 = fd.ops.rsqrt(T13)
    T19 = fd.ops.broadcast_in_dim(T14, shape=[2, 64, 512], broadcast_dims=[0, 1, 2])
    T20 = fd.ops.mul(T2, T19)
    T25 = fd.ops.broadcast_in_dim(T1, shape=[2, 64, 512], broadcast_dims=[2])
    T26 = fd.ops.cast(T25, dtype=DataType.Float)
    T27 = fd.ops.mul(T20, T26)
    T28 = fd.ops.cast(T27, dtype=DataType.BFloat16)
    fd.add_output(T28)
    fd.add_output(T14)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 64, 512), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((512,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
