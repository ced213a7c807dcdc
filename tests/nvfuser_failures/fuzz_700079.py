# fuzz seed 700079
# run it: fusecli run fuzz_700079.py
# fusecli: fuzz_700079, converted from fuzz_700079.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id79(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    T8 = fd.ops.reshape(T0, new_shape=[-1, 1, 3, 1])
    T9 = fd.ops.cast(T8, dtype=DataType.Float)
    T10 = fd.ops.frac(T9)
    T11 = fd.ops.mul(T1, T0)
    S12 = fd.define_scalar(2, dtype=DataType.Int)
    T13 = fd.ops.pow(T9, S12)
    T14 = fd.ops.abs(T0)
    T15 = fd.ops.reciprocal(T14)
    S16 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T17 = fd.ops.add(S16, T10)
    fd.add_output(T17)
    fd.add_output(T8)
    fd.add_output(T10)

with FusionDefinition() as fd:
    nvfuser_fusion_id79(fd)

inputs = [
    torch.tensor([-1.0980147123336792, 1.6672686338424683, 0.6748698949813843], dtype=torch.float32).to('cuda:0').as_strided((4, 1, 3), (0, 3, 1)),
    torch.tensor([
        1.2046945095062256, -0.029118336737155914, 1.004830002784729, -1.491232991218567,
        -0.522009551525116, -0.8503725528717041, -1.451473593711853, 0.5832980275154114,
        1.0860071182250977
    ], dtype=torch.float32).to('cuda:0').as_strided((4, 3, 3), (0, 3, 1)),
    -2.00000,
]
fd.execute(inputs)
