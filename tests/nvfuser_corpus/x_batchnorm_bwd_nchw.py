import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16, 64, 64, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[16, 64, 64, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T12 = fd.ops.broadcast_in_dim(T2, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T18 = fd.ops.broadcast_in_dim(T12, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T24 = fd.ops.broadcast_in_dim(T3, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T30 = fd.ops.broadcast_in_dim(T24, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T31 = fd.ops.sub(T6, T18)
    T32 = fd.ops.mul(T31, T30)
    T33 = fd.ops.sum(T5, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.mul(T5, T32)
    T35 = fd.ops.sum(T34, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    S36 = fd.define_scalar(65536.0, dtype=DataType.Double)
    T37 = fd.ops.div(T33, S36)
    S38 = fd.define_scalar(65536.0, dtype=DataType.Double)
    T39 = fd.ops.div(T35, S38)
    T45 = fd.ops.broadcast_in_dim(T37, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T51 = fd.ops.broadcast_in_dim(T45, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T57 = fd.ops.broadcast_in_dim(T39, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T63 = fd.ops.broadcast_in_dim(T57, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T64 = fd.ops.sub(T5, T51)
    T65 = fd.ops.mul(T32, T63)
    T66 = fd.ops.sub(T64, T65)
    T72 = fd.ops.broadcast_in_dim(T4, shape=[1, 64, 1, 1], broadcast_dims=[1])
    T78 = fd.ops.broadcast_in_dim(T72, shape=[16, 64, 64, 64], broadcast_dims=[0, 1, 2, 3])
    T79 = fd.ops.cast(T78, dtype=DataType.Float)
    T80 = fd.ops.mul(T30, T79)
    T81 = fd.ops.mul(T66, T80)
    T82 = fd.ops.cast(T81, dtype=DataType.BFloat16)
    T83 = fd.ops.cast(T35, dtype=DataType.BFloat16)
    T84 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    fd.add_output(T82)
    fd.add_output(T83)
    fd.add_output(T84)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 64, 64, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((16, 64, 64, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
