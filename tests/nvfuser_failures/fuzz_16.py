# fuzz seed 16
# run it: fusecli run fuzz_16.py
# fusecli: fuzz_16, converted from fuzz_16.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id16(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[3, 1], contiguity=[None, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.minimum(T0, T1)
    T3 = fd.ops.minimum(T1, T0)
    T4 = fd.ops.cast(T0, dtype=DataType.Half)
    S5 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    S6 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T7 = fd.ops.clamp(T4, S5, S6)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Null)
    T10 = fd.ops.sum(T9, dims=[0], keepdim=True, dtype=DataType.Null)
    T11 = fd.ops.ge(T7, T7)
    T12 = fd.ops.sum(T7, dims=[0], keepdim=False, dtype=DataType.Null)
    S13 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T14 = fd.ops.maximum(T12, S13)
    T15 = fd.ops.isfinite(T12)
    T16 = fd.ops.where(T11, T2, T3)
    T23 = fd.ops.slice(T14, start_indices=[0], end_indices=[3], strides=[1], manual_normalization=0)
    T24 = fd.ops.add(T16, T11)
    T25, T26 = fd.ops.var_mean(T23, dims=[0], correction=1, keepdim=False)
    T27 = fd.ops.broadcast(T25, is_broadcast_dim=[True, True])
    S28 = fd.define_scalar(0.250000, dtype=DataType.Double)
    T29 = fd.ops.lerp(T4, T27, S28)
    T30 = fd.ops.squeeze(T27, dims=[0, 1], squeeze_expanded=False)
    T34 = fd.ops.reshape(T23, new_shape=[1, 3])
    T35 = fd.ops.squeeze(T27, dims=[0, 1], squeeze_expanded=False)
    fd.add_output(T35)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id16(fd)

inputs = [
    torch.tensor([0, 4, 4, 1, 3, -4, -2, 2, 1], dtype=torch.int64).to('cuda:0').as_strided((3, 3), (3, 1)),
    torch.tensor([-0.031058959662914276], dtype=torch.float32).to('cuda:0').as_strided((3, 1), (0, 1)),
]
fd.execute(inputs)
