import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 2048, 6144], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T13 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[1, 2048, 4096], strides=[1, 1, 1], manual_normalization=0)
    T19 = fd.ops.reshape(T13, new_shape=[1, 2048, 32, 128])
    T20 = fd.ops.permute(T19, dims=[0, 2, 1, 3])
    T33 = fd.ops.slice(T0, start_indices=[0, 0, 4096], end_indices=[1, 2048, 5120], strides=[1, 1, 1], manual_normalization=0)
    T39 = fd.ops.reshape(T33, new_shape=[1, 2048, 8, 128])
    T40 = fd.ops.permute(T39, dims=[0, 2, 1, 3])
    T53 = fd.ops.slice(T0, start_indices=[0, 0, 5120], end_indices=[1, 2048, 6144], strides=[1, 1, 1], manual_normalization=0)
    T59 = fd.ops.reshape(T53, new_shape=[1, 2048, 8, 128])
    T60 = fd.ops.permute(T59, dims=[0, 2, 1, 3])
    fd.add_output(T20)
    fd.add_output(T40)
    fd.add_output(T60)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2048, 6144), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
