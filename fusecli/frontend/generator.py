"""Where unseeded random ops draw: torch's CUDA generator, as nvFuser reads it.

nvFuser's ``uniform``, ``normal``, ``rand_like`` and ``randn_like`` without ``rng_seed`` take,
at each kernel launch, the CUDA generator's seed and its Philox offset divided by 4; the k-th
such op draws at that offset plus k, and the generator moves on by 4 per op (``csrc/rng.cpp``,
Note [Divide offset by 4]). So after ``torch.manual_seed(s)``, the i-th execution of a fusion
with one random op gives what the op seeded explicitly with ``(s, i)`` gives, in any process.

``fd.execute`` does the same (``seeded_variant``): it runs the fusion with each unseeded random
op seeded from inputs of its own, the generator's seed and consecutive offsets. The generator
is torch's CUDA one where fusecli runs on a GPU; on the CPU (CUDA mapped to the CPU, or no
CUDA) it is ``HOST``, which stands in for it: torch's default CUDA seed, or the one
``torch.manual_seed`` gave last (the mapping reports each call, ``fusecli.load.devices``;
elsewhere a change of ``torch.initial_seed()`` says one happened), and the offset from 0 since
then. ``get_state`` and ``set_state`` are its ``torch.cuda.get_rng_state`` and
``set_rng_state``: 16 bytes, seed then offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fusecli.frontend import session
from fusecli.ir import nodes
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpKind

# The seed torch's CUDA generator starts from in every process (``default_rng_seed_val``).
DEFAULT_SEED = 67280421310721


def _torch_initial_seed() -> int:
    import torch

    return torch.initial_seed()


@dataclass(slots=True)
class HostGenerator:
    """The CUDA generator's Philox state, kept on the host. ``_seen``: torch's CPU seed when
    last looked at; a new one means ``torch.manual_seed`` ran where nobody reported it."""

    seed: int = DEFAULT_SEED
    offset: int = 0
    _seen: int = field(default_factory=_torch_initial_seed)

    def manual_seed(self, seed: int) -> None:
        self.seed, self.offset = int(seed) & (2**64 - 1), 0
        self._seen = _torch_initial_seed()

    def reserve(self, increment: int) -> tuple[int, int]:
        """(seed, offset) for a launch, the offset then moved on by ``increment``."""
        initial = _torch_initial_seed()
        if initial != self._seen:
            self.manual_seed(initial)
        offset, self.offset = self.offset, self.offset + increment
        return self.seed, offset

    def get_state(self) -> Any:
        import torch

        raw = b"".join(w.to_bytes(8, "little") for w in (self.seed, self.offset))
        return torch.tensor(list(raw), dtype=torch.uint8)

    def set_state(self, state: Any) -> None:
        raw = bytes(state.tolist())
        self.seed = int.from_bytes(raw[:8], "little")
        self.offset = int.from_bytes(raw[8:16], "little")
        self._seen = _torch_initial_seed()


HOST = HostGenerator()


def reserve(increment: int) -> tuple[int, int]:
    """The CUDA generator's (seed, Philox offset) for a launch, moved on by ``increment``."""
    if session.cpu_tensors_allowed():
        return HOST.reserve(increment)
    import torch

    generator = torch.cuda.default_generators[torch.cuda.current_device()]
    offset = generator.get_offset()
    generator.set_offset(offset + increment)
    return generator.initial_seed(), offset


@dataclass(frozen=True, slots=True)
class SeededVariant:
    """A fusion whose unseeded random ops read their seed and offsets from extra inputs."""

    fusion: nodes.Fusion
    random_ops: int

    def inputs(self, inputs: list[Any]) -> list[Any]:
        """``inputs``, then the generator's seed and each random op's offset, the generator
        moved on past them (4 per op, as nvFuser's)."""
        seed, offset = reserve(4 * self.random_ops)
        seed = seed - 2**64 if seed >= 2**63 else seed  # its 64 bits, as an Int (int64) input
        return [*inputs, seed, *(offset // 4 + k for k in range(self.random_ops))]


def seeded_variant(fusion: nodes.Fusion) -> SeededVariant | None:
    """``fusion`` with its unseeded random ops seeded from new inputs; None without any."""
    variant = fusion.memo.get("seeded_variant", False)
    if variant is False:
        variant = fusion.memo["seeded_variant"] = _seeded(fusion)
    return variant


def _seeded(fusion: nodes.Fusion) -> SeededVariant | None:
    unseeded = [e for e in fusion.exprs
                if e.op.kind is OpKind.RANDOM and not e.attr("seeded", False)]
    if not unseeded:
        return None
    seed = nodes.Scalar(DataType.Int)
    offsets = {e.uid: nodes.Scalar(DataType.Int) for e in unseeded}
    exprs = tuple(
        nodes.Expr(e.op, (*e.inputs, seed, offsets[e.uid]), e.outputs,
                   {**e.attrs, "seeded": True})
        if e.uid in offsets else e
        for e in fusion.exprs
    )
    # a new seed and new offsets every call: they feed no size, so the warm path binds them
    # and does not key on their values (runtime.cache.value_free_scalars)
    variant = nodes.Fusion((*fusion.inputs, seed, *offsets.values()), fusion.outputs, exprs)
    return SeededVariant(variant, len(unseeded))
