"""Random fusions for property tests: built through the frontend from a hypothesis draw.

A fusion is a sequence of steps over a pool of tensors that all broadcast to one shape:
unary and binary ops, casts, reductions (kept broadcastable with keepdim), where and
segment_set hints. Inputs are float32 or bfloat16, contiguous or transposed.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from fusecli.frontend import DataType, FusionDefinition

UNARY = ["exp", "tanh", "neg", "abs", "sigmoid", "relu", "sin", "log1p", "floor"]
BINARY = ["add", "sub", "mul", "maximum", "minimum", "div"]
FLOAT_DTYPES = [(DataType.Float, torch.float32), (DataType.BFloat16, torch.bfloat16)]


@st.composite
def random_fusion(draw, max_steps: int = 12):
    """Returns (FusionDefinition, inputs)."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    input_count = draw(st.integers(1, 3))
    specs = []
    for _ in range(input_count):
        dtype, torch_dtype = draw(st.sampled_from(FLOAT_DTYPES))
        transposed = rank >= 2 and draw(st.booleans())
        specs.append((dtype, torch_dtype, transposed))
    steps = draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 50), st.integers(0, 50)),
                          min_size=1, max_size=max_steps))
    outputs = draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))

    generator = torch.Generator().manual_seed(seed)
    inputs = []
    with FusionDefinition() as fd:
        pool = []
        for dtype, torch_dtype, transposed in specs:
            if transposed:
                base = torch.randn(tuple(reversed(shape)), generator=generator)
                value = base.to(torch_dtype).transpose(0, rank - 1)
            else:
                value = torch.randn(shape, generator=generator).to(torch_dtype)
            inputs.append(value)
            pool.append(
                fd.define_tensor(
                    sizes=list(value.shape), strides=list(value.stride()), dtype=dtype
                )
            )
        for kind, a, b in steps:
            x, y = pool[a % len(pool)], pool[b % len(pool)]
            pool.append(_step(fd, kind, x, y, a, rank))
        for index in range(outputs):
            fd.add_output(pool[-1 - index % len(pool)])
    return fd, inputs


def _step(fd, kind: int, x, y, choice: int, rank: int):
    if kind <= 2:
        return getattr(fd.ops, UNARY[choice % len(UNARY)])(x)
    if kind <= 5:
        return getattr(fd.ops, BINARY[choice % len(BINARY)])(x, y)
    if kind == 6:
        dtype = DataType.BFloat16 if choice % 2 else DataType.Float
        return fd.ops.cast(x, dtype=dtype)
    if kind == 7:
        op = ("sum", "max", "min")[choice % 3]
        return getattr(fd.ops, op)(x, dims=[choice % rank], keepdim=True)
    if kind == 8:
        condition = fd.ops.gt(x, y)
        return fd.ops.where(condition, x, y)
    return fd.ops.segment_set(x)
