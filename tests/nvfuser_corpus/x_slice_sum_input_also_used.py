import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 6144], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T13 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[1, 2048, 4096], strides=[1, 1, 1], manual_normalization=0)
    T14 = fd.ops.cast(T13, dtype=DataType.Float)
    T15 = fd.ops.mul(T14, T14)
    T16 = fd.ops.sum(T15, dims=[2], keepdim=False, dtype=DataType.Null)
    S17 = fd.define_scalar(4096.00, dtype=DataType.Double)
    T18 = fd.ops.div(T16, S17)
    S19 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T20 = fd.ops.add(T18, S19)
    T21 = fd.ops.rsqrt(T20)
    T22 = fd.ops.cast(T0, dtype=DataType.Float)
    S23 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T24 = fd.ops.mul(T22, S23)
    T25 = fd.ops.cast(T24, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 6144), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
