# fuzz seed 10
# run it: fusecli run fuzz_10.py
# fusecli: fuzz_10, converted from fuzz_10.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id10(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.neg(T0)
    T3 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T5 = fd.ops.linear(T1, T3, T4)
    T6 = fd.ops.cast(T2, dtype=DataType.Half)
    T14 = fd.ops.pad(T1, [1, 1, 2, 0, 0, 0])
    T15 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T16 = fd.define_tensor(shape=[5], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T17 = fd.ops.linear(T1, T15, T16)
    S18 = fd.define_scalar(3, dtype=DataType.Int)
    T19 = fd.ops.pow(T2, S18)
    T20 = fd.ops.minimum(T6, T2)
    T21 = fd.ops.mul(T20, T19)
    S22 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T23 = fd.ops.lerp(T21, T2, S22)
    T24 = fd.ops.tanh(T23)
    T25 = fd.ops.cast(T24, dtype=DataType.Half)
    T26 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    S27 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T31 = fd.ops.pad(T5, [1, 0], S27)
    T32 = fd.ops.sin(T19)
    T33 = fd.ops.cat([T31, T5], dim=2, manual_padding=0)
    T38 = fd.ops.expand(T23, shape=[4, 3, 4])
    fd.add_output(T38)
    fd.add_output(T33)
    fd.add_output(T26)

with FusionDefinition() as fd:
    nvfuser_fusion_id10(fd)

inputs = [
    torch.tensor([-0.6015625, -1.015625, -0.302734375], dtype=torch.bfloat16).to('cuda:0').as_strided((1, 3, 1), (3, 1, 1)),
    torch.tensor([-1.2276864051818848, 0.9198282361030579, -0.34846940636634827], dtype=torch.float32).to('cuda:0').as_strided((3, 1, 1), (1, 1, 1)),
    torch.tensor([-0.8691801428794861, -0.9581712484359741], dtype=torch.float32).to('cuda:0').as_strided((2, 1), (1, 1)),
    torch.tensor([-1.1920465230941772, 1.9049955606460571], dtype=torch.float32).to('cuda:0').as_strided((2,), (1,)),
    torch.tensor([
        -0.937332272529602, -0.8464673757553101, 2.2678258419036865, 1.3614938259124756,
        0.015663782134652138
    ], dtype=torch.float32).to('cuda:0').as_strided((5, 1), (1, 1)),
    torch.tensor([
        1.0990113019943237, 0.9536946415901184, 1.4010634422302246, -0.8805464506149292,
        -0.6516992449760437
    ], dtype=torch.float32).to('cuda:0').as_strided((5,), (1,)),
]
fd.execute(inputs)
