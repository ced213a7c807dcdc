import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 2048, 1024], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[2048, 128], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[2048, 128], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T9 = fd.ops.reshape(T0, new_shape=[1, 2048, 32, 128])
    T10 = fd.ops.permute(T9, dims=[0, 2, 1, 3])
    T16 = fd.ops.reshape(T1, new_shape=[1, 2048, 8, 128])
    T17 = fd.ops.permute(T16, dims=[0, 2, 1, 3])
    T23 = fd.ops.broadcast_in_dim(T2, shape=[1, 32, 2048, 128], broadcast_dims=[2, 3])
    T29 = fd.ops.broadcast_in_dim(T3, shape=[1, 32, 2048, 128], broadcast_dims=[2, 3])
    T30 = fd.ops.cast(T10, dtype=DataType.Float)
    T31 = fd.ops.cast(T23, dtype=DataType.Float)
    T32 = fd.ops.mul(T30, T31)
    T48 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0], end_indices=[1, 32, 2048, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T64 = fd.ops.slice(T10, start_indices=[0, 0, 0, 64], end_indices=[1, 32, 2048, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T65 = fd.ops.cast(T64, dtype=DataType.Float)
    T66 = fd.ops.neg(T65)
    T67 = fd.ops.cast(T66, dtype=DataType.BFloat16)
    T68 = fd.ops.cat([T67, T48], dim=-1, manual_padding=0)
    T69 = fd.ops.cast(T68, dtype=DataType.Float)
    T70 = fd.ops.cast(T29, dtype=DataType.Float)
    T71 = fd.ops.mul(T69, T70)
    T72 = fd.ops.add(T32, T71)
    T73 = fd.ops.cast(T72, dtype=DataType.BFloat16)
    T79 = fd.ops.broadcast_in_dim(T2, shape=[1, 8, 2048, 128], broadcast_dims=[2, 3])
    T85 = fd.ops.broadcast_in_dim(T3, shape=[1, 8, 2048, 128], broadcast_dims=[2, 3])
    T86 = fd.ops.cast(T17, dtype=DataType.Float)
    T87 = fd.ops.cast(T79, dtype=DataType.Float)
    T88 = fd.ops.mul(T86, T87)
    T104 = fd.ops.slice(T17, start_indices=[0, 0, 0, 0], end_indices=[1, 8, 2048, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T120 = fd.ops.slice(T17, start_indices=[0, 0, 0, 64], end_indices=[1, 8, 2048, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T121 = fd.ops.cast(T120, dtype=DataType.Float)
    T122 = fd.ops.neg(T121)
    T123 = fd.ops.cast(T122, dtype=DataType.BFloat16)
    T124 = fd.ops.cat([T123, T104], dim=-1, manual_padding=0)
    T125 = fd.ops.cast(T124, dtype=DataType.Float)
    T126 = fd.ops.cast(T85, dtype=DataType.Float)
    T127 = fd.ops.mul(T125, T126)
    T128 = fd.ops.add(T88, T127)
    T129 = fd.ops.cast(T128, dtype=DataType.BFloat16)
    fd.add_output(T73)
    fd.add_output(T129)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 1024), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2048, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2048, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
