import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 4, 48, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 4, 16, 64], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[128, 500], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[128, 64], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[128, 128], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.cat([T0, T1], dim=2, manual_padding=0)
    S6 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T16 = fd.ops.pad(T1, [0, 0, 48, 0, 0, 0, 0, 0], S6)
    T17 = fd.ops.cast(T5, dtype=DataType.Float)
    T18 = fd.ops.cast(T16, dtype=DataType.Float)
    T19 = fd.ops.add(T17, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    S21 = fd.define_scalar(float("-inf"), dtype=DataType.Double)
    T27 = fd.ops.pad(T2, [0, 12, 0, 0], S21)
    T28 = fd.ops.exp(T27)
    T29 = fd.ops.cat([T3, T4, T3], dim=-1, manual_padding=0)
    S30 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T36 = fd.ops.pad(T3, [32, 32, 0, 0], S30)
    T37 = fd.ops.sub(T4, T36)
    fd.add_output(T5)
    fd.add_output(T20)
    fd.add_output(T28)
    fd.add_output(T29)
    fd.add_output(T37)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 4, 48, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 4, 16, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((128, 500), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((128, 64), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((128, 128), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
