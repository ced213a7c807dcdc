import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16, 512, 1024], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.ops.sum(T0, dims=[1, 2], keepdim=False, dtype=DataType.Null)
    S2 = fd.define_scalar(524288., dtype=DataType.Double)
    T3 = fd.ops.div(T1, S2)
    T4 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    S5 = fd.define_scalar(512.000, dtype=DataType.Double)
    T6 = fd.ops.div(T4, S5)
    fd.add_output(T3)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 512, 1024), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
