import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 512, 2048], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2048, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[1, 512, 2048], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.ops.linear(T0, T1)
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    S5 = fd.define_scalar(0.707107, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    T7 = fd.ops.erf(T6)
    S8 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T9 = fd.ops.add(T7, S8)
    S10 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T11 = fd.ops.mul(T4, S10)
    T12 = fd.ops.mul(T11, T9)
    T13 = fd.ops.cast(T2, dtype=DataType.Float)
    T14 = fd.ops.add(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 512, 2048), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2048, 2048), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 512, 2048), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
