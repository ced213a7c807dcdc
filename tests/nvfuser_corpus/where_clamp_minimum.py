import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[2048, 4096], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(-5.00000, dtype=DataType.Double)
    T3 = fd.ops.lt(T0, S2)
    S4 = fd.define_scalar(-5.00000, dtype=DataType.Double)
    T5 = fd.ops.where(T3, S4, T0)
    S6 = fd.define_scalar(5.00000, dtype=DataType.Double)
    T7 = fd.ops.gt(T5, S6)
    S8 = fd.define_scalar(5.00000, dtype=DataType.Double)
    T9 = fd.ops.where(T7, S8, T5)
    S10 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T11 = fd.ops.gt(T0, S10)
    S12 = fd.define_scalar(0.0100000, dtype=DataType.Double)
    T13 = fd.ops.mul(T0, S12)
    T14 = fd.ops.where(T11, T0, T13)
    T15 = fd.ops.minimum(T14, T1)
    fd.add_output(T9)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2048, 4096), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2048, 4096), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
