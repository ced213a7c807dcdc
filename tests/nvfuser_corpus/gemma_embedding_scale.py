import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[8192, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(2.00000, dtype=DataType.Double)
    S3 = fd.define_scalar(False, dtype=DataType.Bool)
    S4 = fd.define_scalar(False, dtype=DataType.Bool)
    T5 = fd.ops.embedding_fwd(T0, T1, None, None, S2, S3, S4)
    T6 = fd.ops.cast(T5, dtype=DataType.Float)
    S7 = fd.define_scalar(45.2548, dtype=DataType.Double)
    T8 = fd.ops.mul(T6, S7)
    T9 = fd.ops.cast(T8, dtype=DataType.BFloat16)
    fd.add_output(T9)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048), dtype=torch.int64, device='cuda:0', low=0, high=8192),
    torch.testing.make_tensor((8192, 2048), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
