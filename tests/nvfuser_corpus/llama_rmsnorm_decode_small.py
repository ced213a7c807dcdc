import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1, 4096], contiguity=[True, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.mul(T2, T2)
    T4 = fd.ops.sum(T3, dims=[2], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.broadcast_in_dim(T4, shape=[2, 1, 1], broadcast_dims=[0, 1])
    S10 = fd.define_scalar(4096.00, dtype=DataType.Double)
    T11 = fd.ops.div(T9, S10)
    S12 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    T14 = fd.ops.rsqrt(T13)
    T19 = fd.ops.broadcast_in_dim(T14, shape=[2, 1, 4096], broadcast_dims=[0, 1, 2])
    T20 = fd.ops.mul(T2, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    T26 = fd.ops.broadcast_in_dim(T1, shape=[2, 1, 4096], broadcast_dims=[2])
    T27 = fd.ops.cast(T21, dtype=DataType.Float)
    T28 = fd.ops.cast(T26, dtype=DataType.Float)
    T29 = fd.ops.mul(T27, T28)
    T30 = fd.ops.cast(T29, dtype=DataType.BFloat16)
    fd.add_output(T30)
    fd.add_output(T14)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4096,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
