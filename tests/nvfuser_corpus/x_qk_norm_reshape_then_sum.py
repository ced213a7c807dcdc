import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[128], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T8 = fd.ops.reshape(T2, new_shape=[1, 2048, 32, 128])
    T9 = fd.ops.mul(T8, T8)
    T10 = fd.ops.sum(T9, dims=[3], keepdim=False, dtype=DataType.Null)
    T16 = fd.ops.broadcast_in_dim(T10, shape=[1, 2048, 32, 1], broadcast_dims=[0, 1, 2])
    S17 = fd.define_scalar(128.000, dtype=DataType.Double)
    T18 = fd.ops.div(T16, S17)
    S19 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T20 = fd.ops.add(T18, S19)
    T21 = fd.ops.rsqrt(T20)
    T27 = fd.ops.broadcast_in_dim(T21, shape=[1, 2048, 32, 128], broadcast_dims=[0, 1, 2, 3])
    T28 = fd.ops.mul(T8, T27)
    T34 = fd.ops.broadcast_in_dim(T1, shape=[1, 2048, 32, 128], broadcast_dims=[3])
    T35 = fd.ops.cast(T34, dtype=DataType.Float)
    T36 = fd.ops.mul(T28, T35)
    T37 = fd.ops.cast(T36, dtype=DataType.BFloat16)
    fd.add_output(T37)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((128,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
