import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 32, 512, 512], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    S2 = fd.define_scalar(0.0883883, dtype=DataType.Double)
    T3 = fd.ops.mul(T1, S2)
    S4 = fd.define_scalar(512, dtype=DataType.Int)
    S5 = fd.define_scalar(0, dtype=DataType.Int)
    S6 = fd.define_scalar(1, dtype=DataType.Int)
    T7 = fd.ops.iota(S4, S5, S6, dtype=DataType.Int)
    T11 = fd.ops.broadcast_in_dim(T7, shape=[512, 512], broadcast_dims=[0])
    T15 = fd.ops.broadcast_in_dim(T7, shape=[512, 512], broadcast_dims=[1])
    T16 = fd.ops.ge(T11, T15)
    T22 = fd.ops.broadcast_in_dim(T16, shape=[1, 32, 512, 512], broadcast_dims=[2, 3])
    S23 = fd.define_scalar(float("-inf"), dtype=DataType.Double)
    T24 = fd.ops.where(T22, T3, S23)
    T25 = fd.ops.max(T24, dims=[3], keepdim=False, dtype=DataType.Null)
    T31 = fd.ops.broadcast_in_dim(T25, shape=[1, 32, 512, 1], broadcast_dims=[0, 1, 2])
    T37 = fd.ops.broadcast_in_dim(T31, shape=[1, 32, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T38 = fd.ops.sub(T24, T37)
    T39 = fd.ops.exp(T38)
    T40 = fd.ops.sum(T39, dims=[3], keepdim=False, dtype=DataType.Null)
    T46 = fd.ops.broadcast_in_dim(T40, shape=[1, 32, 512, 1], broadcast_dims=[0, 1, 2])
    T52 = fd.ops.broadcast_in_dim(T46, shape=[1, 32, 512, 512], broadcast_dims=[0, 1, 2, 3])
    T53 = fd.ops.div(T39, T52)
    T54 = fd.ops.cast(T53, dtype=DataType.BFloat16)
    fd.add_output(T54)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 32, 512, 512), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
