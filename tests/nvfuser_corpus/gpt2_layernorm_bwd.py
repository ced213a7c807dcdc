import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 1024, 768], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 1024, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[2, 1024, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[768], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.ops.cast(T1, dtype=DataType.Float)
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    T11 = fd.ops.broadcast_in_dim(T2, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T16 = fd.ops.broadcast_in_dim(T3, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.sub(T5, T11)
    T18 = fd.ops.mul(T17, T16)
    T19 = fd.ops.sum(T6, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T21 = fd.ops.mul(T6, T18)
    T22 = fd.ops.sum(T21, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    T28 = fd.ops.broadcast_in_dim(T4, shape=[2, 1024, 768], broadcast_dims=[2])
    T29 = fd.ops.cast(T28, dtype=DataType.Float)
    T30 = fd.ops.mul(T6, T29)
    T31 = fd.ops.sum(T30, dims=[2], keepdim=False, dtype=DataType.Null)
    T36 = fd.ops.broadcast_in_dim(T31, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    T41 = fd.ops.broadcast_in_dim(T36, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    T42 = fd.ops.mul(T30, T18)
    T43 = fd.ops.sum(T42, dims=[2], keepdim=False, dtype=DataType.Null)
    T48 = fd.ops.broadcast_in_dim(T43, shape=[2, 1024, 1], broadcast_dims=[0, 1])
    T53 = fd.ops.broadcast_in_dim(T48, shape=[2, 1024, 768], broadcast_dims=[0, 1, 2])
    S54 = fd.define_scalar(768.000, dtype=DataType.Double)
    T55 = fd.ops.mul(T30, S54)
    T56 = fd.ops.sub(T55, T41)
    T57 = fd.ops.mul(T18, T53)
    T58 = fd.ops.sub(T56, T57)
    S59 = fd.define_scalar(768.000, dtype=DataType.Double)
    T60 = fd.ops.div(T16, S59)
    T61 = fd.ops.mul(T60, T58)
    T62 = fd.ops.cast(T61, dtype=DataType.BFloat16)
    fd.add_output(T62)
    fd.add_output(T23)
    fd.add_output(T20)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 1024, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 1024, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 1024, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((768,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
