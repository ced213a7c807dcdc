# In the style of 2023 nvFuser issue repros: symbolic_sizes/contiguous, define_vector with
# dtype, positional keepdim and dtype, axes= (spellings today's nvfuser_direct rejects).
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Half)
    T1 = fd.define_tensor(symbolic_sizes=[-1], contiguous=[True], dtype=DataType.Half)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3, T4 = fd.ops.var_mean(T2, axes=[1], correction=0, keepdim=False)
    S5 = fd.define_scalar(1e-05, dtype=DataType.Double)
    T6 = fd.ops.add(T3, S5)
    T7 = fd.ops.rsqrt(T6)
    V8 = fd.define_vector([fd.ops.size(T0, 0), 1], dtype=DataType.Int)
    T9 = fd.ops.broadcast_in_dim(T4, V8, [0])
    T10 = fd.ops.broadcast_in_dim(T7, V8, [0])
    T11 = fd.ops.sub(T2, T9)
    T12 = fd.ops.mul(T11, T10)
    T13 = fd.ops.broadcast_in_dim(fd.ops.cast(T1, dtype=DataType.Float), T0.shape(), [1])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.Half)
    T16 = fd.ops.sum(T14, [0], False, DataType.Float)
    fd.add_output(T15)
    fd.add_output(T16)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(256, 1024, dtype=torch.float16, device='cuda:0'),
    torch.randn(1024, dtype=torch.float16, device='cuda:0'),
]
for _ in range(3):
    fd.execute(inputs)
