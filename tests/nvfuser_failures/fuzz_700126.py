# fuzz seed 700126
# run it: fusecli run fuzz_700126.py
# fusecli: fuzz_700126, converted from fuzz_700126.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id126(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1, -1, -1], contiguity=[None, None, True, False], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.ops.bitwise_or(T0, T0)
    T2 = fd.ops.cast(T0, dtype=DataType.Double)
    T3 = fd.ops.le(T1, T1)
    T4 = fd.ops.bitwise_not(T1)
    T5 = fd.ops.logical_or(T1, T4)
    T6 = fd.ops.floor(T2)
    T12 = fd.ops.pad(T4, [2, 1, 1, 1])
    fd.add_output(T12)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id126(fd)

inputs = [
    torch.tensor([
        True, True, True, False, False, False, True, False, True, True, False, True, False, True, True,
        True, True
    ], dtype=torch.bool).to('cuda:0').as_strided((1, 1, 3, 3), (18, 18, 6, 2)),
]
fd.execute(inputs)
