# fuzz seed 700038
# run it: fusecli run fuzz_700038.py
# fusecli: fuzz_700038, converted from fuzz_700038.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id38(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1, -1], contiguity=[False, None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 1, 0, 2], contiguity=[None, None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.relu(T2)
    T4 = fd.ops.min(T0, dims=[1, 3], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.cast(T4, dtype=DataType.BFloat16)
    T6 = fd.ops.isfinite(T5)
    T7 = fd.ops.neg(T3)
    T8 = fd.ops.squeeze(T7, dims=[1], squeeze_expanded=False)
    T9 = fd.ops.min(T2, dims=[1, 3], keepdim=False, dtype=DataType.Null)
    S10 = fd.define_scalar(2, dtype=DataType.Int)
    T11 = fd.ops.pow(T7, S10)
    T12 = fd.ops.abs(T7)
    S13 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T14 = fd.ops.add(T12, S13)
    T15 = fd.ops.remainder(T7, T14)
    T16 = fd.ops.abs(T15)
    S17 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T18 = fd.ops.add(T16, S17)
    T19 = fd.ops.rsqrt(T18)
    T20 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T21 = fd.ops.matmul(T4, T20)
    fd.add_output(T21)
    fd.add_output(T6)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id38(fd)

inputs = [
    torch.tensor([], dtype=torch.float32).to('cuda:0').as_strided((2, 1, 0, 2), (2, 2, 2, 1)),
    torch.tensor([], dtype=torch.float32).to('cuda:0').as_strided((2, 1, 0, 2), (0, 2, 2, 1)),
    torch.tensor([], dtype=torch.float32).to('cuda:0').as_strided((0, 5), (5, 1)),
]
fd.execute(inputs)
