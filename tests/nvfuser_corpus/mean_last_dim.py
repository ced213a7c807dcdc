import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 4096], contiguity=[None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.ops.sum(T0, dims=[2], keepdim=False, dtype=DataType.Null)
    S2 = fd.define_scalar(4096.00, dtype=DataType.Double)
    T3 = fd.ops.div(T1, S2)
    fd.add_output(T3)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 4096), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
