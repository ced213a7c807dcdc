"""Large random fusions with one planted op, to test and measure bisect on.

``random_fusion(num_ops, seed, planted="exp")`` builds a fusion of about ``num_ops`` tensor
exprs from ops that keep values bounded (so nothing overflows and a corrupted value shows up
downstream instead of being masked), with exactly one ``planted`` op somewhere in the middle:
run with ``FUSECLI_INJECT_FAULT=<planted>`` and only that op computes wrongly. Every value
feeds the single output, so the planted op's error always reaches it.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.load.model import LoadedFusion

_UNARY = ("tanh", "sin", "cos", "sigmoid", "neg")
_BINARY = ("add", "sub", "mul")


def random_fusion(
    num_ops: int = 200, seed: int = 0, planted: str = "exp", shape: tuple[int, int] = (4, 8)
) -> LoadedFusion:
    rng = random.Random(seed)
    rows, cols = shape
    fd = FusionDefinition()
    with fd:
        pool = [
            fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            for _ in range(3)
        ]
        half = fd.define_scalar(0.5, dtype=DataType.Double)
        plant_at = num_ops // 2 + rng.randint(-num_ops // 4, num_ops // 4)
        planted_done = False
        used: set[int] = set()

        def pick():
            value = rng.choice(pool[-6:]) if rng.random() < 0.8 else rng.choice(pool)
            used.add(id(value))
            return value

        def tensor_exprs() -> int:  # with the adds that will join the dangling values
            dangling = sum(1 for v in pool[3:] if id(v) not in used)
            return sum(1 for e in fd._builder.exprs if e.tensor_outputs()) + dangling - 1

        while tensor_exprs() < num_ops:
            if not planted_done and tensor_exprs() >= plant_at:
                value = getattr(fd.ops, planted)(fd.ops.tanh(pick()))
                planted_done = True
            else:
                value = _random_op(fd, rng, pick, half, rows, cols)
            pool.append(value)
        dangling = [v for v in pool[3:] if id(v) not in used]
        total = dangling[0]
        for value in dangling[1:]:
            total = fd.ops.add(total, value)
        fd.add_output(total)
    generator = torch.Generator().manual_seed(seed)
    inputs = [torch.rand(shape, generator=generator) * 2 - 1 for _ in range(3)]
    return LoadedFusion(
        path=Path(f"random_{num_ops}_{seed}.py"), name=f"random_{num_ops}_{seed}", fd=fd,
        inputs=inputs, line=None, source_kind="python",
    )


def _random_op(fd: FusionDefinition, rng: random.Random, pick, half, rows: int, cols: int):
    roll = rng.random()
    if roll < 0.45:
        return getattr(fd.ops, rng.choice(_UNARY))(pick())
    if roll < 0.85:
        return getattr(fd.ops, rng.choice(_BINARY))(pick(), pick())
    if roll < 0.93:
        return fd.ops.mul(pick(), half)
    summed = fd.ops.sum(pick(), dims=[1], keepdim=False)
    scaled = fd.ops.mul(fd.ops.tanh(summed), half)
    return fd.ops.broadcast_in_dim(scaled, shape=[rows, cols], broadcast_dims=[0])


def write_random_fusion(
    path: Path, num_ops: int = 200, seed: int = 0, planted: str = "exp"
) -> Path:
    """The random fusion as a repro script (exact input values) at ``path``."""
    from fusecli.bisect.repro import write_repro

    loaded = random_fusion(num_ops, seed, planted)
    header = [f"a random fusion of {num_ops} ops with one planted {planted} (seed {seed})"]
    py_path, _ = write_repro(loaded, Path(path).parent, Path(path).stem, header)
    return py_path
