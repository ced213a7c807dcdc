import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[128, 512], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[128], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.broadcast_in_dim(T3, shape=[128, 1], broadcast_dims=[0])
    T11 = fd.ops.broadcast_in_dim(T7, shape=[128, 512], broadcast_dims=[0, 1])
    T12 = fd.ops.sub(T2, T11)
    T13 = fd.ops.exp(T12)
    T14 = fd.ops.sum(T13, dims=[1], keepdim=False, dtype=DataType.Null)
    T15 = fd.ops.log(T14)
    T19 = fd.ops.broadcast_in_dim(T15, shape=[128, 1], broadcast_dims=[0])
    T23 = fd.ops.broadcast_in_dim(T19, shape=[128, 512], broadcast_dims=[0, 1])
    T24 = fd.ops.sub(T12, T23)
    S25 = fd.define_scalar(-100, dtype=DataType.Int)
    T26 = fd.ops.ne(T1, S25)
    S27 = fd.define_scalar(0, dtype=DataType.Int)
    T28 = fd.ops.where(T26, T1, S27)
    T32 = fd.ops.broadcast_in_dim(T28, shape=[128, 1], broadcast_dims=[0])
    T33 = fd.ops.take_along_axis(T24, T32, dim=1)
    T34 = fd.ops.squeeze(T33, dims=[1], squeeze_expanded=False)
    T35 = fd.ops.neg(T34)
    S36 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T37 = fd.ops.where(T26, T35, S36)
    T38 = fd.ops.sum(T37, dims=[0], keepdim=False, dtype=DataType.Null)
    T39 = fd.ops.cast(T26, dtype=DataType.Float)
    T40 = fd.ops.sum(T39, dims=[0], keepdim=False, dtype=DataType.Null)
    T41 = fd.ops.div(T38, T40)
    fd.add_output(T41)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((128, 512), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((128,), dtype=torch.int64, device='cuda:0', low=0, high=512),
]
fd.execute(inputs)
