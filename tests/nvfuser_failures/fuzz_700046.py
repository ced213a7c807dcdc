# fuzz seed 700046
# run it: fusecli run fuzz_700046.py
# fusecli: fuzz_700046, converted from fuzz_700046.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id46(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 1, 4, 3], contiguity=[True, None, True, True], dtype=DataType.Int32, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Int, is_cpu=False)
    S2 = fd.define_scalar(3, dtype=DataType.Int)
    T3 = fd.ops.sub(S2, T1)
    T8 = fd.ops.reshape(T3, new_shape=[1, 4, 3])
    T9 = fd.ops.abs(T3)
    S10 = fd.define_scalar(1, dtype=DataType.Int)
    T11 = fd.ops.add(T9, S10)
    T12 = fd.ops.fmod(T1, T11)
    T13 = fd.ops.logical_not(T1)
    T14 = fd.ops.sub(T8, T8)
    T15 = fd.ops.logical_and(T13, T13)
    T16 = fd.ops.neg(T12)
    T17 = fd.ops.mul(T14, T14)
    T18 = fd.ops.abs(T16)
    S19 = fd.define_scalar(1, dtype=DataType.Int)
    T20 = fd.ops.mul(T18, S19)
    S21 = fd.define_scalar(1, dtype=DataType.Int)
    T22 = fd.ops.maximum(T3, S21)
    T23 = fd.ops.cast(T3, dtype=DataType.Double)
    T24 = fd.ops.neg(T20)
    S25 = fd.define_scalar(1, dtype=DataType.Int)
    T26 = fd.ops.sub(S25, T22)
    T27, T28 = fd.ops.var_mean(T23, dims=[0], correction=1, keepdim=True)
    T29 = fd.ops.bitwise_not(T8)
    S30 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    S31 = fd.define_scalar(1.50000, dtype=DataType.Double)
    T32 = fd.ops.clamp(T27, S30, S31)
    T33 = fd.ops.sum(T29, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.sign(T24)
    T35 = fd.ops.prod(T34, dims=[2], keepdim=True, dtype=DataType.Null)
    T36 = fd.ops.bitwise_or(T33, T33)
    fd.add_output(T36)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id46(fd)

inputs = [
    torch.tensor([
        3, -1, -1, 4, 1, 0, 1, 3, -4, -1, 1, 3, 3, 4, -2, 4, -2, 3, -2, -2, -2, 4, 2, 0, -4, -3, -4,
        -2, 4, -4, 2, 1, 0, 1, -3, 2
    ], dtype=torch.int32).to('cuda:0').as_strided((3, 1, 4, 3), (12, 12, 3, 1)),
    torch.tensor([1, -2, 3, 2, -1, 1, 0, 4, -4, -4, 2, 0], dtype=torch.int64).to('cuda:0').as_strided((1, 4, 1, 3), (12, 3, 3, 1)),
]
fd.execute(inputs)
