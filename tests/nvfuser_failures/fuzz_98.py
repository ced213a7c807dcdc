# fuzz seed 98
# run it: fusecli run fuzz_98.py
# fusecli: fuzz_98, converted from fuzz_98.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id98(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    T3 = fd.ops.abs(T0)
    S4 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T5 = fd.ops.add(T3, S4)
    T6 = fd.ops.fmod(T0, T5)
    T7 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T8 = fd.ops.matmul(T6, T7)
    T9 = fd.ops.neg(T6)
    T10, T11 = fd.ops.var_mean(T1, dims=[1], correction=1, keepdim=False)
    T12 = fd.ops.sum(T9, dims=[0, 1], keepdim=False, dtype=DataType.Float)
    T13 = fd.ops.abs(T11)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.add(T13, S14)
    T16 = fd.ops.div(T11, T15)
    T20 = fd.ops.pad(T8, [2, 1])
    T25 = fd.ops.broadcast_in_dim(T20, shape=[3, 4, 8], broadcast_dims=[1, 2])
    S26 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T27 = fd.ops.lerp(T25, T25, S26)
    T28 = fd.ops.erfc(T16)
    fd.add_output(T28)
    fd.add_output(T20)

with FusionDefinition() as fd:
    nvfuser_fusion_id98(fd)

inputs = [
    torch.tensor([], dtype=torch.float16).to('cuda:0').as_strided((4, 0), (1, 1)),
    torch.tensor([], dtype=torch.float32).to('cuda:0').as_strided((4, 0), (1, 4)),
    -2.00000,
    torch.tensor([], dtype=torch.float32).to('cuda:0').as_strided((0, 5), (5, 1)),
]
fd.execute(inputs)
