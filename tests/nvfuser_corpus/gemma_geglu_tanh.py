import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 512, 16384], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 512, 16384], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    S3 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T4 = fd.ops.pow(T2, S3)
    S5 = fd.define_scalar(0.0447150, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    T7 = fd.ops.add(T2, T6)
    S8 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T9 = fd.ops.mul(T7, S8)
    T10 = fd.ops.tanh(T9)
    S11 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T12 = fd.ops.add(S11, T10)
    S13 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T14 = fd.ops.mul(T2, S13)
    T15 = fd.ops.mul(T14, T12)
    T16 = fd.ops.cast(T1, dtype=DataType.Float)
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    fd.add_output(T18)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 512, 16384), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 512, 16384), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
