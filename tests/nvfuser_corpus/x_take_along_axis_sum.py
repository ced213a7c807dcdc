import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[512, 32000], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[512, 16], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.take_along_axis(T2, T1, dim=1)
    T4 = fd.ops.sum(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    S5 = fd.define_scalar(16.0000, dtype=DataType.Double)
    T6 = fd.ops.div(T4, S5)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((512, 32000), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((512, 16), dtype=torch.int64, device='cuda:0', low=0, high=32000),
]
fd.execute(inputs)
