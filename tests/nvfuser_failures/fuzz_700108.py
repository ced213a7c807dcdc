# fuzz seed 700108
# run it: fusecli run fuzz_700108.py
# fusecli: fuzz_700108, converted from fuzz_700108.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id108(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.mul(T0, T0)
    T11 = fd.ops.slice(T0, start_indices=[0, 1], end_indices=[5, 2], strides=[1, 1], manual_normalization=0)
    S12 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T13 = fd.ops.gt(T0, S12)
    T14 = fd.ops.where(T13, T1, T0)
    T15 = fd.ops.tanh(T1)
    T16 = fd.ops.cosh(T15)
    S17 = fd.define_scalar(2, dtype=DataType.Int)
    T18 = fd.ops.pow(T16, S17)
    T19 = fd.define_tensor(shape=[1, 1], contiguity=[None, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T20 = fd.ops.linear(T11, T19)
    T21 = fd.ops.var(T14, dims=[0], correction=0, keepdim=True)
    fd.add_output(T21)

with FusionDefinition() as fd:
    nvfuser_fusion_id108(fd)

inputs = [
    torch.tensor([
        0.6894919872283936, -2.33217716217041, -0.6968032121658325, -0.3187490701675415,
        -0.3392696976661682
    ], dtype=torch.float32).to('cuda:0').as_strided((5, 5), (0, 1)),
    torch.tensor([0.6097766160964966], dtype=torch.float32).to('cuda:0').as_strided((1, 1), (1, 1)),
]
fd.execute(inputs)
