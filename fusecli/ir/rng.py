"""fusecli's random stream: what ``uniform``, ``normal``, ``rand_like``, ``randn_like`` draw.

nvFuser draws from Philox with a (seed, offset) pair; fusecli defines its own deterministic stream
so that every executor and the reference produce the same numbers for the same (seed, offset):
torch's CPU generator seeded with ``seed * 1_000_003 + offset``, drawn in float64 on the CPU,
scaled, cast and moved to the device. Bit-exact agreement with nvFuser's Philox is not a goal.
"""

from __future__ import annotations

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

    generator = torch.Generator(device="cpu").manual_seed(int(seed) * 1_000_003 + int(offset))
    if kind == "uniform":
        values = torch.rand(shape, generator=generator, dtype=torch.float64)
        values = values * (second - first) + first
    elif kind == "normal":
        values = torch.randn(shape, generator=generator, dtype=torch.float64)
        values = values * second + first
    else:
        raise ValueError(f"unknown random distribution {kind!r}")
    return values.to(dtype=dtype).to(device)
