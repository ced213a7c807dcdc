"""A population of random memory-bound fusions, for ``vs_nvfuser.py --population N --seed S``.

Half the population comes from the project's random fusion generator
(``fusecli.bisect.random_fusion.fuzz_fusion``: every op family, every dtype family, transposed,
sliced and expanded input layouts, one to three outputs), the other half from templates of the
fusions LLM blocks make, with a random dtype and shape each: tanh-GELU (``pow(x, 3)``), integer
and half-integer powers, RMSNorm and LayerNorm forward, LayerNorm backward, softmax, RoPE's
rotate-half (slice, neg, cat), transpose + add, pad and cat chains, SiLU-mul in mixed dtypes,
reductions, and an output that is a view of an input next to a computed one.

Sizes are memory-bound: every large tensor holds at least ``min_elements`` (2^25) elements.
The generator draws small sizes by default; here it is given ``memory_bound_sizes`` (its own
draw of ops, dtypes and layouts runs unchanged). Members are the same for the same seed,
``min_elements`` and torch version.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from fusecli.bisect import random_fusion
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir import dtype as dt

MIN_ELEMENTS = 1 << 25
FLOAT_DTYPES = (DataType.BFloat16, DataType.Half, DataType.Float)


@dataclass
class Member:
    """One fusion of the population: its definition and its inputs (made on a device)."""

    name: str
    source: str  # "generator" or "template"
    fd: FusionDefinition
    make_inputs: Callable[[str], list[Any]]  # device -> inputs, in definition order
    summary: str  # dtypes, shapes and ops, in a line


def draw(count: int, seed: int, min_elements: int = MIN_ELEMENTS) -> list[Member]:
    """``count`` fusions: templates and generator draws taking turns, templates in order."""
    rng = random.Random(seed)
    members = []
    for index in range(count):
        if index % 2 == 0:
            name, template = TEMPLATES[(index // 2) % len(TEMPLATES)]
            members.append(_template_member(f"{index:03d} {name}", template, rng, min_elements))
        else:
            members.append(_generated_member(index, rng, min_elements))
    return members


def named(words: str, count: int, seed: int) -> list[Member]:
    """The members of ``draw(count, seed)`` whose number or name is one of the comma-separated
    ``words`` (``rms_norm,004``): what a script measuring chosen members takes."""
    wanted = set(words.split(","))
    return [member for member in draw(count, seed) if set(member.name.split(" ", 1)) & wanted]


# -- the generator, at memory-bound sizes ---------------------------------------------------------


def _generated_member(index: int, rng: random.Random, min_elements: int) -> Member:
    """The generator's fusion of the next seed whose largest input is large: it makes some
    dims of its inputs size-1 broadcasts, so a draw may be small; then it draws again."""
    for _attempt in range(50):
        seed = rng.randrange(1 << 30)
        drawn = random_fusion.fuzz_fusion(seed, max_ops=12,
                                          sizes=memory_bound_sizes(min_elements))
        inputs = drawn.loaded.inputs
        if largest_tensor(inputs) >= min_elements:
            break
    ops = ", ".join(drawn.ops[:8]) + (", ..." if len(drawn.ops) > 8 else "")
    return Member(
        f"{index:03d} fuzz_{seed}", "generator", drawn.loaded.fd,
        lambda device: [_moved(value, device) for value in inputs],
        f"{_describe(inputs)}; {ops}",
    )


def memory_bound_sizes(min_elements: int) -> Callable[[random.Random], tuple[int, ...]]:
    """A draw of the generator's base sizes: rank 2 to 4, at least ``min_elements`` elements,
    each dimension at most 8192 (its reshapes factor them one by one)."""

    def sizes(rng: random.Random) -> tuple[int, ...]:
        rank = rng.choice((2, 2, 3, 3, 4))
        inner = rng.choice((1024, 2048, 4096))
        outer = [rng.choice((2, 4, 8, 16)) for _ in range(rank - 2)]
        rows = math.ceil(min_elements / (inner * math.prod(outer)))
        return (*outer, rows, inner)

    return sizes


def _moved(value: Any, device: str) -> Any:
    """``value`` on ``device`` with its strides (a stride-0 expansion stays one)."""
    if not isinstance(value, torch.Tensor) or device == "cpu":
        return value
    return random_fusion._on_device(value, device)


# -- templates ----------------------------------------------------------------------------------

Template = Callable[[FusionDefinition, random.Random, int], Callable[[str], list[Any]]]


def _template_member(name: str, template: Template, rng: random.Random,
                     min_elements: int) -> Member:
    fd = FusionDefinition()
    with fd:
        make_inputs = template(fd, rng, min_elements)
    ops = sorted({expr.op.value for expr in fd.fusion.exprs})
    shapes = [(dt.from_torch(x.dtype).name, tuple(x.shape)) for x in make_inputs("meta")
              if isinstance(x, torch.Tensor)]
    return Member(name, "template", fd, make_inputs,
                  f"{', '.join(f'{d}{list(s)}' for d, s in shapes)}; {', '.join(ops)}")


def _rows_cols(rng: random.Random, min_elements: int) -> tuple[int, int]:
    cols = rng.choice((1024, 2048, 4096, 8192))
    return math.ceil(min_elements / cols), cols


def _inputs(*specs: tuple[tuple[int, ...], DataType]) -> Callable[[str], list[Any]]:
    """Random tensors of these shapes and dtypes, made on the device asked for."""

    def make(device: str) -> list[Any]:
        generator = None if device == "meta" else torch.Generator(device).manual_seed(0)
        return [torch.randn(shape, dtype=dt.to_torch(dtype), device=device,
                            generator=generator) for shape, dtype in specs]

    return make


def _define(fd: FusionDefinition, shape: tuple[int, ...], dtype: DataType):
    return fd.define_tensor(shape=[-1] * len(shape), contiguity=[True] * len(shape),
                            dtype=dtype)


def _double(fd: FusionDefinition, value: float):
    return fd.define_scalar(value, dtype=DataType.Double)


def _to_float(fd: FusionDefinition, x):
    return fd.ops.cast(x, DataType.Float) if x.dtype is not DataType.Float else x


def _from_float(fd: FusionDefinition, x, dtype: DataType):
    return fd.ops.cast(x, dtype) if dtype is not DataType.Float else x


def gelu_tanh(fd, rng, min_elements):
    dtype, shape = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _to_float(fd, _define(fd, shape, dtype))
    cube = fd.ops.pow(x, _double(fd, 3.0))
    inner = fd.ops.mul(fd.ops.add(x, fd.ops.mul(cube, _double(fd, 0.044715))),
                       _double(fd, math.sqrt(2 / math.pi)))
    y = fd.ops.mul(fd.ops.mul(x, _double(fd, 0.5)),
                   fd.ops.add(fd.ops.tanh(inner), _double(fd, 1.0)))
    fd.add_output(_from_float(fd, y, dtype))
    return _inputs((shape, dtype))


def powers(fd, rng, min_elements):
    """x^2 / 2 + x^3 and (x^2 + 1)^-0.5 * |x|^0.5: two outputs of integer and half powers."""
    dtype, shape = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _to_float(fd, _define(fd, shape, dtype))
    square = fd.ops.pow(x, _double(fd, 2.0))
    fd.add_output(_from_float(fd, fd.ops.add(fd.ops.mul(square, _double(fd, 0.5)),
                                             fd.ops.pow(x, _double(fd, 3.0))), dtype))
    scale = fd.ops.pow(fd.ops.add(square, _double(fd, 1.0)), _double(fd, -0.5))
    root = fd.ops.pow(fd.ops.abs(x), _double(fd, 0.5))
    fd.add_output(_from_float(fd, fd.ops.mul(scale, root), dtype))
    return _inputs((shape, dtype))


def _row_stats(fd, x, rows: int, cols: int, square: bool):
    """mean(x) (or mean(x^2) when ``square``) over each row, broadcast back to [rows, cols]."""
    total = fd.ops.sum(fd.ops.mul(x, x) if square else x, dims=[1], keepdim=False)
    mean = fd.ops.div(total, _double(fd, float(cols)))
    return mean, fd.ops.broadcast_in_dim(mean, shape=[rows, cols], broadcast_dims=[0])


def rms_norm(fd, rng, min_elements):
    dtype, (rows, cols) = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _to_float(fd, _define(fd, (rows, cols), dtype))
    w = _define(fd, (cols,), dtype)
    _, mean_square = _row_stats(fd, x, rows, cols, square=True)
    rstd = fd.ops.rsqrt(fd.ops.add(mean_square, _double(fd, 1e-6)))
    weight = _to_float(fd, fd.ops.broadcast_in_dim(w, shape=[rows, cols], broadcast_dims=[1]))
    fd.add_output(_from_float(fd, fd.ops.mul(fd.ops.mul(x, rstd), weight), dtype))
    fd.add_output(rstd)
    return _inputs(((rows, cols), dtype), ((cols,), dtype))


def layer_norm(fd, rng, min_elements):
    dtype, (rows, cols) = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _to_float(fd, _define(fd, (rows, cols), dtype))
    w, b = _define(fd, (cols,), dtype), _define(fd, (cols,), dtype)
    var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
    full = [rows, cols]
    centered = fd.ops.sub(x, fd.ops.broadcast_in_dim(mean, shape=full, broadcast_dims=[0]))
    rstd = fd.ops.rsqrt(fd.ops.add(var, _double(fd, 1e-5)))
    y = fd.ops.mul(centered, fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0]))
    weight, bias = (_to_float(fd, fd.ops.broadcast_in_dim(t, shape=full, broadcast_dims=[1]))
                    for t in (w, b))
    fd.add_output(_from_float(fd, fd.ops.add(fd.ops.mul(y, weight), bias), dtype))
    fd.add_output(mean)
    fd.add_output(rstd)
    return _inputs(((rows, cols), dtype), ((cols,), dtype), ((cols,), dtype))


def layer_norm_backward(fd, rng, min_elements):
    """Thunder's LayerNorm backward: grad input (inner reduction), grad weight and grad bias
    (outer reductions): nvFuser's inner_outer_persistent."""
    dtype, (rows, cols) = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    full = [rows, cols]
    grad = _to_float(fd, _define(fd, (rows, cols), dtype))
    x = _to_float(fd, _define(fd, (rows, cols), dtype))
    mean, rstd = _define(fd, (rows,), DataType.Float), _define(fd, (rows,), DataType.Float)
    w = _to_float(fd, _define(fd, (cols,), dtype))
    rows_of = {t: fd.ops.broadcast_in_dim(t, shape=full, broadcast_dims=[0])
               for t in (mean, rstd)}
    x_hat = fd.ops.mul(fd.ops.sub(x, rows_of[mean]), rows_of[rstd])
    grad_x_hat = fd.ops.mul(grad, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]))
    _, mean_grad = _row_stats(fd, grad_x_hat, rows, cols, square=False)
    _, mean_proj = _row_stats(fd, fd.ops.mul(grad_x_hat, x_hat), rows, cols, square=False)
    grad_input = fd.ops.mul(fd.ops.sub(fd.ops.sub(grad_x_hat, mean_grad),
                                       fd.ops.mul(x_hat, mean_proj)), rows_of[rstd])
    fd.add_output(_from_float(fd, grad_input, dtype))
    fd.add_output(_from_float(fd, fd.ops.sum(fd.ops.mul(grad, x_hat), dims=[0]), dtype))
    fd.add_output(_from_float(fd, fd.ops.sum(grad, dims=[0]), dtype))
    return _inputs(((rows, cols), dtype), ((rows, cols), dtype), ((rows,), DataType.Float),
                   ((rows,), DataType.Float), ((cols,), dtype))


def softmax(fd, rng, min_elements):
    dtype, (rows, cols) = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _to_float(fd, _define(fd, (rows, cols), dtype))
    full = [rows, cols]
    top = fd.ops.broadcast_in_dim(fd.ops.max(x, dims=[1]), shape=full, broadcast_dims=[0])
    e = fd.ops.exp(fd.ops.sub(x, top))
    total = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), shape=full, broadcast_dims=[0])
    fd.add_output(_from_float(fd, fd.ops.div(e, total), dtype))
    return _inputs(((rows, cols), dtype))


def rope_rotate_half(fd, rng, min_elements):
    """q * cos + rotate_half(q) * sin, rotate_half through slice, neg and cat (HF Llama)."""
    dtype = rng.choice((DataType.BFloat16, DataType.Half))
    heads, head_dim = rng.choice(((32, 128), (8, 128), (16, 64)))
    seq = rng.choice((2048, 4096))
    batch = max(1, math.ceil(min_elements / (heads * seq * head_dim)))
    shape, half = (batch, heads, seq, head_dim), head_dim // 2
    q = _define(fd, shape, dtype)
    cos, sin = _define(fd, (seq, head_dim), dtype), _define(fd, (seq, head_dim), dtype)
    first = fd.ops.slice(q, [0, 0, 0, 0], [batch, heads, seq, half])
    second = fd.ops.slice(q, [0, 0, 0, half], [batch, heads, seq, head_dim])
    rotated = _to_float(fd, fd.ops.cat([fd.ops.neg(second), _to_float(fd, first)], dim=-1))

    def table(t):
        return _to_float(fd, fd.ops.broadcast_in_dim(t, shape=list(shape), broadcast_dims=[2, 3]))

    out = fd.ops.add(fd.ops.mul(_to_float(fd, q), table(cos)), fd.ops.mul(rotated, table(sin)))
    fd.add_output(_from_float(fd, out, dtype))
    return _inputs((shape, dtype), ((seq, head_dim), dtype), ((seq, head_dim), dtype))


def transpose_add(fd, rng, min_elements):
    dtype = rng.choice(FLOAT_DTYPES)
    size = 1 << math.ceil(math.log2(min_elements) / 2)
    a, b = _define(fd, (size, size), dtype), _define(fd, (size, size), dtype)
    total = fd.ops.add(_to_float(fd, fd.ops.permute(a, [1, 0])), _to_float(fd, b))
    fd.add_output(_from_float(fd, total, dtype))
    return _inputs(((size, size), dtype), ((size, size), dtype))


def pad_cat(fd, rng, min_elements):
    """exp(cat([pad(x), y])) and a slice of it: resize ops in a chain."""
    dtype, (rows, cols) = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x, y = _define(fd, (rows, cols - 8), dtype), _define(fd, (rows, cols), dtype)
    padded = fd.ops.pad(x, [0, 8])
    joined = fd.ops.exp(_to_float(fd, fd.ops.cat([padded, y], dim=1)))
    fd.add_output(_from_float(fd, joined, dtype))
    fd.add_output(fd.ops.slice(joined, [0, 4], [rows, cols + 4]))
    return _inputs(((rows, cols - 8), dtype), ((rows, cols), dtype))


def silu_mul_mixed(fd, rng, min_elements):
    shape = _rows_cols(rng, min_elements)
    gate, up = _define(fd, shape, DataType.BFloat16), _define(fd, shape, DataType.Float)
    g = _to_float(fd, gate)
    fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.mul(g, fd.ops.sigmoid(g)), up),
                              DataType.BFloat16))
    return _inputs((shape, DataType.BFloat16), (shape, DataType.Float))


def reductions(fd, rng, min_elements):
    dtype, (rows, cols) = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _to_float(fd, _define(fd, (rows, cols), dtype))
    fd.add_output(fd.ops.sum(x, dims=[rng.choice((0, 1))]))
    var, mean = fd.ops.var_mean(x, dims=[1], correction=1, keepdim=False)
    fd.add_output(var)
    fd.add_output(mean)
    return _inputs(((rows, cols), dtype))


def view_and_compute(fd, rng, min_elements):
    """A permuted view of the input as an output (nvFuser returns it without a copy) next to
    a computed one."""
    dtype, shape = rng.choice(FLOAT_DTYPES), _rows_cols(rng, min_elements)
    x = _define(fd, shape, dtype)
    permuted = fd.ops.permute(x, [1, 0])
    fd.add_output(permuted)
    fd.add_output(_from_float(fd, fd.ops.tanh(_to_float(fd, permuted)), dtype))
    return _inputs((shape, dtype))


TEMPLATES: tuple[tuple[str, Template], ...] = (
    ("gelu_tanh", gelu_tanh), ("powers", powers), ("rms_norm", rms_norm),
    ("layer_norm", layer_norm), ("layer_norm_backward", layer_norm_backward),
    ("softmax", softmax), ("rope_rotate_half", rope_rotate_half),
    ("transpose_add", transpose_add), ("pad_cat", pad_cat),
    ("silu_mul_mixed", silu_mul_mixed), ("reductions", reductions),
    ("view_and_compute", view_and_compute),
)


def _describe(inputs: list[Any]) -> str:
    shown = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            contiguous = "" if value.is_contiguous() else " strided"
            shown.append(f"{dt.from_torch(value.dtype).name}{list(value.shape)}{contiguous}")
        else:
            shown.append(repr(value))
    return ", ".join(shown)


def largest_tensor(inputs: list[Any]) -> int:
    return max((x.numel() for x in inputs if isinstance(x, torch.Tensor)), default=0)
