# fuzz seed 700097
# run it: fusecli run fuzz_700097.py
# fusecli: fuzz_700097, converted from fuzz_700097.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id97(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.abs(T0)
    S2 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T3 = fd.ops.add(T1, S2)
    T4 = fd.ops.remainder(T0, T3)
    S5 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T6 = fd.ops.mul(T0, S5)
    S7 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T8 = fd.ops.addcmul(T0, T4, T0, S7)
    T9 = fd.ops.mul(T4, T0)
    T10 = fd.ops.mul(T9, T9)
    T11 = fd.ops.maximum(T9, T9)
    T12 = fd.ops.cast(T8, dtype=DataType.Double)
    T13 = fd.ops.segment_set(T9)
    T14 = fd.ops.min(T11, dims=[1], keepdim=True, dtype=DataType.Null)
    T20 = fd.ops.broadcast_in_dim(T14, shape=[2, 1, 3, 1], broadcast_dims=[0, 1, 2])
    T21 = fd.ops.tanh(T14)
    T22 = fd.ops.cast(T21, dtype=DataType.Half)
    T23 = fd.ops.minimum(T6, T14)
    T24 = fd.ops.tanh(T23)
    T25 = fd.ops.cosh(T24)
    T33 = fd.ops.pad(T11, [0, 0, 0, 0, 1, 2])
    T34 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    T35 = fd.ops.abs(T34)
    T36 = fd.ops.cat([T33, T33], dim=2, manual_padding=0)
    T37 = fd.ops.cast(T36, dtype=DataType.BFloat16)
    fd.add_output(T37)
    fd.add_output(T36)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id97(fd)

inputs = [
    torch.tensor([
        0.9074315428733826, 0.9213365316390991, -0.4292875826358795, 1.405545949935913,
        0.5345037579536438, -1.0977373123168945
    ], dtype=torch.float32).to('cuda:0').as_strided((2, 1, 3), (3, 3, 1)),
]
fd.execute(inputs)
