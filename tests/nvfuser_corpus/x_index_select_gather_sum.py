import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[8192, 1024], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[4096, 64], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.index_select(T0, T1, dim=0)
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    T5 = fd.ops.sum(T4, dims=[0], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.gather(T4, T2, dim=1)
    T7 = fd.ops.sum(T6, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T5)
    fd.add_output(T7)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8192, 1024), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4096,), dtype=torch.int64, device='cuda:0', low=0, high=8192),
    torch.testing.make_tensor((4096, 64), dtype=torch.int64, device='cuda:0', low=0, high=1024),
]
fd.execute(inputs)
