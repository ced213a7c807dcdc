"""fusecli's random stream: what ``uniform``, ``normal``, ``rand_like``, ``randn_like`` draw.

It is nvFuser's Philox stream (``runtime/random_numbers.cu``, ``device_lower/pass/rng.cpp``).
Element ``i`` of a random op's output, ``i`` its row-major logical linear index, takes
``multiple`` = 2 elements per Philox call for Double and 4 otherwise: subsequence ``i //
multiple``, component ``c = i % multiple``, and the words ``r = philox4x32_10(seed, subsequence,
offset)`` (key: seed's low and high 32 bits; counter: offset low, offset high, subsequence low,
subsequence high; ten rounds, multipliers 0xD2511F53 and 0xCD9E8D57, key increments 0x9E3779B9
and 0xBB67AE85). From the words:

- uniform, float: ``u = r[c] * 2**-32 + 2**-33`` in float, 0 where that is 1; the value is
  ``fmaf(to - from, u, from)`` (nvFuser compiles with ``--fmad=true``: ``from + range * u`` is
  one fused multiply-add). Half and bfloat16: that value without the 1 -> 0 step, rounded, and
  ``from`` where it rounds to ``to``. Double: ``u`` from 53 bits, ``r[2c] ^ (r[2c+1] << 21)``,
  times 2**-53 plus 2**-54, 0 where that is 1; ``fma(to - from, u, from)``.
- normal (Box-Muller), float: ``u`` and ``v`` the float uniforms of ``r[c // 2 * 2]`` and
  ``r[c // 2 * 2 + 1]``, ``sqrt(-2 log u) * (sin if c is even else cos)(v * 6.2831855f)``, then
  ``fmaf(n, std, mean)``; half and bfloat16 round that. Double: ``u`` from ``r[0], r[1]``, ``v``
  from ``r[2], r[3]`` times 2 pi, sin for even ``c``, cos for odd.

Seeds and offsets are what they are in nvFuser: ``rng_seed`` and ``rng_offset`` where the
definition gives them; else fusecli's own choice, the execution's seed and the expr's position
among the fusion's random exprs (deterministic per call; nvFuser takes both from its generator).

``random_tensor`` computes this with torch integer ops on the request's device (uint32 products
from 16-bit halves in int64), so the reference, ATen and sdpfa's dropout share it, and
generated kernels compute the same numbers in-kernel (``fusecli.codegen.prelude``). Uniform
draws are bit-exact with nvFuser's for an explicit seed and offset (the fused multiply-adds
emulated exactly); normals agree to a few ulps: the logarithm, sine and cosine here are the
float64 functions rounded to the output's precision, nvFuser's CUDA's ``logf``/``sinf``/``cosf``.
Other floating types (float8) are drawn as Float and cast; nvFuser has no stream for them.
"""

from __future__ import annotations

import math
from typing import Any

_MASK32 = 0xFFFFFFFF
_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_TWO_PI_FLOAT = 6.2831854820251465  # 6.2831855f
# Philox calls per pass: bounds the int64 temporaries (32 MiB each on a GPU); on the CPU, small
# enough for the cache and for torch to keep each op on one thread (faster than splitting it)
_CHUNK = {"cpu": 1 << 13}
_DEVICE_CHUNK = 1 << 22


def random_tensor(
    kind: str,
    shape: tuple[int, ...],
    dtype: Any,
    first: float,
    second: float,
    seed: int,
    offset: int,
    device: Any = "cpu",
) -> Any:
    """``kind`` is "uniform" (first=low, second=high) or "normal" (first=mean, second=std)."""
    import torch

    if kind not in ("uniform", "normal"):
        raise ValueError(f"unknown random distribution {kind!r}")
    draw = dtype if dtype in (torch.float64, torch.float16, torch.bfloat16) else torch.float32
    multiple = 2 if draw is torch.float64 else 4
    numel = math.prod(shape)
    flat = torch.empty(numel, dtype=draw, device=device)
    calls = -(-numel // multiple)
    chunk = _CHUNK.get(flat.device.type, _DEVICE_CHUNK)
    for start in range(0, calls, chunk):
        stop = min(calls, start + chunk)
        subsequence = torch.arange(start, stop, dtype=torch.int64, device=flat.device)
        words = philox(seed, subsequence, offset)
        values = _DRAWS[kind, multiple](words, draw, float(first), float(second))
        flat[start * multiple:stop * multiple] = values[: min(numel, stop * multiple)
                                                        - start * multiple]
    return flat.view(shape).to(dtype)


def philox(seed: int, subsequence: Any, offset: int) -> Any:
    """Philox4x32-10 of ``subsequence`` (an int64 tensor) under ``seed`` at ``offset``: an int64
    tensor [n, 4] of the four 32-bit output words."""
    import torch

    seed, offset = int(seed) & (2**64 - 1), int(offset) & (2**64 - 1)
    keys = [seed & _MASK32, seed >> 32]
    counter = [
        torch.full_like(subsequence, offset & _MASK32),
        torch.full_like(subsequence, offset >> 32),
        subsequence & _MASK32,
        (subsequence >> 32) & _MASK32,
    ]
    for _ in range(10):
        high0, low0 = _mulhilo(_MULTIPLIERS[0], counter[0])
        high1, low1 = _mulhilo(_MULTIPLIERS[1], counter[2])
        counter = [high1 ^ counter[1] ^ keys[0], low1, high0 ^ counter[3] ^ keys[1], low0]
        keys = [(key + step) & _MASK32 for key, step in zip(keys, _KEY_STEPS)]
    return torch.stack(counter, dim=1)


def _mulhilo(multiplier: int, word: Any) -> tuple[Any, Any]:
    """The high and low 32 bits of ``multiplier * word`` (both below 2**32), in int64 without
    overflow: the product of each 16-bit half of ``word`` stays below 2**48."""
    low_part = multiplier * (word & 0xFFFF)
    high_part = multiplier * (word >> 16)
    below = ((high_part & 0xFFFF) << 16) + low_part  # the product less (high_part >> 16) << 32
    return (high_part >> 16) + (below >> 32), below & _MASK32


# -- from words to values -----------------------------------------------------------------------


def _raw_float(words: Any) -> Any:
    """``word * 2**-32 + 2**-33`` in float: in (0, 1], exact but for the rounding of ``word``."""
    return words.float() * 2.0**-32 + 2.0**-33


def _uniformf(words: Any) -> Any:
    import torch

    raw = _raw_float(words)
    return torch.where(raw == 1.0, 0.0, raw)


def _uniform_double(low: Any, high: Any) -> Any:
    import torch

    raw = (low ^ (high << 21)).double() * 2.0**-53 + 2.0**-54
    return torch.where(raw == 1.0, 0.0, raw)


def _uniform4(words: Any, dtype: Any, low: float, high: float) -> Any:
    import torch

    flat = words.reshape(-1)
    low32, high32 = _f32(low, flat.device), _f32(high, flat.device)
    if dtype is torch.float32:
        return fma_float(high32 - low32, _uniformf(flat), low32)
    values = fma_float(high32 - low32, _raw_float(flat), low32).to(dtype)
    return torch.where(values == high32.to(dtype), low32.to(dtype), values)


def _uniform2(words: Any, dtype: Any, low: float, high: float) -> Any:
    pairs = words.reshape(-1, 2)
    u = _uniform_double(pairs[:, 0], pairs[:, 1])
    return fma_double(high - low, u, low)


def _normal4(words: Any, dtype: Any, mean: float, std: float) -> Any:
    import torch

    u, v = _uniformf(words[:, 0::2]).double(), _uniformf(words[:, 1::2]).double()
    angle = (v * _TWO_PI_FLOAT).float().double()
    radius = (-2.0 * torch.log(u).float().double()).sqrt().float().double()
    pair = torch.stack([torch.sin(angle).float(), torch.cos(angle).float()], dim=-1)
    normal = (radius.unsqueeze(-1) * pair.double()).float().reshape(-1)  # sin, cos, sin, cos
    device = normal.device
    return fma_float(normal, _f32(std, device), _f32(mean, device)).to(dtype)


def _normal2(words: Any, dtype: Any, mean: float, std: float) -> Any:
    import torch

    u = _uniform_double(words[:, 0], words[:, 1])
    angle = _uniform_double(words[:, 2], words[:, 3]) * 6.2831853071795860
    radius = torch.sqrt(-2.0 * torch.log(u))
    normal = (radius.unsqueeze(-1) * torch.stack([angle.sin(), angle.cos()], dim=-1))
    return fma_double(normal.reshape(-1), std, mean)


_DRAWS = {
    ("uniform", 4): _uniform4,
    ("uniform", 2): _uniform2,
    ("normal", 4): _normal4,
    ("normal", 2): _normal2,
}


# -- fused multiply-add, rounded once -----------------------------------------------------------


def _f32(value: float, device: Any) -> Any:
    import torch

    return torch.tensor(value, dtype=torch.float32, device=device)


def fma_float(a: Any, b: Any, c: Any) -> Any:
    """``fmaf(a, b, c)`` of float32 tensors: ``a * b`` is exact in float64, and its sum with
    ``c`` rounded to odd in float64 rounds to float32 as the exact sum does (53 >= 24 + 2)."""
    return _sum_to_odd(a.double() * b.double(), c.double()).float()


def fma_double(a: Any, b: Any, c: Any) -> Any:
    """``fma(a, b, c)`` in float64 (Boldo and Melquiond's emulation through rounding to odd):
    ``a * b = uh + ul`` and ``c + uh = th + tl`` exactly, then ``th + odd(tl + ul)``."""
    import torch

    device = next(x.device for x in (a, b, c) if isinstance(x, torch.Tensor))
    a, b, c = (torch.as_tensor(x, dtype=torch.float64, device=device) for x in (a, b, c))
    high, low = _two_product(a, b)
    total, error = _two_sum(c, high)
    return total + _sum_to_odd(error, low)


def _two_sum(x: Any, y: Any) -> tuple[Any, Any]:
    """``s = x + y`` rounded, and the error: ``x + y == s + e`` exactly (Knuth)."""
    s = x + y
    virtual = s - x
    return s, (x - (s - virtual)) + (y - virtual)


def _two_product(x: Any, y: Any) -> tuple[Any, Any]:
    """``p = x * y`` rounded, and the error: ``x * y == p + e`` exactly (Dekker, Veltkamp's
    split; magnitudes far from overflow and underflow, as draws and their ranges are)."""
    p = x * y
    x_high, x_low = _split(x)
    y_high, y_low = _split(y)
    error = ((x_high * y_high - p) + x_high * y_low + x_low * y_high) + x_low * y_low
    return p, error


def _split(x: Any) -> tuple[Any, Any]:
    scaled = x * 134217729.0  # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def _sum_to_odd(x: Any, y: Any) -> Any:
    """``x + y`` in float64 rounded to odd: where inexact, the neighbour whose last bit is 1."""
    import torch

    s, error = _two_sum(x, y)
    even = (s.view(torch.int64) & 1) == 0
    toward = torch.copysign(torch.full_like(s, math.inf), error)
    return torch.where((error != 0) & even & s.isfinite(), torch.nextafter(s, toward), s)
