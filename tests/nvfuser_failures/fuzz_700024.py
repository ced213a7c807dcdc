# fuzz seed 700024
# run it: fusecli run fuzz_700024.py
# fusecli: fuzz_700024, converted from fuzz_700024.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id24(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T1 = fd.ops.max(T0, dims=[0], keepdim=False, dtype=DataType.Null)
    T2 = fd.ops.signbit(T1)
    S3 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    S4 = fd.define_scalar(1.50000, dtype=DataType.Double)
    T5 = fd.ops.clamp(T1, S3, S4)
    T6 = fd.ops.where(T2, T1, T1)
    T9 = fd.ops.broadcast_in_dim(T1, shape=[3], broadcast_dims=[])
    T10 = fd.ops.segment_set(T1)
    T11 = fd.ops.exp(T10)
    T12 = fd.ops.relu(T9)
    T13 = fd.ops.abs(T6)
    S14 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T15 = fd.ops.add(T13, S14)
    T16 = fd.ops.div(T10, T15)
    T17 = fd.ops.cosh(T12)
    T18, T19 = fd.ops.var_mean(T9, dims=[0], correction=1, keepdim=True)
    fd.add_output(T18)
    fd.add_output(T10)

with FusionDefinition() as fd:
    nvfuser_fusion_id24(fd)

inputs = [
    torch.tensor([0.23197497427463531, -0.3655592203140259, 0.20538821816444397], dtype=torch.float32).to('cuda:0').as_strided((3,), (1,)),
]
fd.execute(inputs)
