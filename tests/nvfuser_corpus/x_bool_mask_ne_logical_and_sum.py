import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[8, 2048], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[8, 2048], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(0, dtype=DataType.Int)
    T3 = fd.ops.ne(T0, S2)
    T4 = fd.ops.logical_and(T3, T1)
    T5 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.cast(T4, dtype=DataType.Float)
    fd.add_output(T5)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8, 2048), dtype=torch.int64, device='cuda:0', low=0, high=4),
    torch.testing.make_tensor((8, 2048), dtype=torch.bool, device='cuda:0'),
]
fd.execute(inputs)
