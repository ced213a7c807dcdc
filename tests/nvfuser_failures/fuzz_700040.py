# fuzz seed 700040
# run it: fusecli run fuzz_700040.py
# fusecli: fuzz_700040, converted from fuzz_700040.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id40(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[3, 1], contiguity=[None, None], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.atan(T2)
    T4 = fd.ops.cast(T0, dtype=DataType.Bool)
    T5 = fd.ops.eq(T2, T4)
    T6 = fd.ops.neg(T3)
    T7 = fd.ops.mul(T6, T4)
    T8 = fd.ops.tanh(T7)
    T9 = fd.ops.bitwise_not(T5)
    T10 = fd.ops.cast(T0, dtype=DataType.Double)
    T13 = fd.ops.reshape(T8, new_shape=[3])
    T23 = fd.ops.slice(T10, start_indices=[1, 0], end_indices=[2, 1], strides=[1, 1], manual_normalization=0)
    T27 = fd.ops.expand(T23, shape=[1, 4])
    S28 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T29 = fd.ops.maximum(S28, T10)
    fd.add_output(T29)
    fd.add_output(T27)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id40(fd)

inputs = [
    torch.tensor([-2.6978156566619873, -1.4309993982315063, 0.5259029269218445], dtype=torch.float32).to('cuda:0').as_strided((3, 1), (1, 1)),
    torch.tensor([1], dtype=torch.int64).to('cuda:0').as_strided((3, 1), (0, 1)),
    torch.tensor([0.3157358467578888, 0.28968510031700134, 1.9848642349243164], dtype=torch.float32).to('cuda:0').as_strided((3, 1), (1, 1)),
]
fd.execute(inputs)
