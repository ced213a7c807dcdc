# fuzz seed 700044
# run it: fusecli run fuzz_700044.py
# fusecli: fuzz_700044, converted from fuzz_700044.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id44(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 2, 4, 4, 1], contiguity=[True, True, True, True, None], dtype=DataType.BFloat16, is_cpu=False, stride_order=[4, 3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1, 1], contiguity=[True, None, True, True, None], dtype=DataType.Bool, is_cpu=False, stride_order=[4, 3, 2, 1, 0])
    T20 = fd.ops.slice(T1, start_indices=[1, 0, 0, 2, 0], end_indices=[3, 2, 4, 4, 1], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T21 = fd.ops.max(T0, dims=[0], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.cast(T0, dtype=DataType.BFloat16)
    T29 = fd.ops.expand(T22, shape=[3, 2, 4, 4, 4])
    T36 = fd.ops.expand(T20, shape=[2, 2, 4, 2, 4])
    fd.add_output(T36)
    fd.add_output(T29)
    fd.add_output(T21)

with FusionDefinition() as fd:
    nvfuser_fusion_id44(fd)

inputs = [
    torch.tensor([
        1.6328125, 2.171875, 2.34375, 0.6015625, 1.015625, -0.06787109375, -0.5546875, -0.37109375,
        -0.158203125, 1.0390625, 0.296875, 1.1328125, -0.453125, 0.421875, 1.15625, 0.7890625,
        0.37890625, -0.2177734375, 0.373046875, -0.94921875, -0.48828125, 0.97265625, -0.51171875,
        -0.12890625, 0.79296875, -1.1953125, -0.55859375, 1.8125, -0.024658203125, 0.72265625,
        1.265625, -1.7578125, 1.65625, -0.56640625, -1.2734375, 0.03759765625, -0.84765625, 0.94140625,
        0.5546875, -0.76953125, -0.0791015625, 0.67578125, -0.330078125, -1.9765625, -2.25,
        -0.050537109375, -0.064453125, -0.053466796875, -0.296875, -0.00046539306640625, 0.76953125,
        1.28125, -1.4140625, -1.8359375, 1.0078125, -0.2041015625, -0.25, 0.2197265625, -0.25390625,
        -1.78125, -0.353515625, -1.140625, 1.8359375, 1.8515625, -0.337890625, -1.859375, 0.86328125,
        0.7265625, 0.7578125, 0.2109375, 0.349609375, 0.412109375, -0.25390625, -0.87109375, 1.6015625,
        -1.21875, 1.3671875, -1.8984375, 0.54296875, 0.7109375, -2.484375, -0.255859375, -0.58203125,
        0.1640625, -0.6875, 0.92578125, 0.3046875, -0.9765625, -1.34375, 2.6875, -0.68359375, 1.15625,
        -0.46875, -1.40625, -0.671875, 0.90625
    ], dtype=torch.bfloat16).to('cuda:0').as_strided((3, 2, 4, 4, 1), (32, 16, 4, 1, 1)),
    torch.tensor([
        False, True, True, False, False, True, False, True, True, False, False, False, False, False,
        False, True, False, True, False, False, True, False, False, True, True, True, True, True, True,
        True, True, False, True, True, False, True, True, False, False, True, True, True, True, False,
        True, True, False, True
    ], dtype=torch.bool).to('cuda:0').as_strided((3, 2, 4, 4, 1), (16, 0, 4, 1, 1)),
]
fd.execute(inputs)
