import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(None, dtype=DataType.Int)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    S5 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S6 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T11 = fd.ops.uniform(S5, S6, shape=[1, 2048, 4096], rng_seed=S2, rng_offset=S3, dtype=DataType.Float)
    S12 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T13 = fd.ops.lt(T11, S12)
    S14 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T15 = fd.ops.where(T13, T4, S14)
    S16 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T17 = fd.ops.mul(T15, S16)
    T18 = fd.ops.cast(T1, dtype=DataType.Float)
    T19 = fd.ops.add(T17, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T13)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    2024,
    0,
]
fd.execute(inputs)
