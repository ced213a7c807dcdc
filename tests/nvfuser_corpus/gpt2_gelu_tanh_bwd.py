import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 1024, 3072], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 1024, 3072], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.mul(T2, T2)
    T5 = fd.ops.mul(T4, T2)
    S6 = fd.define_scalar(0.0447150, dtype=DataType.Double)
    T7 = fd.ops.mul(T5, S6)
    T8 = fd.ops.add(T2, T7)
    S9 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T10 = fd.ops.mul(T8, S9)
    T11 = fd.ops.tanh(T10)
    S12 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.mul(T13, S14)
    T16 = fd.ops.mul(T11, T11)
    S17 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T18 = fd.ops.sub(S17, T16)
    S19 = fd.define_scalar(0.134145, dtype=DataType.Double)
    T20 = fd.ops.mul(T4, S19)
    S21 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T22 = fd.ops.add(T20, S21)
    S23 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T24 = fd.ops.mul(T22, S23)
    S25 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T26 = fd.ops.mul(T2, S25)
    T27 = fd.ops.mul(T26, T18)
    T28 = fd.ops.mul(T27, T24)
    T29 = fd.ops.add(T15, T28)
    T30 = fd.ops.mul(T3, T29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    fd.add_output(T31)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1024, 3072), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 1024, 3072), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
