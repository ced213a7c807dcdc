import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[32, 64], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.reshape(T2, new_shape=[32, 64])
    T7 = fd.ops.mul(T6, T1)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T6)
    fd.add_output(T8)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2048, 4096), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((32, 64), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
