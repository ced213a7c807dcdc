# fuzz seed 113
# run it: fusecli run fuzz_113.py
# fusecli: fuzz_113, converted from fuzz_113.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id113(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[False], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T1 = fd.ops.cos(T0)
    T2 = fd.ops.mul(T1, T1)
    T3 = fd.ops.cast(T0, dtype=DataType.Bool)
    T4 = fd.ops.mul(T0, T2)
    T11 = fd.ops.slice(T2, start_indices=[0], end_indices=[5], strides=[1], manual_normalization=0)
    T12 = fd.ops.asinh(T4)
    S13 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.clamp(T1, S13, S14)
    T16 = fd.ops.sum(T11, dims=[0], keepdim=True, dtype=DataType.Null)
    T23 = fd.ops.slice(T11, start_indices=[2], end_indices=[3], strides=[1], manual_normalization=0)
    T24 = fd.ops.sigmoid(T23)
    T25 = fd.ops.prod(T24, dims=[0], keepdim=True, dtype=DataType.Null)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id113(fd)

inputs = [
    torch.tensor([
        0.625, -0.6953125, 1.0078125, -2.140625, -0.93359375, 0.09423828125, -0.11181640625, 0.5078125,
        0.0859375
    ], dtype=torch.bfloat16).to('cuda:0').as_strided((5,), (2,)),
]
fd.execute(inputs)
