import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(2048, dtype=DataType.Int)
    S2 = fd.define_scalar(0, dtype=DataType.Int)
    S3 = fd.define_scalar(1, dtype=DataType.Int)
    T4 = fd.ops.iota(S1, S2, S3, dtype=DataType.Int)
    T8 = fd.ops.broadcast_in_dim(T4, shape=[1, 2048], broadcast_dims=[1])
    S9 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T13 = fd.ops.full(shape=[2048, 2048], fill_value=S9, dtype=DataType.BFloat16)
    T17 = fd.ops.broadcast_in_dim(T4, shape=[2048, 1], broadcast_dims=[0])
    T21 = fd.ops.broadcast_in_dim(T8, shape=[2048, 2048], broadcast_dims=[0, 1])
    T25 = fd.ops.broadcast_in_dim(T17, shape=[2048, 2048], broadcast_dims=[0, 1])
    T26 = fd.ops.sub(T21, T25)
    S27 = fd.define_scalar(1, dtype=DataType.Int)
    T28 = fd.ops.ge(T26, S27)
    S29 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T30 = fd.ops.where(T28, T13, S29)
    T36 = fd.ops.broadcast_in_dim(T30, shape=[1, 1, 2048, 2048], broadcast_dims=[2, 3])
    T42 = fd.ops.broadcast_in_dim(T36, shape=[1, 1, 2048, 2048], broadcast_dims=[0, 1, 2, 3])
    T43 = fd.ops.set(T42)
    T49 = fd.ops.broadcast_in_dim(T0, shape=[1, 1, 1, 2048], broadcast_dims=[0, 3])
    T55 = fd.ops.broadcast_in_dim(T49, shape=[1, 1, 2048, 2048], broadcast_dims=[0, 1, 2, 3])
    T56 = fd.ops.cast(T43, dtype=DataType.Float)
    T57 = fd.ops.cast(T55, dtype=DataType.Float)
    T58 = fd.ops.add(T56, T57)
    T59 = fd.ops.cast(T58, dtype=DataType.BFloat16)
    S60 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T61 = fd.ops.eq(T59, S60)
    S62 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T63 = fd.ops.where(T61, S62, T43)
    fd.add_output(T43)
    fd.add_output(T63)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048), dtype=torch.int64, device='cuda:0', low=0, high=2),
]
fd.execute(inputs)
