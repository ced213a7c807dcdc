import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 32, 2048, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 8, 2048, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 2048, 128], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 2048, 128], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T9 = fd.ops.broadcast_in_dim(T2, shape=[1, 32, 2048, 128], broadcast_dims=[0, 2, 3])
    T15 = fd.ops.broadcast_in_dim(T3, shape=[1, 32, 2048, 128], broadcast_dims=[0, 2, 3])
    T16 = fd.ops.cast(T0, dtype=DataType.Float)
    T17 = fd.ops.cast(T9, dtype=DataType.Float)
    T18 = fd.ops.mul(T16, T17)
    T34 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[1, 32, 2048, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T50 = fd.ops.slice(T0, start_indices=[0, 0, 0, 64], end_indices=[1, 32, 2048, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T51 = fd.ops.cast(T50, dtype=DataType.Float)
    T52 = fd.ops.neg(T51)
    T53 = fd.ops.cast(T52, dtype=DataType.BFloat16)
    T54 = fd.ops.cat([T53, T34], dim=-1, manual_padding=0)
    T55 = fd.ops.cast(T54, dtype=DataType.Float)
    T56 = fd.ops.cast(T15, dtype=DataType.Float)
    T57 = fd.ops.mul(T55, T56)
    T58 = fd.ops.add(T18, T57)
    T59 = fd.ops.cast(T58, dtype=DataType.BFloat16)
    T65 = fd.ops.broadcast_in_dim(T2, shape=[1, 8, 2048, 128], broadcast_dims=[0, 2, 3])
    T71 = fd.ops.broadcast_in_dim(T3, shape=[1, 8, 2048, 128], broadcast_dims=[0, 2, 3])
    T72 = fd.ops.cast(T1, dtype=DataType.Float)
    T73 = fd.ops.cast(T65, dtype=DataType.Float)
    T74 = fd.ops.mul(T72, T73)
    T90 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[1, 8, 2048, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T106 = fd.ops.slice(T1, start_indices=[0, 0, 0, 64], end_indices=[1, 8, 2048, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T107 = fd.ops.cast(T106, dtype=DataType.Float)
    T108 = fd.ops.neg(T107)
    T109 = fd.ops.cast(T108, dtype=DataType.BFloat16)
    T110 = fd.ops.cat([T109, T90], dim=-1, manual_padding=0)
    T111 = fd.ops.cast(T110, dtype=DataType.Float)
    T112 = fd.ops.cast(T71, dtype=DataType.Float)
    T113 = fd.ops.mul(T111, T112)
    T114 = fd.ops.add(T74, T113)
    T115 = fd.ops.cast(T114, dtype=DataType.BFloat16)
    fd.add_output(T59)
    fd.add_output(T115)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 32, 2048, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 8, 2048, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
