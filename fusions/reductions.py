import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4, 64, 128], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[64, 128], contiguity=[True, True], dtype=DataType.Int32, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.sum(T0, dims=[2], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.max(T0, dims=[1], keepdim=True, dtype=DataType.Null)
    T4 = fd.ops.min(T0, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.prod(T0, dims=[0], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.sum(T0, dims=[0, 1, 2], keepdim=False, dtype=DataType.Double)
    T11 = fd.ops.broadcast_in_dim(T3, shape=[4, 64, 128], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.sub(T0, T11)
    T13 = fd.ops.sum(T12, dims=[1], keepdim=True, dtype=DataType.Null)
    S14 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T15 = fd.ops.gt(T0, S14)
    T16 = fd.ops.sum(T15, dims=[1, 2], keepdim=True, dtype=DataType.Null)
    T17 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T18 = fd.ops.max(T1, dims=[0], keepdim=True, dtype=DataType.Null)
    T19 = fd.ops.min(T1, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T13)
    fd.add_output(T16)
    fd.add_output(T17)
    fd.add_output(T18)
    fd.add_output(T19)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4, 64, 128), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((64, 128), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
