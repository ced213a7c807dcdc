import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048, 4000], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T7 = fd.ops.pad(T0, [0, 96, 0, 0], S1)
    T8 = fd.ops.mul(T7, T7)
    T9 = fd.ops.sum(T8, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T7)
    fd.add_output(T9)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2048, 4000), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
