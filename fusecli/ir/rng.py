"""fusecli's random stream: what ``uniform``, ``normal``, ``rand_like``, ``randn_like`` draw.

nvFuser draws from Philox with a (seed, offset) pair; fusecli defines its own deterministic stream
so that every executor and the reference produce the same numbers for the same (seed, offset):
torch's CPU generator seeded with ``(seed * 1_000_003 + offset) mod 2**63``, drawn in float64 on
the CPU, scaled, cast and moved to the device. Bit-exact agreement with nvFuser's Philox is not a
goal.
"""

from __future__ import annotations

import math
from typing import Any


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

    # Folded into torch's seed range: nvFuser's seeds are any int64 (the same stream as before
    # for every seed whose product fits).
    generator = torch.Generator(device="cpu").manual_seed(
        (int(seed) * 1_000_003 + int(offset)) % 2**63
    )
    if kind == "uniform":
        values = torch.rand(shape, generator=generator, dtype=torch.float64)
        return _uniform_in(values, dtype, first, second).to(device)
    if kind == "normal":
        values = torch.randn(shape, generator=generator, dtype=torch.float64)
        values = values * second + first
        return values.to(dtype=dtype).to(device)
    raise ValueError(f"unknown random distribution {kind!r}")


def _uniform_in(draws: Any, dtype: Any, low: float, high: float) -> Any:
    """Uniform draws in [0, 1) as values of ``dtype`` in [low, high), as torch.rand makes them.

    torch draws a float type's ``digits`` random bits (bfloat16 8, half 11, float 24): ``k /
    2**digits``, so 1.0 never comes out. Rounding a float64 draw to bfloat16 instead returns
    1.0 for one draw in 512 (nvFuser bug #1653). The scaled value is rounded to ``dtype`` and,
    should that rounding reach ``high``, held at the largest value below it.
    """
    import torch

    if not dtype.is_floating_point:
        return (draws * (high - low) + low).to(dtype)
    digits = 1 - round(math.log2(torch.finfo(dtype).eps))  # bfloat16 8, float 24, double 53
    scale = 2.0 ** min(digits, 53)
    values = (torch.floor(draws * scale) / scale) * (high - low) + low
    values = values.to(dtype)
    if high > low:
        top = torch.tensor(high, dtype=dtype)
        below = torch.nextafter(top, torch.tensor(low, dtype=dtype)) if top.item() > low else top
        values = torch.where(values >= top, below, values)
    return values
