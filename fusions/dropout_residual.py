import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 64, 512], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 64, 512], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(None, dtype=DataType.Int)
    S4 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S5 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T10 = fd.ops.uniform(S4, S5, shape=[2, 64, 512], rng_seed=S2, rng_offset=S3, dtype=DataType.Float)
    S11 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T12 = fd.ops.lt(T10, S11)
    T13 = fd.ops.cast(T0, dtype=DataType.Float)
    S14 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T15 = fd.ops.where(T12, T13, S14)
    S16 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T17 = fd.ops.mul(T15, S16)
    T18 = fd.ops.cast(T1, dtype=DataType.Float)
    T19 = fd.ops.add(T17, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T12)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 64, 512), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 64, 512), dtype=torch.bfloat16, device='cuda:0'),
    2024,
    0,
]
fd.execute(inputs)
