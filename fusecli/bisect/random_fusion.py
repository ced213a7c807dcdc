"""Random fusions: for fuzzing every op family, and large ones with one planted op for bisect.

``fuzz_fusion(seed)`` draws a fusion from every op family (``random_ops``, ``random_structure``)
over inputs of ranks 0 to 5 with zero-size and size-1 dims, broadcast, transposed, sliced and
expanded (stride 0) layouts, symbolic and static sizes, in every dtype family; it is valid by
construction and the same for the same seed. ``benchmarks/fuzz.py`` and ``tests/test_fuzz.py``
run it.

``random_fusion(num_ops, seed, planted="exp")`` builds a fusion of about ``num_ops`` tensor
exprs from ops that keep values bounded (so nothing overflows and a corrupted value shows up
downstream instead of being masked), with exactly one ``planted`` op somewhere in the middle:
run with ``FUSECLI_INJECT_FAULT=<planted>`` and only that op computes wrongly. Every value
feeds the single output, so the planted op's error always reaches it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from fusecli.bisect import random_ops as ew
from fusecli.bisect import random_structure as st
from fusecli.bisect.random_ops import Draw, Node
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.load.model import LoadedFusion

# family -> (weight, builders); the benchmark's table counts fusions per family
FAMILIES = {
    "unary": (3.0, (ew.unary,)),
    "binary": (4.0, (ew.binary,)),
    "ternary": (1.0, (ew.ternary,)),
    "cast": (1.5, (ew.cast,)),
    "reduction": (1.5, (st.reduction,)),
    "shape": (
        2.0, (st.broadcast_in_dim, st.broadcast, st.expand, st.reshape, st.permute, st.squeeze)
    ),
    "resize": (1.2, (st.slice_, st.pad, st.cat)),
    "matmul": (1.0, (st.matmul,)),
    "hint": (0.4, (st.hint,)),
}
INPUT_DTYPES = (
    (DataType.Float, 5), (DataType.BFloat16, 2), (DataType.Half, 1), (DataType.Double, 0.5),
    (DataType.Int, 1), (DataType.Int32, 0.5), (DataType.Bool, 0.7),
)
LAYOUTS = ("contiguous", "contiguous", "transposed", "sliced", "expanded")


@dataclass(frozen=True, slots=True)
class RandomFusion:
    seed: int
    loaded: LoadedFusion
    families: tuple[str, ...]  # the families of the ops it was built from
    ops: tuple[str, ...]  # the fd.ops names called, in order of first use


SizeDraw = Callable[[random.Random], tuple[int, ...]]


def fuzz_fusion(
    seed: int, max_ops: int = 20, device: str = "cpu", sizes: SizeDraw | None = None
) -> RandomFusion:
    """A random fusion over every op family, valid by construction; the same for one seed.

    Inputs are made on the CPU (the same values everywhere) and moved to ``device`` with
    their strides, stride-0 expansions included. ``sizes`` draws the base shape the inputs
    share (by default small ones, zero-size and size-1 dimensions included; a benchmark draws
    memory-bound ones)."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    inputs: list[object] = []
    sizes = (sizes or _base_sizes)(rng)
    fd = FusionDefinition()
    with fd:
        def add_input(shape: tuple[int, ...], dtype: DataType, layout: str = "contiguous"):
            tensor, value = _define_input(fd, rng, generator, shape, dtype, layout)
            inputs.append(value)
            return Node(tensor, tuple(value.shape))

        draw = Draw(rng, fd, [], add_input)
        for _ in range(rng.randint(1, 3)):
            dtype = rng.choices(*zip(*INPUT_DTYPES))[0]
            shape = tuple(1 if s and rng.random() < 0.2 else s for s in sizes)
            draw.pool.append(add_input(shape, dtype, rng.choice(LAYOUTS)))
        if rng.random() < 0.2:
            draw.scalar_inputs.append(fd.define_scalar(DataType.Double))
            inputs.append(rng.choice((0.5, -2.0, 1.5)))
        first_result = len(draw.pool)
        families: list[str] = []
        names, weights = zip(*((name, w) for name, (w, _) in FAMILIES.items()))
        for _ in range(rng.randint(1, max_ops)):
            for _attempt in range(6):
                family = rng.choices(names, weights)[0]
                node = rng.choice(FAMILIES[family][1])(draw)
                if node is not None:
                    draw.pool.append(node)
                    families.append(family)
                    break
        results = draw.pool[first_result:] or [
            Node(draw.call("neg" if draw.pool[0].kind != "bool" else "logical_not",
                           draw.pool[0].tensor), draw.pool[0].sizes)
        ]
        count = min(len(results), rng.randint(1, 3))
        for node in [results[-1], *rng.sample(results[:-1], min(count - 1, len(results) - 1))]:
            fd.add_output(node.tensor)
    if device != "cpu":
        inputs = [_on_device(v, device) for v in inputs]
    loaded = LoadedFusion(
        path=Path(f"fuzz_{seed}.py"), name=f"fuzz_{seed}", fd=fd, inputs=inputs, line=None,
        source_kind="python",
    )
    return RandomFusion(seed, loaded, tuple(sorted(set(families))), tuple(draw.ops))


def _base_sizes(rng: random.Random) -> tuple[int, ...]:
    rank = rng.choices((1, 2, 3, 4, 5), (2, 4, 3, 2, 0.5))[0]
    sizes = [rng.choices((1, 2, 3, 4, 5, 6), (3, 2, 3, 2, 1, 1))[0] for _ in range(rank)]
    if rng.random() < 0.1:  # a zero-size tensor: nvFuser gives its segments to no_op
        sizes[rng.randrange(rank)] = 0
    return tuple(sizes)


def _define_input(fd, rng, generator, shape, dtype, layout):
    """A torch tensor of ``shape`` in ``layout`` and the define_tensor that fits it."""
    rank = len(shape)
    if layout == "transposed" and rank >= 2:
        order = list(range(rank))
        rng.shuffle(order)
        storage = _values(tuple(shape[d] for d in order), dtype, generator)
        value = storage.permute([order.index(d) for d in range(rank)])
    elif layout == "sliced" and rank >= 1 and shape[-1] > 1:
        wide = (*shape[:-1], 2 * shape[-1])
        value = _values(wide, dtype, generator)[..., ::2]
    elif layout == "expanded" and any(s > 1 for s in shape):
        dim = rng.choice([d for d, s in enumerate(shape) if s > 1])
        narrow = tuple(1 if d == dim else s for d, s in enumerate(shape))
        value = _values(narrow, dtype, generator).expand(shape)
    else:
        value = _values(shape, dtype, generator)
    if value.is_contiguous() and rng.random() < 0.3:
        # shape=[-1, ...]: symbolic sizes, and a size-1 dim is an iteration dim, not a broadcast
        tensor = fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=dtype)
    else:
        tensor = fd.define_tensor(
            sizes=list(value.shape), strides=list(value.stride()), dtype=dtype,
            static_sizes=rng.random() < 0.3,
        )
    return tensor, value


def _on_device(value: object, device: str) -> object:
    if not isinstance(value, torch.Tensor):
        return value
    from fusecli.load.inputs import storage_span

    span = storage_span(tuple(value.shape), tuple(value.stride()))
    storage = value.as_strided((span,), (1,)).to(device)
    return storage.as_strided(tuple(value.shape), tuple(value.stride()))


def _values(shape: tuple[int, ...], dtype: DataType, generator: torch.Generator) -> torch.Tensor:
    if dtype is DataType.Bool:
        return torch.rand(shape, generator=generator) < 0.5
    if dt.is_integral(dtype):
        return torch.randint(-4, 5, shape, generator=generator).to(dt.to_torch(dtype))
    return torch.randn(shape, generator=generator).to(dt.to_torch(dtype))

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
