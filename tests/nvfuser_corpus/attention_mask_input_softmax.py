import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 12, 512, 512], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 1, 512, 512], contiguity=[None, None, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 1, 1, 512], contiguity=[True, None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    S4 = fd.define_scalar(0.125000, dtype=DataType.Double)
    T5 = fd.ops.mul(T3, S4)
    T11 = fd.ops.broadcast_in_dim(T1, shape=[2, 12, 512, 512], broadcast_dims=[0, 1, 2, 3])
    S12 = fd.define_scalar(-3.40282e+38, dtype=DataType.Double)
    T13 = fd.ops.where(T11, T5, S12)
    T19 = fd.ops.broadcast_in_dim(T2, shape=[2, 12, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T20 = fd.ops.add(T13, T19)
    T21 = fd.ops.max(T20, dims=[3], keepdim=False, dtype=DataType.Null)
    T27 = fd.ops.broadcast_in_dim(T21, shape=[2, 12, 512, 1], broadcast_dims=[0, 1, 2])
    T33 = fd.ops.broadcast_in_dim(T27, shape=[2, 12, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T34 = fd.ops.sub(T20, T33)
    T35 = fd.ops.exp(T34)
    T36 = fd.ops.sum(T35, dims=[3], keepdim=False, dtype=DataType.Null)
    T42 = fd.ops.broadcast_in_dim(T36, shape=[2, 12, 512, 1], broadcast_dims=[0, 1, 2])
    T48 = fd.ops.broadcast_in_dim(T42, shape=[2, 12, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T49 = fd.ops.div(T35, T48)
    T50 = fd.ops.cast(T49, dtype=DataType.BFloat16)
    fd.add_output(T50)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 12, 512, 512), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 1, 512, 512), dtype=torch.bool, device='cuda:0'),
    torch.testing.make_tensor((2, 1, 1, 512), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
