# fuzz seed 51
# run it: fusecli run fuzz_51.py
# fusecli: fuzz_51, converted from fuzz_51.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id51(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1], contiguity=[None, None], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.BFloat16)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.eq(T0, T1)
    T4 = fd.ops.segment_set(T3)
    T5 = fd.ops.min(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.permute(T4, dims=[0, 1])
    T7 = fd.ops.logical_not(T6)
    T8 = fd.ops.set(T6)
    T9 = fd.ops.bitwise_or(T6, T3)
    T10 = fd.ops.cast(T8, dtype=DataType.Int32)
    T11 = fd.ops.logical_or(T8, T4)
    fd.add_output(T11)
    fd.add_output(T7)
    fd.add_output(T3)

with FusionDefinition() as fd:
    nvfuser_fusion_id51(fd)

inputs = [
    torch.tensor([0], dtype=torch.int64).to('cuda:0').as_strided((3, 1), (0, 1)),
]
fd.execute(inputs)
