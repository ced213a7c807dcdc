import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 0, 1])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, False, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T7 = fd.ops.broadcast_in_dim(T1, shape=[2, 64, 256], broadcast_dims=[2])
    T8 = fd.ops.add(T0, T7)
    S9 = fd.define_scalar(0.707107, dtype=DataType.Double)
    T10 = fd.ops.mul(T8, S9)
    T11 = fd.ops.erf(T10)
    S12 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.mul(T8, S14)
    T16 = fd.ops.mul(T15, T13)
    T17 = fd.ops.add(T16, T2)
    fd.add_output(T16)
    fd.add_output(T17)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((32768,), dtype=torch.float32, device='cuda:0').as_strided((2, 64, 256), (16384, 1, 64)),
    torch.testing.make_tensor((256,), dtype=torch.float32, device='cuda:0'),
    torch.randn((65280,), dtype=torch.float32, device='cuda:0').as_strided((2, 64, 256), (32768, 512, 1)),
]
fd.execute(inputs)
