# fuzz seed 62
# run it: fusecli run fuzz_62.py
# fusecli: fuzz_62, converted from fuzz_62.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id62(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, -1, 1, -1], contiguity=[None, True, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.ops.min(T1, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id62(fd)

inputs = [
    torch.tensor([1.0533088445663452, 1.1166934967041016, 0.25503015518188477], dtype=torch.float32).to('cuda:0').as_strided((1, 1, 1, 3), (3, 3, 3, 1)),
    torch.tensor([
        -1.4296875, 1.8984375, -0.205078125, 0.8671875, -1.796875, -0.359375, 0.047119140625, 0.828125,
        -0.056640625, -0.875, 0.65625, -0.25390625, 0.40625, -0.28515625, 0.423828125, -1.0, 0.6015625,
        -0.90234375
    ], dtype=torch.bfloat16).to('cuda:0').as_strided((1, 6, 1, 3), (18, 3, 3, 1)),
]
fd.execute(inputs)
