import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 512, 768], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[3072, 768], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[3072], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.linear(T0, T1, T2)
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    S5 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T6 = fd.ops.pow(T4, S5)
    S7 = fd.define_scalar(0.0447150, dtype=DataType.Double)
    T8 = fd.ops.mul(T6, S7)
    T9 = fd.ops.add(T4, T8)
    S10 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T11 = fd.ops.mul(T9, S10)
    T12 = fd.ops.tanh(T11)
    S13 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T14 = fd.ops.add(S13, T12)
    S15 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T16 = fd.ops.mul(T4, S15)
    T17 = fd.ops.mul(T16, T14)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    fd.add_output(T18)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 512, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3072, 768), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3072,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
