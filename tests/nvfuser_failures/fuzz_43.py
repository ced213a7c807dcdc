# fuzz seed 43
# run it: fusecli run fuzz_43.py
# fusecli: fuzz_43, converted from fuzz_43.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id43(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.ops.le(T0, T1)
    T3 = fd.ops.cast(T1, dtype=DataType.Bool)
    T4 = fd.ops.bitwise_not(T2)
    T5 = fd.ops.cat([T1, T1], dim=0, manual_padding=0)
    T6 = fd.ops.logical_or(T2, T3)
    T7, T8 = fd.ops.var_mean(T5, dims=[0], correction=1, keepdim=True)
    T12 = fd.ops.broadcast_in_dim(T7, shape=[2, 1], broadcast_dims=[1])
    T13 = fd.ops.bitwise_not(T2)
    T14 = fd.ops.tanh(T8)
    T15 = fd.ops.exp2(T14)
    T22 = fd.ops.slice(T4, start_indices=[0], end_indices=[4], strides=[1], manual_normalization=0)
    T26 = fd.ops.pad(T22, [1, 2])
    T27 = fd.ops.gt(T13, T22)
    T28 = fd.ops.maximum(T5, T8)
    T32 = fd.ops.broadcast_in_dim(T27, shape=[2, 4], broadcast_dims=[1])
    fd.add_output(T32)

with FusionDefinition() as fd:
    nvfuser_fusion_id43(fd)

inputs = [
    torch.tensor([-0.6484010815620422, -0.7058414220809937, 0.6432183980941772, 1.4787991046905518], dtype=torch.float32).to('cuda:0').as_strided((4,), (1,)),
    torch.tensor([1.1918498277664185, -0.14461655914783478, 0.48471593856811523, 0.6921041011810303], dtype=torch.float32).to('cuda:0').as_strided((4,), (1,)),
]
fd.execute(inputs)
