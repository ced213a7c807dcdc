"""Random fusions for hypothesis-driven tests: a seed drawn by hypothesis, the fusion built by
``fusecli.bisect.random_fusion.fuzz_fusion`` (the one generator; hypothesis shrinks the seed
and the op budget, and prints the seed that fails)."""

from __future__ import annotations

from hypothesis import strategies as st

from fusecli.bisect.random_fusion import fuzz_fusion


@st.composite
def random_fusion(draw, max_steps: int = 12):
    """Returns (FusionDefinition, inputs)."""
    seed = draw(st.integers(0, 2**31 - 1))
    steps = draw(st.integers(1, max_steps))
    loaded = fuzz_fusion(seed, max_ops=steps).loaded
    return loaded.fd, loaded.inputs
