import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 64], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[384, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.reshape(T0, new_shape=[128])
    T5 = fd.ops.index_select(T1, T4, dim=0)
    T10 = fd.ops.reshape(T5, new_shape=[2, 64, 256])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    S12 = fd.define_scalar(16.0000, dtype=DataType.Double)
    T13 = fd.ops.mul(T11, S12)
    T14 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    T15 = fd.ops.embedding_fwd(T0, T1, None, None, None, None, None)
    fd.add_output(T14)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 64), dtype=torch.int64, device='cuda:0', low=0, high=384),
    torch.testing.make_tensor((384, 256), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
