# In the style of 2023 repros: a shape given at execute through define_vector(n).
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1, -1], contiguous=[True, True, True], dtype=DataType.Float)
    V1 = fd.define_vector(2)
    T2 = fd.ops.reshape(T0, V1)
    T3 = fd.ops.relu(T2)
    T4 = fd.ops.sum(T3, [1], True)
    fd.add_output(T4)

with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [torch.randn(8, 16, 32, device='cuda'), [128, 32]]
fd.execute(inputs)
