# fuzz seed 700059
# run it: fusecli run fuzz_700059.py
# fusecli: fuzz_700059, converted from fuzz_700059.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id59(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, 1, 1], contiguity=[None, None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 0, 2, 1])
    T1 = fd.define_tensor(shape=[1, -1, 1, -1], contiguity=[None, True, None, False], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, -1, 1, -1], contiguity=[None, True, None, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    S3 = fd.define_scalar(None, dtype=DataType.Double)
    S4 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T5 = fd.ops.gt(T1, S4)
    T6 = fd.ops.where(T5, T1, T1)
    T7 = fd.ops.ceil(T2)
    fd.add_output(T7)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id59(fd)

inputs = [
    torch.tensor([0.19206278026103973, -0.5828745365142822], dtype=torch.float32).to('cuda:0').as_strided((1, 2, 1, 1), (2, 1, 2, 2)),
    torch.tensor([
        -0.3855920732021332, 0.072273850440979, -1.1411352157592773, 0.7550662159919739,
        -1.2442028522491455, 0.14986401796340942, 0.8457150459289551, 1.086870789527893,
        -0.5935525894165039, 0.9225542545318604, 0.33757898211479187, -0.8293201327323914,
        1.2613259553909302, -0.41505682468414307, 0.5420214533805847
    ], dtype=torch.float32).to('cuda:0').as_strided((1, 2, 1, 4), (16, 8, 8, 2)),
    torch.tensor([
        0.08984375, 0.379150390625, 1.1025390625, 1.4287109375, -0.68505859375, 0.17724609375,
        -0.7099609375, 0.3525390625
    ], dtype=torch.float16).to('cuda:0').as_strided((1, 2, 1, 4), (8, 4, 4, 1)),
    0.500000,
]
fd.execute(inputs)
