import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048, 4096], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    S3 = fd.ops.mul(S1, S2)
    S4 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S5 = fd.ops.add(S3, S4)
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    T7 = fd.ops.mul(T6, S3)
    T8 = fd.ops.cast(T7, dtype=DataType.BFloat16)
    T11 = fd.ops.full(shape=[4096], fill_value=S5, dtype=DataType.Float)
    fd.add_output(T8)
    fd.add_output(T11)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2048, 4096), dtype=torch.bfloat16, device='cuda:0'),
    0.5,
    3.0,
]
fd.execute(inputs)
