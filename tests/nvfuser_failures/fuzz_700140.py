# fuzz seed 700140
# run it: fusecli run fuzz_700140.py
# fusecli: fuzz_700140, converted from fuzz_700140.py
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id140(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Double, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.ops.abs(T2)
    T4 = fd.ops.reciprocal(T3)
    T17 = fd.ops.slice(T0, start_indices=[0, 3, 0], end_indices=[1, 3, 0], strides=[1, 1, 1], manual_normalization=0)
    T18 = fd.ops.set(T4)
    T24 = fd.ops.reshape(T4, new_shape=[1, 3, -1, 1])
    T25 = fd.ops.sigmoid(T18)
    T26 = fd.ops.cat([T2, T2], dim=1, manual_padding=0)
    S27 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T28 = fd.ops.gt(T26, S27)
    T29 = fd.ops.where(T28, T26, T26)
    T30 = fd.ops.cast(T2, dtype=DataType.Double)
    T36 = fd.ops.broadcast_in_dim(T1, shape=[1, 3, 2, 1], broadcast_dims=[0, 1, 3])
    S37 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T38 = fd.ops.lerp(T29, T29, S37)
    T39 = fd.ops.add(T36, T36)
    T40 = fd.ops.atan(T36)
    T41 = fd.ops.asinh(T38)
    T42 = fd.ops.squeeze(T30, dims=[0], squeeze_expanded=False)
    T43 = fd.ops.segment_set(T39)
    S44 = fd.define_scalar(-1.25000, dtype=DataType.Double)
    T45 = fd.ops.sub(T40, S44)
    T49 = fd.ops.pad(T42, [1, 1])
    T50 = fd.ops.relu(T30)
    T51 = fd.ops.var(T43, dims=[2, 3], correction=1, keepdim=False)
    fd.add_output(T51)

with FusionDefinition() as fd:
    nvfuser_fusion_id140(fd)

inputs = [
    torch.tensor([
        0.2297644019126892, 1.112592101097107, 0.1685994565486908, -0.9743344783782959,
        -1.516455054283142, 1.8597946166992188, 1.4832481145858765, 1.405036449432373,
        -0.8113723993301392
    ], dtype=torch.float64).to('cuda:0').as_strided((1, 3, 3), (9, 3, 1)),
    torch.tensor([-1.2054859399795532, 2.184537649154663, -2.3732433319091797], dtype=torch.float32).to('cuda:0').as_strided((1, 3, 1), (3, 1, 1)),
    torch.tensor([
        1.200281023979187, -0.12210024893283844, 0.0108223557472229, -0.19391372799873352,
        0.08226568251848221, 0.11656505614519119, -0.2819477915763855, -0.8872502446174622,
        2.179133653640747
    ], dtype=torch.float32).to('cuda:0').as_strided((1, 3, 3), (9, 3, 1)),
]
fd.execute(inputs)
