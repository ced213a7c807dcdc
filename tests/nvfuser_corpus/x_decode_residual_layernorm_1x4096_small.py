import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4096], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1, 4096], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5 = fd.ops.cast(T1, dtype=DataType.Float)
    T6 = fd.ops.add(T4, T5)
    T7 = fd.ops.cast(T6, dtype=DataType.BFloat16)
    T8, T9 = fd.ops.var_mean(T6, dims=[1], correction=0, keepdim=False)
    T13 = fd.ops.broadcast_in_dim(T8, shape=[1, 1], broadcast_dims=[0])
    T17 = fd.ops.broadcast_in_dim(T9, shape=[1, 1], broadcast_dims=[0])
    S18 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T19 = fd.ops.add(T13, S18)
    T20 = fd.ops.rsqrt(T19)
    T24 = fd.ops.broadcast_in_dim(T17, shape=[1, 4096], broadcast_dims=[0, 1])
    T25 = fd.ops.sub(T6, T24)
    T29 = fd.ops.broadcast_in_dim(T20, shape=[1, 4096], broadcast_dims=[0, 1])
    T30 = fd.ops.mul(T25, T29)
    T34 = fd.ops.broadcast_in_dim(T2, shape=[1, 4096], broadcast_dims=[1])
    T35 = fd.ops.cast(T34, dtype=DataType.Float)
    T36 = fd.ops.mul(T30, T35)
    T40 = fd.ops.broadcast_in_dim(T3, shape=[1, 4096], broadcast_dims=[1])
    T41 = fd.ops.cast(T40, dtype=DataType.Float)
    T42 = fd.ops.add(T36, T41)
    T43 = fd.ops.cast(T42, dtype=DataType.BFloat16)
    fd.add_output(T7)
    fd.add_output(T43)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4096,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4096,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
