import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[512, 32000], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[512], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[512], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    S4 = fd.define_scalar(512.000, dtype=DataType.Double)
    T5 = fd.ops.div(T0, S4)
    T6 = fd.ops.neg(T5)
    T10 = fd.ops.broadcast_in_dim(T6, shape=[512, 32000], broadcast_dims=[])
    S11 = fd.define_scalar(32000, dtype=DataType.Int)
    S12 = fd.define_scalar(0, dtype=DataType.Int)
    S13 = fd.define_scalar(1, dtype=DataType.Int)
    T14 = fd.ops.iota(S11, S12, S13, dtype=DataType.Int)
    T18 = fd.ops.broadcast_in_dim(T14, shape=[512, 32000], broadcast_dims=[1])
    T22 = fd.ops.broadcast_in_dim(T2, shape=[512, 32000], broadcast_dims=[0])
    T23 = fd.ops.eq(T18, T22)
    S24 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T25 = fd.ops.where(T23, T10, S24)
    T26 = fd.ops.cast(T1, dtype=DataType.Float)
    T30 = fd.ops.broadcast_in_dim(T3, shape=[512, 1], broadcast_dims=[0])
    T34 = fd.ops.broadcast_in_dim(T30, shape=[512, 32000], broadcast_dims=[0, 1])
    T35 = fd.ops.sub(T26, T34)
    T36 = fd.ops.exp(T35)
    T37 = fd.ops.sum(T25, dims=[1], keepdim=False, dtype=DataType.Null)
    T41 = fd.ops.broadcast_in_dim(T37, shape=[512, 1], broadcast_dims=[0])
    T45 = fd.ops.broadcast_in_dim(T41, shape=[512, 32000], broadcast_dims=[0, 1])
    T46 = fd.ops.mul(T36, T45)
    T47 = fd.ops.sub(T25, T46)
    T48 = fd.ops.cast(T47, dtype=DataType.BFloat16)
    fd.add_output(T48)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((512, 32000), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((512,), dtype=torch.int64, device='cuda:0', low=0, high=32000),
    torch.testing.make_tensor((512,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
