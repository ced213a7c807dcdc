# fuzz seed 18
# run it: fusecli run fuzz_18.py
# fusecli: fuzz_18, converted from fuzz_18.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id18(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T3 = fd.ops.sub(S2, T0)
    T4 = fd.ops.mul(T0, T3)
    T5 = fd.ops.cast(T3, dtype=DataType.BFloat16)
    T6 = fd.ops.mul(T3, T5)
    T7 = fd.ops.mul(T4, T5)
    S8 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    S9 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T10 = fd.ops.clamp(T5, S8, S9)
    T11, T12 = fd.ops.var_mean(T10, dims=[0], correction=0, keepdim=False)
    T13 = fd.ops.min(T12, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T13)

with FusionDefinition() as fd:
    nvfuser_fusion_id18(fd)

inputs = [
    torch.tensor([0.59375, -0.126953125], dtype=torch.bfloat16).to('cuda:0').as_strided((1, 2), (1, 1)),
    torch.tensor([-0.728515625, 0.72119140625, -0.56591796875, 0.578125, 0.306884765625, 0.61376953125], dtype=torch.float16).to('cuda:0').as_strided((3, 2), (2, 1)),
]
fd.execute(inputs)
