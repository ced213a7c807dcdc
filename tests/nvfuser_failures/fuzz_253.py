# fuzz seed 253
# run it: fusecli run fuzz_253.py
# fusecli: fuzz_253, converted from fuzz_253.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id253(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.ops.sum(T0, dims=[1, 2], keepdim=False, dtype=DataType.Null)
    T2 = fd.ops.squeeze(T0, dims=[1], squeeze_expanded=False)
    T12 = fd.ops.slice(T2, start_indices=[0, 0], end_indices=[2, 3], strides=[1, 1], manual_normalization=0)
    T13 = fd.ops.tanh(T1)
    T14 = fd.ops.cast(T13, dtype=DataType.Half)
    T15 = fd.ops.cast(T2, dtype=DataType.Half)
    T16 = fd.ops.abs(T12)
    S17 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T18 = fd.ops.add(T16, S17)
    T19 = fd.ops.remainder(T2, T18)
    T20 = fd.ops.add(T19, T15)
    T21 = fd.ops.min(T14, dims=[0], keepdim=True, dtype=DataType.Null)
    S22 = fd.define_scalar(2, dtype=DataType.Int)
    T23 = fd.ops.pow(T1, S22)
    S24 = fd.define_scalar(2, dtype=DataType.Int)
    T25 = fd.ops.pow(T0, S24)
    T26 = fd.ops.tanh(T23)
    T27 = fd.ops.cast(T26, dtype=DataType.Half)
    T28 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T29 = fd.define_tensor(shape=[2], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T30 = fd.ops.linear(T19, T28, T29)
    T31 = fd.ops.isfinite(T25)
    S32 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T36 = fd.ops.pad(T20, [1, 0], S32)
    fd.add_output(T36)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id253(fd)

inputs = [
    torch.tensor([-0.5625567436218262, -1.6814024448394775, 1.598555564880371], dtype=torch.float32).to('cuda:0').as_strided((2, 1, 3), (0, 3, 1)),
    torch.tensor([
        1.8694705963134766, 1.474692702293396, 0.9730971455574036, 0.6655558943748474,
        1.6682212352752686, -0.6387454867362976
    ], dtype=torch.float32).to('cuda:0').as_strided((2, 3), (3, 1)),
    torch.tensor([0.3371347188949585, -0.04281284287571907], dtype=torch.float32).to('cuda:0').as_strided((2,), (1,)),
]
fd.execute(inputs)
