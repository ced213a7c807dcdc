"""fusecli.codegen: generated CUDA C, readable and deterministic, compiled by NVRTC, and run on
the CPU emulator (fusecli.codegen.emulate) against the reference interpreter.

Every kernel runs with its outputs poisoned first (NaN, or all bits set), so an element the
kernel forgets to write fails the comparison. NVRTC tests skip without NVRTC, emulator tests
without g++.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from fusecli.app.codegen_check import check_fusion
from fusecli.codegen import Kernel, Sizes, Unsupported, cdtypes, emulate, generate, nvrtc
from fusecli.codegen.indexing import IndexSpace, add, scale
from fusecli.codegen.prelude import prelude_for
from fusecli.compare import compare_tensors, tolerance_for
from fusecli.errors import PipelineError
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.load import discover, load_path
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import (
    CupyExecutor,
    EnvironmentSizes,
    cache_key,
    kernel_arguments,
)
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion

CORPUS_DIR = Path(__file__).parent.parent / "fusions"
CORPUS = discover([CORPUS_DIR])
needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC is not installed")
needs_gxx = pytest.mark.skipif(not emulate.available(), reason="g++ is not installed")


def fusion_of(body: Callable[[FusionDefinition], None]) -> FusionDefinition:
    with FusionDefinition() as fd:
        body(fd)
    return fd


def define(fd: FusionDefinition, tensor: torch.Tensor):
    return fd.define_tensor(sizes=list(tensor.shape), strides=list(tensor.stride()),
                            dtype=dt.from_torch(tensor.dtype))


def kernels_of(fusion, inputs, values: dict | None = None, sizes: Sizes | None = None,
               ) -> list[tuple[object, Kernel | Unsupported]]:
    """Each segment and its kernel, generated for the layouts of ``values`` (uid -> value;
    default: the inputs, and the reference's intermediates where a segment needs them) and
    ``sizes`` (default: the segmenter's RuntimeInfo)."""
    segmented = segment_fusion(fusion, inputs)
    assert segmented.ok
    sizes = sizes or RuntimeInfo(segmented.fusion, inputs)
    known = values or {v.uid: x for v, x in zip(fusion.inputs, inputs)}
    if any(v.uid not in known for s in segmented.segments for v in s.inputs):
        known = run_reference(segmented.fusion, _clone(inputs), keep_intermediates=True).values
    found = []
    for segment in segmented.segments:
        tensors = [known[v.uid] for v in segment.inputs]
        found.append((segment, generate(segment, sizes, tensors)))
    return found


def _clone(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def check_on_emulator(fusion, inputs) -> int:
    """Run every generated kernel of ``fusion`` on the emulator, each on the reference's values
    of its inputs; assert each output matches the reference. Returns the kernels run."""
    fusion = segment_fusion(fusion, inputs).fusion  # with the segmenter's segment_sets
    reference = run_reference(fusion, _clone(inputs), keep_intermediates=True).values
    reference.update({v.uid: x for v, x in zip(fusion.inputs, inputs)})  # their own layouts
    ctx = ExecutionContext.for_fusion(fusion, device="cpu", faults=frozenset(),
                                      extents=bind_inputs(fusion, inputs).extents)
    ran = 0
    sizes = EnvironmentSizes(ctx, reference)  # what the CuPy executor generates with
    for segment, kernel in kernels_of(fusion, inputs, reference, sizes):
        if not isinstance(kernel, Kernel):
            continue
        values, outputs = kernel_arguments(kernel, reference, ctx, torch.device("cpu"),
                                           poison=True)
        emulate.emulate(kernel, values)
        ran += 1
        for out in segment.outputs:
            actual, expected = outputs[out.uid], reference[out.uid]
            diff = compare_tensors(actual, expected, tolerance=tolerance_for(
                _computed_in(segment, expected.dtype), _reduced(segment)))
            assert diff.ok, f"segment {segment.id} output {out!r}:\n{kernel.source}\n{diff}"
    return ran


def _computed_in(segment, dtype: torch.dtype) -> torch.dtype:
    """A double output's tolerance is float's where the segment computes in float (a float
    chain cast to double at the end: the kernel's libm and torch's differ by float ulps there,
    not double ones); any other output's is its own dtype's."""
    computes_in_float = any(out.dtype is DataType.Float for e in segment.exprs
                            for out in e.tensor_outputs())
    return torch.float32 if dtype is torch.float64 and computes_in_float else dtype


def _reduced(segment) -> int:
    sizes = [math_prod(d.extent for d in out.domain if d.is_reduction)
             for e in segment.exprs for out in e.tensor_outputs()]
    return max([1, *sizes])


def math_prod(extents) -> int:
    total = 1
    for extent in extents:
        total *= extent if isinstance(extent, int) else 4096
    return total


# -- source: readable, deterministic, self-contained ---------------------------------------------

# The kernel of ``scale_add``, lane 0 and the store: the rest repeats lane 0 for lanes 1-7.
SCALE_ADD_EXCERPT = """\
// fusecli: segment 0 (pointwise): cast, mul, cast, add, cast
// pointwise: loop [4, 16] (T6) in 8 groups of 8; block 256, grid 1 (grid-stride); 32-bit indexing;
// 16-byte accesses: T0, T1, T6
typedef int index_t;
extern "C" __global__ void __launch_bounds__(256) fusecli_pointwise_s0(
    const bfloat16* __restrict__ T0,
    const bfloat16* __restrict__ T1,
    bfloat16* __restrict__ T6) {
  for (index_t group = blockIdx.x * (index_t)blockDim.x + threadIdx.x; group < 8; \
group += (index_t)gridDim.x * blockDim.x) {
    const index_t i0 = group / 2;
    const index_t i1 = group % 2;
    const Vec<bfloat16, 8> t0_vec = \
*reinterpret_cast<const Vec<bfloat16, 8>*>(&T0[i0 * 16 + i1 * 8]);
    const float t0 = bfloat16_to_float(t0_vec.v[0]);
    const float t3 = (t0 * 2.0f);  // mul
    const Vec<bfloat16, 8> t1_vec = \
*reinterpret_cast<const Vec<bfloat16, 8>*>(&T1[i0 * 16 + i1 * 8]);
    const float t1 = bfloat16_to_float(t1_vec.v[0]);
    const float t5 = (t3 + t1);  // add
    const float t6 = round_to_bfloat16(t5);  // cast to BFloat16
    const float t0_1 = bfloat16_to_float(t0_vec.v[1]);
    Vec<bfloat16, 8> t6_out;
    t6_out.v[0] = float_to_bfloat16(t5);
    *reinterpret_cast<Vec<bfloat16, 8>*>(&T6[i0 * 16 + i1 * 8]) = t6_out;
  }
}
"""


def scale_add() -> tuple[FusionDefinition, list[torch.Tensor]]:
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    y = torch.randn(4, 16, dtype=torch.bfloat16)

    def body(fd):
        a, b = define(fd, x), define(fd, y)
        two = fd.define_scalar(2.0, dtype=DataType.Double)
        fd.add_output(fd.ops.cast(fd.ops.add(fd.ops.mul(a, two), b), DataType.BFloat16))

    return fusion_of(body), [x, y]


def test_pointwise_source_reads_top_down_and_is_deterministic() -> None:
    fd, inputs = scale_add()
    (_, first), = kernels_of(fd.fusion, inputs)
    (_, second), = kernels_of(fd.fusion, inputs)
    assert isinstance(first, Kernel)
    assert first.source == second.source
    lines = first.source.splitlines()
    position = 0
    for expected in SCALE_ADD_EXCERPT.splitlines():  # each line, in this order
        position = lines.index(expected, position) + 1
    assert "#include" not in first.source
    assert first.grid == (1, 1, 1) and first.block == (256, 1, 1)


def test_softmax_is_one_kernel_with_two_reduction_passes() -> None:
    x = torch.randn(6, 64, dtype=torch.bfloat16)

    def body(fd):
        t = fd.ops.cast(define(fd, x), DataType.Float)
        top = fd.ops.broadcast_in_dim(fd.ops.max(t, dims=[1]), shape=[6, 64], broadcast_dims=[0])
        e = fd.ops.exp(fd.ops.sub(t, top))
        total = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), shape=[6, 64],
                                        broadcast_dims=[0])
        fd.add_output(fd.ops.cast(fd.ops.div(e, total), DataType.BFloat16))

    (segment, kernel), = kernels_of(fusion_of(body).fusion, [x])
    assert segment.scheduler == "inner_persistent"
    assert isinstance(kernel, Kernel)
    assert "// pass 1: max T1" in kernel.source and "// pass 2: sum T6" in kernel.source
    assert kernel.source.count("= block_reduce<") == 2  # one combine per reduction
    assert "persistent" in kernel.heuristics and "rows per block" in kernel.heuristics


def test_literals_are_exact_for_their_type() -> None:
    assert cdtypes.literal(0.1, DataType.Float) == "0.1f"
    assert cdtypes.literal(0.1, DataType.Double) == "0.1"
    assert cdtypes.literal(3, DataType.Float) == "3.0f"
    assert cdtypes.literal(-(2**63), DataType.Int) == "(-9223372036854775807LL - 1)"
    assert cdtypes.literal(True, DataType.Bool) == "true"
    assert "inf" in cdtypes.literal(float("-inf"), DataType.Float)
    assert cdtypes.literal(1.00390625, DataType.BFloat16) == "1.0f"  # rounded to bfloat16 first


def test_index_arithmetic_divides_exactly_where_ranges_allow() -> None:
    space = IndexSpace()
    i0, i1, i2 = space.var("i0", 0, 1), space.var("i1", 0, 63), space.var("i2", 0, 255)
    linear = add(add(scale(i0, 16384), scale(i1, 256)), i2)
    assert space.divide(linear, 16384).text() == "i0"
    assert space.remainder(space.divide(linear, 256), 64).text() == "i1"
    assert space.remainder(linear, 64).text() == "i2 % 64"
    assert space.divide(space.remainder(linear, 256), 64).text() == "i2 / 64"


def test_prelude_holds_only_what_the_kernel_uses() -> None:
    assert prelude_for("float x = 1.0f;") == ""
    used = prelude_for("bfloat16 y = float_to_bfloat16(maximum_(a, b));")
    assert "struct bfloat16" in used and "maximum_" in used and "struct float16" not in used


def test_unsupported_segments_say_why() -> None:
    x = torch.randn(8, 16, dtype=torch.complex64)

    def body(fd):
        a = define(fd, x)
        fd.add_output(fd.ops.add(a, a))

    (segment, kernel), = kernels_of(fusion_of(body).fusion, [x])
    assert segment.scheduler == "pointwise"
    assert kernel.reason == "the CUDA renderer has no type for ComplexFloat"


def test_a_reduction_of_a_middle_dim_is_a_batched_outer_reduction() -> None:
    x = torch.randn(4, 8, 16)  # values: tests/test_outer_reduction.py

    def body(fd):
        fd.add_output(fd.ops.sum(define(fd, x), dims=[1]))

    (_, kernel), = kernels_of(fusion_of(body).fusion, [x])
    assert isinstance(kernel, Kernel)
    assert kernel.heuristics.startswith(
        "outer reduction: 64 columns (dims [0, 2]) of 8 rows (dims [1]); 4 columns per thread")


def test_a_reduction_ending_in_the_innermost_dim_gives_a_thread_each_row() -> None:
    x = torch.randn(4, 8, 16)

    def body(fd):
        fd.add_output(fd.ops.sum(define(fd, x), dims=[0, 2]))

    (_, kernel), = kernels_of(fusion_of(body).fusion, [x])
    assert isinstance(kernel, Kernel)
    assert kernel.heuristics.startswith("outer reduction: 8 rows (dims [1]) of 64 (dims [0, 2])")


def test_huge_tensors_get_64_bit_indexing() -> None:
    rows = torch.empty(2**16, 1).expand(2**16, 2**15 + 1)  # 2^31 + 2^16 elements, 2^16 stored
    columns = torch.empty(1, 2**15 + 1).expand(2**16, 2**15 + 1)

    def body(fd):
        fd.add_output(fd.ops.add(define(fd, rows), define(fd, columns)))

    (_, kernel), = kernels_of(fusion_of(body).fusion, [rows, columns])
    assert isinstance(kernel, Kernel)
    assert "typedef long long index_t;" in kernel.source


def test_cache_key_depends_on_source_and_architecture() -> None:
    if not nvrtc.available():
        pytest.skip("NVRTC is not installed")
    assert cache_key("a", "sm_90") != cache_key("b", "sm_90")
    assert cache_key("a", "sm_90") != cache_key("a", "sm_100")
    assert cache_key("a", "sm_90") == cache_key("a", "sm_90")


# -- the corpus: NVRTC and the emulator -----------------------------------------------------------


@needs_nvrtc
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_every_corpus_kernel_compiles_with_nvrtc(path: Path) -> None:
    for loaded in load_path(path, device="cpu"):
        checks = check_fusion(loaded.fusion, loaded.inputs)
        failed = [c.message for c in checks if not c.ok]
        assert not failed, "\n".join(failed)
        assert all(c.status in ("compiled", "skipped") for c in checks)


@needs_gxx
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_kernels_match_the_reference_on_the_emulator(path: Path) -> None:
    for loaded in load_path(path, device="cpu"):
        check_on_emulator(loaded.fusion, loaded.inputs)


@needs_gxx
def test_a_cpu_scalar_tensor_is_passed_by_value() -> None:
    x = torch.randn(4, 8)
    scale = torch.tensor(3.0)  # 0-dim, on the CPU: the kernel cannot read its memory

    def body(fd):
        t = define(fd, x)
        s = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(fd.ops.mul(t, s))

    fd = fusion_of(body)
    (_, kernel), = kernels_of(fd.fusion, [x, scale])
    assert "float T1_value" in kernel.source
    assert check_on_emulator(fd.fusion, [x, scale]) == 1


def test_the_corpus_norms_and_pointwise_fusions_have_kernels() -> None:
    names = {"rms_norm.py", "layer_norm.yaml", "softmax.yaml", "gelu_tanh.py", "pad_cat.py"}
    for path in (p for p in CORPUS if p.name in names):
        for loaded in load_path(path, device="cpu"):
            kernels = kernels_of(loaded.fusion, loaded.inputs)
            assert all(isinstance(k, Kernel) for _, k in kernels), path.name


# -- random pointwise fusions -----------------------------------------------------------------

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32, torch.int64,
          torch.bool]


def random_input(rng: random.Random, shape: list[int], dtype: torch.dtype,
                 layouts: tuple[str, ...] = ("dense", "permuted", "sliced", "expanded"),
                 ) -> torch.Tensor:
    """A tensor of ``shape`` with a random layout: dense, permuted, sliced or expanded."""
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    layout = rng.choice(layouts)
    storage_shape = list(shape)
    if layout == "sliced":
        storage_shape[-1] += 3
    if dtype.is_floating_point:
        base = torch.randn(storage_shape, generator=generator).to(dtype)
    elif dtype is torch.bool:
        base = torch.rand(storage_shape, generator=generator) > 0.5
    else:
        base = torch.randint(-50, 50, storage_shape, generator=generator, dtype=dtype)
    if layout == "sliced":
        return base[..., : shape[-1]]
    if layout == "permuted" and len(shape) > 1:
        order = list(range(len(shape)))
        rng.shuffle(order)
        inverse = sorted(range(len(shape)), key=lambda a: order[a])
        return base.permute(order).contiguous().permute(inverse)
    if layout == "expanded":
        axis = rng.randrange(len(shape))
        return base.narrow(axis, 0, 1).expand(shape)
    return base


def random_pointwise(seed: int) -> tuple[FusionDefinition, list[torch.Tensor]]:
    rng = random.Random(seed)
    rank = rng.randint(1, 4)
    shape = [rng.choice([2, 3, 5, 8, 24, 32, 64]) for _ in range(rank)]
    inputs = [random_input(rng, shape, rng.choice(DTYPES), ("dense", "permuted", "sliced"))]
    inputs += [random_input(rng, shape, rng.choice(DTYPES)) for _ in range(rng.randint(0, 2))]

    def body(fd):
        values = [define(fd, tensor) for tensor in inputs]
        for _ in range(rng.randint(3, 8)):
            values.append(_random_step(fd, rng, values))
        fd.add_output(values[-1])
        if len(values) > len(inputs) + 1:
            fd.add_output(rng.choice(values[len(inputs):-1]))

    return fusion_of(body), inputs


def _random_step(fd, rng: random.Random, values: list):
    a, b = rng.choice(values), rng.choice(values)
    floating = dt.is_floating(a.dtype)
    step = rng.choice(["binary", "unary", "cast", "where", "compare", "permute"])
    if step == "binary":
        if a.dtype is DataType.Bool or b.dtype is DataType.Bool:
            return fd.ops.logical_or(a, b)
        op = rng.choice(["add", "sub", "mul", "maximum", "minimum"]
                        + ([] if floating else ["bitwise_xor", "bitwise_and"]))
        if not floating and dt.is_floating(b.dtype) and op.startswith("bitwise"):
            op = "add"
        return getattr(fd.ops, op)(a, b)
    if step == "unary":
        if a.dtype is DataType.Bool:
            return fd.ops.logical_not(a)
        op = rng.choice(["neg", "abs", "relu"] + (["tanh", "sin", "exp", "sigmoid", "floor"]
                                                  if floating else ["bitwise_not"]))
        return getattr(fd.ops, op)(a)
    if step == "cast":
        return fd.ops.cast(a, dt.from_torch(rng.choice(DTYPES)))
    if step == "where":
        return fd.ops.where(fd.ops.gt(a, fd.ops.cast(b, a.dtype)), a, b)
    if step == "compare":
        return fd.ops.lt(a, fd.ops.cast(b, a.dtype))
    order = list(range(a.ndim))
    rng.shuffle(order)
    permuted = fd.ops.permute(a, dims=order)
    return fd.ops.permute(fd.ops.abs(permuted) if a.dtype is not DataType.Bool else permuted,
                          dims=sorted(range(a.ndim), key=lambda axis: order[axis]))


@needs_gxx
@pytest.mark.parametrize("seed", range(24))
def test_random_pointwise_fusions_match_the_reference(seed: int) -> None:
    fd, inputs = random_pointwise(seed)
    schedulers = [segment.scheduler for segment, _ in kernels_of(fd.fusion, inputs)]
    ran = check_on_emulator(fd.fusion, inputs)
    assert ran == sum(s not in ("no_op", "expr_eval") for s in schedulers)


def test_check_fusion_lists_compiled_and_skipped_segments() -> None:
    if not nvrtc.available():
        pytest.skip("NVRTC is not installed")
    loaded = load_path(next(p for p in CORPUS if p.name == "silu_swiglu_linear.py"),
                       device="cpu")[0]
    checks = check_fusion(loaded.fusion, loaded.inputs)
    assert [c.status for c in checks] == ["skipped", "skipped", "compiled", "skipped"]
    assert checks[0].message == "expr_eval segments run on ATen"
    assert "fusecli_pointwise_s2" in checks[2].message


# -- random inner reductions ------------------------------------------------------------------


def random_reduction(seed: int) -> tuple[FusionDefinition, list[torch.Tensor]]:
    """A softmax, a layer norm or a plain reduction over random dims of a random tensor (the
    trailing ones mostly: inner reductions; otherwise outer ones)."""
    rng = random.Random(seed)
    shape = [rng.choice([1, 3, 8, 17, 64, 130, 512]) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.6:
        dims = list(range(rng.randrange(len(shape)), len(shape)))
    else:
        dims = sorted(rng.sample(range(len(shape)), rng.randint(1, len(shape))))
    kept = [d for d in range(len(shape)) if d not in dims]
    pattern = rng.choice(["softmax", "layer_norm", "plain", "integer"])
    dtype = torch.int32 if pattern == "integer" else rng.choice(DTYPES[:4])
    x = random_input(rng, shape, dtype, ("dense", "permuted", "sliced"))

    def widen(fd, t):
        return fd.ops.broadcast_in_dim(t, shape=shape, broadcast_dims=kept)

    def body(fd):
        t = define(fd, x)
        if pattern == "integer":
            fd.add_output(fd.ops.sum(t, dims=dims))
            fd.add_output(fd.ops.sub(t, widen(fd, fd.ops.max(t, dims=dims))))
            return
        f = fd.ops.cast(t, DataType.Float) if dtype in (torch.bfloat16, torch.float16) else t
        if pattern == "softmax":
            e = fd.ops.exp(fd.ops.sub(f, widen(fd, fd.ops.max(f, dims=dims))))
            y = fd.ops.div(e, widen(fd, fd.ops.sum(e, dims=dims)))
        elif pattern == "layer_norm":
            var, mean = fd.ops.var_mean(f, dims=dims, correction=rng.choice([0, 1]))
            eps = fd.define_scalar(1e-5, dtype=DataType.Double)
            inv = fd.ops.rsqrt(fd.ops.add(var, eps))
            y = fd.ops.mul(fd.ops.sub(f, widen(fd, mean)), widen(fd, inv))
            fd.add_output(mean)
        else:
            op = rng.choice(["sum", "max", "min"])
            total = getattr(fd.ops, op)(f, dims=dims)
            fd.add_output(total)
            y = fd.ops.mul(f, widen(fd, total))
        fd.add_output(fd.ops.cast(y, dt.from_torch(dtype)))

    return fusion_of(body), [x]


@needs_gxx
@pytest.mark.parametrize("seed", range(16))
def test_random_inner_reductions_match_the_reference(seed: int) -> None:
    fd, inputs = random_reduction(seed)
    segments = [segment for segment, _ in kernels_of(fd.fusion, inputs)]
    # a cast to the dtype it already has is a set: an expr_eval segment after the reduction,
    # on ATen by design; a sum over a size-1 broadcast is a squeeze (nvFuser's trivial
    # reduction), and a fusion of size-1 tensors alone is no_op: a kernel where it computes
    # (nvFuser's NoOp compiles one), none where it only moves views
    computing = {"unary", "binary", "ternary", "cast"}
    expected = sum(s.scheduler != "expr_eval" and (
        s.scheduler != "no_op" or any(e.op.kind.value in computing for e in s.exprs))
        for s in segments)
    assert check_on_emulator(fd.fusion, inputs) == expected


# -- the CuPy executor's flow, kernels emulated -------------------------------------------------


class EmulatingExecutor(CupyExecutor):
    """The CuPy executor with the CPU emulator where CuPy and the GPU would be."""

    def _check_environment(self) -> None:
        pass

    def _device(self, inputs, ctx) -> torch.device:
        return torch.device("cpu")

    def _load(self, kernel: Kernel, device: torch.device) -> Kernel:
        return kernel

    def _launch(self, segment, prepared, values, device) -> None:
        emulate.emulate(prepared.kernel, values)


@needs_gxx
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_the_executor_runs_the_corpus_segment_after_segment(path: Path) -> None:
    """Kernel outputs feed later segments; segments without a kernel fall back to ATen."""
    executor = EmulatingExecutor(poison=True)
    for loaded in load_path(path, device="cpu"):
        fusion, inputs = segment_fusion(loaded.fusion, loaded.inputs).fusion, loaded.inputs
        reference = run_reference(fusion, _clone(inputs), keep_intermediates=True).values
        env = {v.uid: x for v, x in zip(fusion.inputs, inputs)}
        env.update({u: v for u, v in reference.items() if not isinstance(v, torch.Tensor)})
        ctx = ExecutionContext.for_fusion(fusion, device="cpu", faults=frozenset(),
                                          extents=bind_inputs(fusion, inputs).extents)
        outcomes = [executor.run_segment(segment, env, ctx)
                    for segment in segment_fusion(fusion, inputs).segments]
        for outcome in outcomes:
            assert (outcome.executor == "cupy") == (outcome.fallback is None)
        # Every segment a kernel is generated for ran on it: a run without kernels cannot pass.
        generated = [isinstance(k, Kernel) for _, k in kernels_of(fusion, inputs)]
        assert [o.executor == "cupy" for o in outcomes] == generated, path.name
        for output in fusion.outputs:
            if output.alias_input is None and hasattr(output.value, "domain"):
                expected = reference[output.value.uid]
                diff = compare_tensors(env[output.value.uid], expected,
                                       tolerance=tolerance_for(expected.dtype, 4096))
                assert diff.ok, f"{path.name}: {output.value!r}\n{diff}"


def _faulted_run(fd, inputs, faults: frozenset[str], executor):
    ctx = ExecutionContext.for_fusion(fd.fusion, device="cpu", faults=faults,
                                      extents=bind_inputs(fd.fusion, inputs).extents)
    reference = run_reference(fd.fusion, _clone(inputs), keep_intermediates=True).values
    env = {u: v for u, v in reference.items() if not isinstance(v, torch.Tensor)}  # scalars
    env.update({v.uid: x for v, x in zip(fd.fusion.inputs, inputs)})
    segments = segment_fusion(fd.fusion, inputs).segments
    if not hasattr(executor, "run_segment"):  # ATen: every expr in order
        executor.run_exprs([e for segment in segments for e in segment.exprs], env, ctx)
        return [], env[fd.fusion.outputs[0].value.uid]
    outcomes = [executor.run_segment(segment, env, ctx) for segment in segments]
    return outcomes, env[fd.fusion.outputs[0].value.uid]


@needs_gxx
def test_fault_injection_is_rendered_into_the_kernel_as_aten_computes_it() -> None:
    from fusecli.runtime.aten import AtenExecutor

    fd, inputs = scale_add()
    (kernel,) = [k for _, k in kernels_of(fd.fusion, inputs)]
    faults = frozenset({"mul"})
    (segment, _), = kernels_of(fd.fusion, inputs)
    faulted = generate(segment, RuntimeInfo(fd.fusion, inputs), inputs, faults)
    assert "injected_fault_" in faulted.source and "injected_fault_" not in kernel.source
    (outcome,), wrong = _faulted_run(fd, inputs, faults, EmulatingExecutor(strict=True))
    assert (outcome.executor, outcome.fallback) == ("cupy", None)
    _, aten_wrong = _faulted_run(fd, inputs, faults, AtenExecutor())
    _, right = _faulted_run(fd, inputs, frozenset(), EmulatingExecutor())
    assert torch.equal(wrong, aten_wrong)  # the same corruption, bit for bit
    assert bool(((wrong.float() - right.float()).abs() > 100).all())


def test_a_fault_in_an_op_no_kernel_can_corrupt_sends_the_segment_to_aten() -> None:
    x = torch.randn(4, 16)

    def body(fd):
        fd.add_output(fd.ops.sum(fd.ops.exp(define(fd, x)), [1]))

    fd = fusion_of(body)
    (outcome,), _ = _faulted_run(fd, [x], frozenset({"sum"}), EmulatingExecutor())
    assert outcome.executor == "aten"
    assert outcome.fallback == (
        "fault injection names sum: kernels render faults into elementwise ops and casts only"
    )
    with pytest.raises(PipelineError, match="has no CUDA kernel: fault injection names sum"):
        _faulted_run(fd, [x], frozenset({"sum"}), EmulatingExecutor(strict=True))


# -- regressions the fuzzer found (benchmarks/fuzz.py --executor emulated) ----------------------


@needs_gxx
@pytest.mark.parametrize(("size", "correction"), [(1, 1), (2, 3), (1, 0)])
def test_a_variance_without_degrees_of_freedom_is_torch_s(size, correction):
    # fuzz seeds 5544 and 5970 (H200): a variance over one element came out inf where torch
    # gives nan (0/0): the recomputed element differed from its mean by a contracted
    # multiply-add; and a correction above the count divided by a negative number.
    x = torch.randn(3, size, 8)

    def body(fd):
        t0 = define(fd, x)
        scaled = fd.ops.mul(fd.ops.atan2(t0, t0), fd.define_scalar(-2.0, dtype=DataType.Double))
        fd.add_output(fd.ops.var(scaled, [1], correction=correction))

    fd = fusion_of(body)
    assert check_on_emulator(fd.fusion, [x]) == 1


def test_zero_size_segments_get_no_kernel_and_say_why():
    # fuzz seed 7: a kernel over a [0, 3] input divided an index by its zero extent.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(t0))
        fd.add_output(fd.ops.tanh(fd.ops.sum(t1, [0], keepdim=True)))
    empty, column = torch.empty(0, 3), torch.empty(0, 1)
    (fill, fill_tanh) = kernels_of(fd.fusion, [empty, column])
    # nvFuser's RemoveEmptyPass makes the empty relu and the sum over the empty dimension
    # fills (full); what is left has no concrete output dimension: no_op segments. The fill
    # alone computes nothing: no kernel. tanh of the other fill is computed, as nvFuser's
    # NoOp scheduler compiles it, by a pointwise kernel of one element.
    assert [segment.scheduler for segment, _ in (fill, fill_tanh)] == ["no_op", "no_op"]
    assert fill[1] == Unsupported("no_op segments run on ATen")
    assert isinstance(fill_tanh[1], Kernel) and fill_tanh[1].grid == (1, 1, 1)


@needs_gxx
def test_a_reduction_over_a_broadcast_dim_is_not_run_as_the_segments_row():
    # fuzz seed 294: prod over a size-1 dim that maps to the kernel's reduced loop was
    # accumulated over the whole row (3 factors instead of 1). The size-1 dim is symbolic: a
    # static one is a broadcast, whose prod nvFuser squeezes (a trivial reduction).
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
        t8 = fd.ops.prod(fd.ops.sigmoid(t0), dims=[0])
        t13 = fd.ops.broadcast(t8, is_broadcast_dim=[False, True])
        t15 = fd.ops.prod(fd.ops.sigmoid(t13), dims=[0], keepdim=True)
        fd.add_output(fd.ops.mul(fd.ops.cast(t0, DataType.Float), t15))
        fd.add_output(t8)
    x = torch.tensor([[0.48], [0.43], [-0.41]], dtype=torch.float16)
    check_on_emulator(fd.fusion, [x])  # any kernel generated must match the reference
    # the broadcast of the second prod meets t0 after the reductions: a pointwise segment of
    # its own, as nvFuser's hasPostReductionBCast makes it
    (segment, kernel), (after, _) = kernels_of(fd.fusion, [x])
    assert (segment.scheduler, after.scheduler) == ("reduction", "pointwise")
    assert kernel.reason == "T6 reduces a row of another length than T2's in segment 0"


class FailingCompiler(EmulatingExecutor):
    """NVRTC rejects every kernel (a generator bug, say)."""

    def _load(self, kernel: Kernel, device: torch.device) -> Kernel:
        raise nvrtc.CompileError(kernel.name, "error: identifier \"oops\" is undefined")


@pytest.mark.parametrize(("asked", "status", "code"), [("cupy", "error", 3), ("auto", "pass", 0)])
def test_a_kernel_that_fails_to_compile_is_an_error_when_cupy_was_asked_for(
    monkeypatch, asked, status, code
) -> None:
    from fusecli.app.pipeline import RunOptions, run_loaded
    from fusecli.runtime import registry

    monkeypatch.setattr(registry, "_made", {"cupy": FailingCompiler()})
    (loaded,) = load_path(CORPUS_DIR / "gelu_tanh.py", device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor=asked, device="cpu"))
    assert (outcome.status, outcome.exit_code) == (status, code)
    (segment,) = outcome.segments
    assert segment.executor == "aten"
    assert segment.fallback.startswith("the kernel failed to compile: NVRTC failed to compile")
    assert all(d.ok for d in outcome.outputs)  # ATen's values, still diffed
    if asked == "cupy":
        assert outcome.error.startswith("segment 0 (pointwise): the kernel failed to compile")


@needs_gxx
def test_an_index_select_kernel_reads_a_zero_dim_index():
    x, index = torch.randn(8, 16), torch.tensor(3)

    def body(fd):
        picked = fd.ops.index_select(define(fd, x), fd.from_pytorch(index), 1)
        fd.add_output(fd.ops.exp(picked))

    fd = fusion_of(body)
    assert check_on_emulator(fd.fusion, [x, index]) >= 1
