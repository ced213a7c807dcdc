"""A population of fusions for measuring fusecli's segmenter against real nvFuser.

    python scripts/segmentation-population.py generate OUTDIR [--count N] [--first-seed S]
    python scripts/segmentation-population.py compare OUTDIR LOGDIR [--json FILE]

``generate`` draws N fusions, one per seed, each a chain of motifs over a float [R, C] tensor:
in-place updates (a 0-d counter or an [R, 1] input written back, read through a broadcast),
resize chains (slice, pad, cat, a RoPE-style rotate-half), reductions of every kind (inner and
outer sums, max, softmax, layer norm, a sum over dim 0 feeding back), strided and mixed-dtype
inputs (column-major, bf16 and half), linear and matmul, zero-size tensors (an empty cat input,
a sum over an empty dimension), scalar inputs and an iota mask. Each is an ``nvfuser_direct``
script (``OUTDIR/pop_<seed>.py``); ``OUTDIR/manifest.json`` lists seed, split and motifs.

The split is fixed by seed: ``seed % 3 == 0`` is held out, never looked at while fitting rules;
the rest is the fit part. ``compare`` reads nvFuser's recorded logs (``scripts/gpu-segmentation-
population`` records them with ``scripts/record-nvfuser-logs.py``), segments the same fusions
with fusecli, and prints one agreement table: fit vs held out, by scheduler multiset and by
exact segment membership (each segment's scheduler and ops). A folder without
``manifest.json`` (``scripts/harvest-nvfuser-tests.py``'s fusions of nvFuser's own tests) is
compared as one part, ``harvest``: every ``*.py`` file in it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HELD_OUT_MODULUS = 3
SPLITS = ("fit", "held_out")
HARVEST = "harvest"  # the one part of a folder without a manifest: every fusion held out


def split_of(seed: int) -> str:
    """``held_out`` for seeds divisible by 3 (never used for fitting), else ``fit``."""
    return "held_out" if seed % HELD_OUT_MODULUS == 0 else "fit"


# -- building one script ------------------------------------------------------------------------


@dataclass
class Script:
    """The lines of one fusion definition and its inputs, with fresh names."""

    rows: int
    cols: int
    rng: random.Random
    lines: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # Python expressions, in definition order
    count: int = 0

    def name(self, prefix: str = "T") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def op(self, text: str) -> str:
        out = self.name()
        self.lines.append(f"{out} = fd.ops.{text}")
        return out

    def tensor(self, shape: tuple[int, ...], dtype: str = "Float", column_major: bool = False,
               broadcast: tuple[int, ...] = ()) -> str:
        """An input of ``shape`` (dims in ``broadcast`` declared size 1)."""
        out = self.name()
        rank = len(shape)
        sizes = [1 if d in broadcast else -1 for d in range(rank)]
        contiguity = [None if d in broadcast else True for d in range(rank)]
        order = list(range(rank)) if column_major else list(reversed(range(rank)))
        self.lines.append(
            f"{out} = fd.define_tensor(shape={sizes}, contiguity={contiguity}, "
            f"dtype=DataType.{dtype}, is_cpu=False, stride_order={order})"
        )
        torch_dtype = {"Float": "float32", "BFloat16": "bfloat16", "Half": "float16"}[dtype]
        make = f"torch.randn({tuple(shape)}, generator=g, dtype=torch.{torch_dtype})"
        if column_major and rank == 2:
            make = (f"torch.randn({(shape[1], shape[0])}, generator=g, "
                    f"dtype=torch.{torch_dtype}).t()")
        self.inputs.append(f"{make}.to('cuda:0')")
        return out

    def scalar_input(self, value: float) -> str:
        out = self.name("S")
        self.lines.append(f"{out} = fd.define_scalar(dtype=DataType.Double)")
        self.inputs.append(repr(value))
        return out

    def constant(self, value: float | int) -> str:
        out = self.name("S")
        dtype = "Int" if isinstance(value, int) else "Double"
        self.lines.append(f"{out} = fd.define_scalar({value!r}, dtype=DataType.{dtype})")
        return out

    def broadcast_row(self, vector: str, keep: int) -> str:
        """A [R] or [C] vector broadcast to [R, C] (``keep``: the dim it runs along)."""
        return self.op(f"broadcast_in_dim({vector}, shape=[{self.rows}, {self.cols}], "
                       f"broadcast_dims=[{keep}])")

    def output(self, tensor: str, alias: str | None = None) -> None:
        self.lines.append(f"fd.add_output({tensor}, {alias})" if alias
                          else f"fd.add_output({tensor})")

    def render(self, seed: int, motifs: list[str]) -> str:
        body = "\n".join(f"    {line}" for line in self.lines)
        inputs = "\n".join(f"    {value}," for value in self.inputs)
        return (
            f"# segmentation population, seed {seed} ({split_of(seed)}): "
            f"{', '.join(motifs)}\n"
            "import torch\n"
            "from nvfuser_direct import FusionDefinition, DataType\n\n"
            f"def pop_{seed}(fd : FusionDefinition) -> None :\n{body}\n\n"
            f"with FusionDefinition() as fd:\n    pop_{seed}(fd)\n\n"
            f"g = torch.Generator().manual_seed({seed})\n"
            f"inputs = [\n{inputs}\n]\nfd.execute(inputs)\n"
        )


# -- motifs: each takes the carried float [R, C] tensor and returns the next ------------------


def pointwise_scalar(s: Script, x: str) -> str:
    scale = s.scalar_input(round(s.rng.uniform(0.1, 2.0), 3))
    return s.op(f"tanh({s.op(f'mul({x}, {scale})')})")


def mixed_dtype(s: Script, x: str) -> str:
    dtype = s.rng.choice(("BFloat16", "Half"))
    other = s.tensor((s.rows, s.cols), dtype, column_major=s.rng.random() < 0.5)
    return s.op(f"add({x}, {s.op(f'cast({other}, dtype=DataType.Float)')})")


def softmax(s: Script, x: str) -> str:
    top = s.broadcast_row(s.op(f"max({x}, dims=[1], keepdim=False)"), 0)
    exp = s.op(f"exp({s.op(f'sub({x}, {top})')})")
    total = s.broadcast_row(s.op(f"sum({exp}, dims=[1], keepdim=False)"), 0)
    return s.op(f"div({exp}, {total})")


def layer_norm(s: Script, x: str) -> str:
    var, mean = s.name(), s.name()
    s.lines.append(f"{var}, {mean} = fd.ops.var_mean({x}, dims=[1], correction=0, "
                   "keepdim=False)")
    eps = s.constant(1e-5)
    inv = s.op(f"rsqrt({s.op(f'add({var}, {eps})')})")
    centered = s.op(f"sub({x}, {s.broadcast_row(mean, 0)})")
    return s.op(f"mul({centered}, {s.broadcast_row(inv, 0)})")


def outer_sum(s: Script, x: str) -> str:
    column = s.op(f"sum({x}, dims=[0], keepdim=False)")
    s.output(column)
    return s.op(f"sub({x}, {s.broadcast_row(column, 1)})")


def inner_max(s: Script, x: str) -> str:
    s.output(s.op(f"max({x}, dims=[1], keepdim=False)"))
    return x


def rotate_half(s: Script, x: str) -> str:
    half = s.cols // 2
    first = s.op(f"slice({x}, start_indices=[0, 0], end_indices=[{s.rows}, {half}])")
    second = s.op(f"slice({x}, start_indices=[0, {half}], end_indices=[{s.rows}, {s.cols}])")
    return s.op(f"cat([{s.op(f'neg({second})')}, {first}], dim=1)")


def pad_slice(s: Script, x: str) -> str:
    padded = s.op(f"pad({x}, [1, 1])")
    return s.op(f"slice({padded}, start_indices=[0, 1], end_indices=[{s.rows}, {s.cols + 1}])")


def cat_empty(s: Script, x: str) -> str:
    empty = s.tensor((s.rows, 0))
    return s.op(f"cat([{x}, {empty}], dim=1)")


def sum_empty(s: Script, x: str) -> str:
    empty = s.tensor((0, s.cols))
    return s.op(f"add({x}, {s.broadcast_row(s.op(f'sum({empty}, dims=[0], keepdim=False)'), 1)})")


def linear(s: Script, x: str) -> str:
    weight = s.tensor((s.cols, s.cols))
    return s.op(f"linear({x}, {weight})")


def matmul(s: Script, x: str) -> str:
    weight = s.tensor((s.cols, s.cols), column_major=s.rng.random() < 0.5)
    return s.op(f"matmul({x}, {weight})")


def inplace_counter(s: Script, x: str) -> str:
    counter = s.tensor(())
    stepped = s.op(f"add({counter}, {s.constant(1.0)})")
    s.output(stepped, counter)
    scaled = s.op(f"broadcast_in_dim({stepped}, shape=[{s.rows}, {s.cols}], broadcast_dims=[])")
    return s.op(f"mul({x}, {scaled})")


def inplace_column(s: Script, x: str) -> str:
    column = s.tensor((s.rows, 1), broadcast=(1,))
    s.output(s.op(f"neg({column})"), column)
    return s.op(f"add({x}, {column})")


def iota_mask(s: Script, x: str) -> str:
    positions = s.op(f"iota({s.constant(s.cols)}, {s.constant(0)}, {s.constant(1)}, "
                     "dtype=DataType.Int)")
    limit = s.constant(s.rng.randrange(1, s.cols))
    keep = s.broadcast_row(s.op(f"lt({positions}, {limit})"), 1)
    return s.op(f"where({keep}, {x}, {s.constant(0.0)})")


MOTIFS: dict[str, tuple[float, Callable[[Script, str], str]]] = {
    "pointwise_scalar": (1.0, pointwise_scalar), "mixed_dtype": (1.0, mixed_dtype),
    "softmax": (1.0, softmax), "layer_norm": (1.0, layer_norm), "outer_sum": (1.0, outer_sum),
    "inner_max": (0.7, inner_max), "rotate_half": (1.0, rotate_half),
    "pad_slice": (1.0, pad_slice), "cat_empty": (0.5, cat_empty),
    "sum_empty": (0.5, sum_empty), "linear": (0.7, linear), "matmul": (0.5, matmul),
    "inplace_counter": (0.8, inplace_counter), "inplace_column": (0.6, inplace_column),
    "iota_mask": (0.6, iota_mask),
}
ROWS = (8, 64, 512, 2048)
COLUMNS = (64, 256, 1024, 4096)


@dataclass(frozen=True)
class Member:
    seed: int
    name: str
    split: str
    motifs: tuple[str, ...]
    text: str


def draw(seed: int) -> Member:
    """The fusion of ``seed``: an input (maybe strided, maybe half precision), 1 to 4 motifs,
    the result as an output."""
    rng = random.Random(seed)
    s = Script(rng.choice(ROWS), rng.choice(COLUMNS), rng)
    names = list(MOTIFS)
    motifs = rng.choices(names, weights=[MOTIFS[n][0] for n in names], k=rng.randint(1, 4))
    dtype = rng.choice(("Float", "Float", "BFloat16", "Half"))
    x = s.tensor((s.rows, s.cols), dtype, column_major=rng.random() < 0.25)
    if dtype != "Float":
        x = s.op(f"cast({x}, dtype=DataType.Float)")
    for motif in motifs:
        x = MOTIFS[motif][1](s, x)
    if dtype != "Float":
        x = s.op(f"cast({x}, dtype=DataType.{dtype})")
    s.output(x)
    return Member(seed, f"pop_{seed}", split_of(seed), tuple(motifs), s.render(seed, motifs))


def generate(out_dir: Path, count: int, first_seed: int = 0) -> list[Member]:
    out_dir.mkdir(parents=True, exist_ok=True)
    members = [draw(seed) for seed in range(first_seed, first_seed + count)]
    for member in members:
        (out_dir / f"{member.name}.py").write_text(member.text, encoding="utf-8")
    manifest = [{"seed": m.seed, "name": m.name, "split": m.split, "motifs": list(m.motifs)}
                for m in members]
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return members


# -- comparing with nvFuser's recorded segmentation --------------------------------------------

Membership = Counter  # (scheduler, sorted ops) -> count


@dataclass(frozen=True)
class Agreement:
    name: str
    split: str
    status: str  # agree, schedulers_only, differ, nvfuser_failed, fusecli_failed, missing
    nvfuser: tuple[str, ...] = ()
    fusecli: tuple[str, ...] = ()


def fusecli_segmentation(path: Path) -> tuple[str, Counter, Membership]:
    from fusecli.load import load_path
    from fusecli.segment.segmenter import segment_fusion

    (loaded,) = load_path(path, device="cpu")
    segmented = segment_fusion(loaded.fusion, loaded.inputs)
    keys = [(s.scheduler, tuple(sorted(e.op.value for e in s.exprs)))
            for s in segmented.segments]
    return loaded.name, Counter(k[0] for k in keys), Counter(keys)


def nvfuser_segmentation(log: str) -> tuple[Counter, Membership]:
    from fusecli.engines.nvfuser_log import parse_log

    segments = parse_log(log).segments
    return (Counter(s.scheduler for s in segments),
            Counter((s.scheduler, tuple(sorted(s.ops))) for s in segments))


def members_of(folder: Path) -> list[dict]:
    """The fusions to compare, with their split: a population's ``manifest.json``; in a folder
    without one (``scripts/harvest-nvfuser-tests.py``'s), every ``*.py`` file, in one part
    named ``harvest``."""
    manifest = folder / "manifest.json"
    if manifest.exists():
        return json.loads(manifest.read_text(encoding="utf-8"))
    return [{"name": path.stem, "split": HARVEST} for path in sorted(folder.glob("*.py"))]


def compare(population: Path, logs: Path) -> list[Agreement]:
    manifest = members_of(population)
    outcomes_file = logs / "outcomes.json"
    outcomes = json.loads(outcomes_file.read_text()) if outcomes_file.exists() else {}
    results = []
    for entry in manifest:
        name, split = entry["name"], entry["split"]
        log_file = logs / f"{name}.log"
        outcome = outcomes.get(name, "ok")
        if outcome != "ok":
            failed = outcome.startswith("fusecli could not")
            results.append(Agreement(name, split, "fusecli_failed" if failed else "nvfuser_failed"))
            continue
        if not log_file.exists():
            results.append(Agreement(name, split, "missing"))
            continue
        try:
            _, ours, our_groups = fusecli_segmentation(population / f"{name}.py")
        except Exception:  # a harvested test fusion fusecli cannot segment: that is its result
            results.append(Agreement(name, split, "fusecli_failed"))
            continue
        theirs, their_groups = nvfuser_segmentation(log_file.read_text(encoding="utf-8"))
        status = ("agree" if our_groups == their_groups
                  else "schedulers_only" if ours == theirs else "differ")
        results.append(Agreement(name, split, status, tuple(sorted(theirs.elements())),
                                 tuple(sorted(ours.elements()))))
    return results


def table(results: list[Agreement]) -> str:
    """Agreement per split: of the fusions nvFuser segmented, how many have fusecli's
    scheduler multiset, and how many have its segments exactly."""
    lines = [f"{'part':<9} {'fusions':>7} {'recorded':>8} {'schedulers':>11} {'exact':>7}"]
    parts = (HARVEST,) if results and {r.split for r in results} == {HARVEST} else SPLITS
    for part in (*parts, "all"):
        chosen = [r for r in results if part == "all" or r.split == part]
        recorded = [r for r in chosen if r.status in ("agree", "schedulers_only", "differ")]
        same = sum(r.status in ("agree", "schedulers_only") for r in recorded)
        exact = sum(r.status == "agree" for r in recorded)
        lines.append(f"{part:<9} {len(chosen):>7} {len(recorded):>8} "
                     f"{same:>5}/{len(recorded):<5} {exact:>3}/{len(recorded):<3}")
    for r in results:
        if r.status == "differ":
            lines.append(f"  {r.name} ({r.split}): nvFuser {list(r.nvfuser)}, "
                         f"fusecli {list(r.fusecli)}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="write N fusions and manifest.json")
    gen.add_argument("out_dir", type=Path)
    gen.add_argument("--count", type=int, default=300)
    gen.add_argument("--first-seed", type=int, default=0)
    cmp = commands.add_parser("compare", help="agreement with nvFuser's recorded logs")
    cmp.add_argument("population", type=Path)
    cmp.add_argument("logs", type=Path)
    cmp.add_argument("--json", type=Path, help="also write every fusion's result here")
    args = parser.parse_args(argv)
    if args.command == "generate":
        members = generate(args.out_dir, args.count, args.first_seed)
        held = sum(m.split == "held_out" for m in members)
        print(f"{len(members)} fusions in {args.out_dir} ({held} held out)")
        return 0
    results = compare(args.population, args.logs)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main(sys.argv[1:]))
