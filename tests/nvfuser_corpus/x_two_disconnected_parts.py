import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1024, 1024], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.relu(T3)
    S5 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    T7 = fd.ops.cast(T6, dtype=DataType.BFloat16)
    fd.add_output(T2)
    fd.add_output(T7)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2048, 4096), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1024, 1024), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
