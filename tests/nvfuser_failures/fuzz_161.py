# fuzz seed 161
# run it: fusecli run fuzz_161.py
# fusecli: fuzz_161, converted from fuzz_161.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id161(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1], contiguity=[None, None], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[1, 1], contiguity=[None, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S3 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    S4 = fd.define_scalar(1.50000, dtype=DataType.Double)
    T5 = fd.ops.clamp(T1, S3, S4)
    T6 = fd.ops.sin(T1)
    T7 = fd.ops.squeeze(T1, dims=[1], squeeze_expanded=False)
    T8 = fd.ops.cast(T2, dtype=DataType.Float)
    T9 = fd.ops.cat([T6, T5], dim=0, manual_padding=0)
    T10 = fd.ops.neg(T9)
    T11 = fd.ops.sigmoid(T7)
    T12 = fd.ops.prod(T11, dims=[0], keepdim=True, dtype=DataType.Null)
    S13 = fd.define_scalar(-1.25000, dtype=DataType.Double)
    T14 = fd.ops.sub(T9, S13)
    T15 = fd.ops.mul(T14, T10)
    T16 = fd.ops.sub(T10, T15)
    S17 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T18 = fd.ops.maximum(T16, S17)
    T19 = fd.ops.mul(T16, T16)
    T20 = fd.ops.cat([T16, T16], dim=0, manual_padding=0)
    fd.add_output(T20)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id161(fd)

inputs = [
    torch.tensor([-0.80078125], dtype=torch.bfloat16).to('cuda:0').as_strided((1, 1), (1, 1)),
    torch.tensor([0.002269744873046875, -1.1904296875, 2.052734375], dtype=torch.float16).to('cuda:0').as_strided((3, 1), (1, 1)),
    torch.tensor([2.571906089782715], dtype=torch.float32).to('cuda:0').as_strided((1, 1), (1, 1)),
]
fd.execute(inputs)
