import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 64, 256], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[384, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[384, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[256, 384], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[256], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.ops.linear(T0, T1)
    T6 = fd.ops.linear(T0, T2)
    T7 = fd.ops.cast(T5, dtype=DataType.Float)
    T8 = fd.ops.silu(T7)
    T9 = fd.ops.cast(T6, dtype=DataType.Float)
    T10 = fd.ops.mul(T8, T9)
    T11 = fd.ops.cast(T10, dtype=DataType.BFloat16)
    T12 = fd.ops.linear(T11, T3, T4)
    fd.add_output(T12)
    fd.add_output(T11)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 64, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((384, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((384, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((256, 384), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((256,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
