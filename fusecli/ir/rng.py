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

``random_tensor`` computes this with torch integer ops on the request's device, pass after pass
of whole-tensor ops (a dozen in place per Philox round; no Python work per element), so the
reference, ATen and sdpfa's dropout share it, and generated kernels compute the same numbers
in-kernel (``fusecli.codegen.prelude``). Uniform draws are bit-exact with nvFuser's for an
explicit seed and offset (the fused multiply-adds emulated exactly); normals agree to a few
ulps: the logarithm, sine and cosine here are the float64 functions rounded to the output's
precision, nvFuser's CUDA's ``logf``/``sinf``/``cosf``.
Other floating types (float8) are drawn as Float and cast; nvFuser has no stream for them.
"""

from __future__ import annotations

import math
from typing import Any

_MASK32 = 0xFFFFFFFF
_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_TWO_PI_FLOAT = 6.2831854820251465  # 6.2831855f
# Elements drawn per pass. On the CPU, torch's grain size: every op of a pass then runs on one
# thread, in cache (splitting ops this small across threads costs more than it gains, and much
# more on a loaded machine). On a GPU, bounds the temporaries (int64 words: 32 MiB each).
_PASS = {"cpu": 1 << 15}
_DEVICE_PASS = 1 << 23


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
    chunk = _PASS.get(flat.device.type, _DEVICE_PASS) // multiple  # Philox calls per pass
    for start in range(0, calls, chunk):
        stop = min(calls, start + chunk)
        subsequence = torch.arange(start, stop, dtype=torch.int64, device=flat.device)
        words = _philox_words(seed, subsequence, offset)
        values = _DRAWS[kind, multiple](words, draw, float(first), float(second))
        flat[start * multiple:stop * multiple] = values[: min(numel, stop * multiple)
                                                        - start * multiple]
    return flat.view(shape).to(dtype)


def philox(seed: int, subsequence: Any, offset: int) -> Any:
    """Philox4x32-10 of ``subsequence`` (an int64 tensor) under ``seed`` at ``offset``: an int64
    tensor [n, 4] of the four 32-bit output words."""
    import torch

    return torch.stack(_philox_words(seed, subsequence, offset), dim=1)


def _philox_words(seed: int, subsequence: Any, offset: int) -> tuple[Any, Any, Any, Any]:
    """``philox``'s four output words, each an int64 tensor like ``subsequence``."""
    import torch

    seed, offset = int(seed) & (2**64 - 1), int(offset) & (2**64 - 1)
    key0, key1 = seed & _MASK32, seed >> 32
    word0 = torch.full_like(subsequence, offset & _MASK32)
    word1 = torch.full_like(subsequence, offset >> 32)
    word2 = subsequence & _MASK32
    word3 = (subsequence >> 32).bitwise_and_(_MASK32)
    for _ in range(10):
        # The 64-bit products of two 32-bit words wrap in int64 (two's complement, as torch's
        # integer multiply does on every device): the bits are the unsigned product's.
        product0 = word0.mul_(_MULTIPLIERS[0])
        product1 = word2.mul_(_MULTIPLIERS[1])
        word0 = _high(product1).bitwise_xor_(word1).bitwise_xor_(key0)
        word2 = _high(product0).bitwise_xor_(word3).bitwise_xor_(key1)
        word1, word3 = product1.bitwise_and_(_MASK32), product0.bitwise_and_(_MASK32)
        key0, key1 = (key0 + _KEY_STEPS[0]) & _MASK32, (key1 + _KEY_STEPS[1]) & _MASK32
    return word0, word1, word2, word3


def _high(product: Any) -> Any:
    """Bits 32 to 63 of a 64-bit product held in int64 (the shift copies the sign bit in)."""
    return (product >> 32).bitwise_and_(_MASK32)


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


def _interleaved(values: list[Any]) -> Any:
    """One tensor of ``values[0][0], values[1][0], ..., values[0][1], ...``: element ``i`` of a
    draw takes call ``i // len(values)``'s component ``i % len(values)``."""
    import torch

    return torch.stack(values, dim=1).reshape(-1)


def _uniform4(words: Any, dtype: Any, low: float, high: float) -> Any:
    import torch

    flat = _interleaved(list(words))
    low32, high32 = _f32(low, flat.device), _f32(high, flat.device)
    if dtype is torch.float32:
        return fma_float(high32 - low32, _uniformf(flat), low32)
    values = fma_float(high32 - low32, _raw_float(flat), low32).to(dtype)
    return torch.where(values == high32.to(dtype), low32.to(dtype), values)


def _uniform2(words: Any, dtype: Any, low: float, high: float) -> Any:
    word0, word1, word2, word3 = words
    u = _interleaved([_uniform_double(word0, word1), _uniform_double(word2, word3)])
    return fma_double(high - low, u, low)


def _normal4(words: Any, dtype: Any, mean: float, std: float) -> Any:
    word0, word1, word2, word3 = words
    normal = _interleaved([*_box_muller_float(word0, word1), *_box_muller_float(word2, word3)])
    device = normal.device
    return fma_float(normal, _f32(std, device), _f32(mean, device)).to(dtype)


def _box_muller_float(u_word: Any, v_word: Any) -> tuple[Any, Any]:
    """The float normals (sine, cosine) of one pair of words, each step rounded to float."""
    import torch

    u, v = _uniformf(u_word).double(), _uniformf(v_word).double()
    angle = (v * _TWO_PI_FLOAT).float().double()
    radius = (-2.0 * torch.log(u).float().double()).sqrt().float().double()
    return (radius * torch.sin(angle).float().double()).float(), (
        radius * torch.cos(angle).float().double()).float()


def _normal2(words: Any, dtype: Any, mean: float, std: float) -> Any:
    import torch

    word0, word1, word2, word3 = words
    u = _uniform_double(word0, word1)
    angle = _uniform_double(word2, word3) * 6.2831853071795860
    radius = torch.sqrt(-2.0 * torch.log(u))
    return fma_double(_interleaved([radius * angle.sin(), radius * angle.cos()]), std, mean)


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
    ``c`` rounded to odd in float64 rounds to float32 as the exact sum does (53 >= 24 + 2).

    Rounding the sum to nearest instead changes the float32 result only where the float64 sum
    lands on a float32 tie (no tie lies strictly between a value and its nearest double), or
    among float32's subnormals, whose ties sit elsewhere: only those elements, rare, take the
    rounding to odd."""
    import torch

    product, addend = a.double() * b.double(), c.double()
    total = product + addend
    tie = (total.view(torch.int64) & 0x1FFFFFFF) == 0x10000000  # half a float32 ulp, exactly
    suspects = (tie | ((total.abs() < 2.0**-126) & (total != 0))).nonzero(as_tuple=True)
    if suspects[0].numel():
        total[suspects] = _sum_to_odd(
            product.expand_as(total)[suspects], addend.expand_as(total)[suspects]
        )
    return total.float()


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
