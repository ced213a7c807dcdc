# fuzz seed 200
# run it: fusecli run fuzz_200.py
# fusecli: fuzz_200, converted from fuzz_200.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id200(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    S1 = fd.define_scalar(3, dtype=DataType.Int)
    T2 = fd.ops.pow(T0, S1)
    S3 = fd.define_scalar(2, dtype=DataType.Int)
    T4 = fd.ops.pow(T0, S3)
    S5 = fd.define_scalar(0.250000, dtype=DataType.Double)
    T6 = fd.ops.lerp(T4, T0, S5)
    T7 = fd.ops.var(T4, dims=[0], correction=1, keepdim=True)
    S8 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T9 = fd.ops.add(S8, T6)
    T10 = fd.ops.squeeze(T4, dims=[0], squeeze_expanded=False)
    T11 = fd.ops.minimum(T10, T10)
    T12 = fd.ops.max(T6, dims=[0], keepdim=True, dtype=DataType.Null)
    S13 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T14 = fd.ops.maximum(S13, T12)
    T15 = fd.ops.tanh(T10)
    T16 = fd.ops.sinh(T15)
    T17 = fd.ops.sigmoid(T11)
    S18 = fd.define_scalar(3, dtype=DataType.Int)
    T19 = fd.ops.pow(T14, S18)
    T20 = fd.ops.abs(T17)
    S21 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T22 = fd.ops.add(T20, S21)
    T23 = fd.ops.log(T22)
    T24 = fd.ops.cast(T23, dtype=DataType.BFloat16)
    T25 = fd.ops.segment_set(T12)
    fd.add_output(T25)
    fd.add_output(T23)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id200(fd)

inputs = [
    torch.tensor([0.01434326171875], dtype=torch.bfloat16).to('cuda:0').as_strided((1,), (1,)),
]
fd.execute(inputs)
