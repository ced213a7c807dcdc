"""fusecli's random stream is nvFuser's Philox4x32-10 (fusecli.ir.rng), drawn the same way by the
torch reference and by generated kernels (run here on the CPU emulator).

The torch implementation is checked against a scalar Philox written out below and Random123's
known-answer vectors; kernels against the torch reference bit for bit (uniform draws) or to a
few ulps (normal draws: libm's logf, sinf, cosf).
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import struct
from fractions import Fraction

import numpy as np
import pytest
import torch

from fusecli.codegen import Kernel, emulate, generate
from fusecli.codegen.kernel import ArgKind, KernelArg
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir import rng
from fusecli.ir.dtype import DataType
from fusecli.ir.rng import random_tensor
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import EnvironmentSizes, kernel_arguments
from fusecli.runtime.execute import execute_fusion
from fusecli.runtime.launch import rng_argument
from fusecli.segment.segmenter import segment_fusion

needs_gxx = pytest.mark.skipif(not emulate.available(), reason="g++ is not installed")
MASK = 2**32 - 1
FLOATS = [DataType.Float, DataType.BFloat16, DataType.Half, DataType.Double]


def philox_scalar(seed: int, subsequence: int, offset: int) -> list[int]:
    """Philox4x32-10 in Python integers: key (seed lo, hi), counter (offset lo, hi, subseq lo,
    hi); each round multiplies words 0 and 2, the key grows by the Weyl constants."""
    key = [seed & MASK, seed >> 32 & MASK]
    c = [offset & MASK, offset >> 32 & MASK, subsequence & MASK, subsequence >> 32 & MASK]
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ key[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ key[1], p0 & MASK]
        key = [(key[0] + 0x9E3779B9) & MASK, (key[1] + 0xBB67AE85) & MASK]
    return c


def _key_counter(key: list[int], counter: list[int]) -> tuple[int, int, int]:
    """Random123's (counter, key) words as (seed, subsequence, offset)."""
    return (key[0] | key[1] << 32, counter[2] | counter[3] << 32, counter[0] | counter[1] << 32)


# -- the stream --------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "counter", "expected"), [
    ([0, 0], [0, 0, 0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([MASK, MASK], [MASK] * 4, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0xA4093822, 0x299F31D0], [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_philox_gives_random123s_known_answers(key, counter, expected):
    seed, subsequence, offset = _key_counter(key, counter)
    assert philox_scalar(seed, subsequence, offset) == expected
    as_int64 = subsequence - 2**64 if subsequence >= 2**63 else subsequence  # the same bits
    assert rng.philox(seed, torch.tensor([as_int64]), offset).tolist() == [expected]


@pytest.mark.parametrize(("seed", "offset"), [
    (0, 0), (5, 1), (2**62 + 5, 3), (2**64 - 1, 2**64 - 1), (0x123456789ABCDEF0, 2**40 + 7),
])
def test_the_torch_philox_is_the_scalar_one(seed, offset):
    subsequences = [0, 1, 2, 3, 1000, 2**32 - 1, 2**32, 2**40 + 17, 2**63 - 1]
    words = rng.philox(seed, torch.tensor(subsequences), offset)
    assert words.tolist() == [philox_scalar(seed, s, offset) for s in subsequences]


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def test_uniform_elements_follow_nvfusers_definition():
    seed, offset, low, high = 2**40 + 9, 11, -1.5, 2.25
    floats = random_tensor("uniform", (3, 7), torch.float32, low, high, seed, offset).flatten()
    doubles = random_tensor("uniform", (3, 7), torch.float64, low, high, seed, offset).flatten()
    for i in range(21):
        word = philox_scalar(seed, i // 4, offset)[i % 4]
        u = float(np.float32(word) * np.float32(2**-32) + np.float32(2**-33))
        u = 0.0 if u == 1.0 else u
        range32 = _f32(_f32(high) - _f32(low))
        expected = _f32(float(Fraction(range32) * Fraction(u) + Fraction(_f32(low))))
        assert floats[i].item() == expected  # one rounding: a fused multiply-add
        words = philox_scalar(seed, i // 2, offset)
        z = words[2 * (i % 2)] ^ (words[2 * (i % 2) + 1] << 21)
        u = z * 2.0**-53 + 2.0**-54
        assert doubles[i].item() == float(Fraction(high - low) * Fraction(u) + Fraction(low))


def test_normal_elements_follow_box_muller():
    seed, offset = 77, 2**33
    floats = random_tensor("normal", (10,), torch.float32, 0.0, 1.0, seed, offset)
    doubles = random_tensor("normal", (6,), torch.float64, 0.5, 2.0, seed, offset)
    for i in range(10):
        words = philox_scalar(seed, i // 4, offset)
        pair = i % 4 // 2 * 2
        u, v = (float(np.float32(w) * np.float32(2**-32) + np.float32(2**-33))
                for w in words[pair:pair + 2])
        angle = _f32(v * _f32(6.2831855))
        expected = math.sqrt(-2 * math.log(u)) * (math.cos if i % 2 else math.sin)(angle)
        assert floats[i].item() == pytest.approx(expected, rel=1e-6, abs=1e-6)
    for i in range(6):
        w = philox_scalar(seed, i // 2, offset)
        u, v = ((x ^ (y << 21)) * 2.0**-53 + 2.0**-54 for x, y in (w[:2], w[2:]))
        normal = math.sqrt(-2 * math.log(u)) * (math.cos if i % 2 else math.sin)(v * 2 * math.pi)
        assert doubles[i].item() == pytest.approx(normal * 2.0 + 0.5, rel=1e-14, abs=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_a_million_draws_look_uniform_and_normal(dtype):
    n = 10**6
    uniform = random_tensor("uniform", (n,), dtype, 0.0, 1.0, 3, 4).double()
    assert 0.0 <= uniform.min().item() and uniform.max().item() < 1.0
    # Draws within half a step of 1 round to 1, which nvFuser makes 0: the mean drops by that.
    mean = 0.5 - torch.finfo(dtype).eps / 4
    assert uniform.mean().item() == pytest.approx(mean, abs=5 * (1 / 12 / n) ** 0.5)
    assert uniform.var().item() == pytest.approx(1 / 12, rel=0.01)
    for component in range(4):  # each Philox word draws alike
        assert uniform[component::4].mean().item() == pytest.approx(0.5, abs=0.003)
    normal = random_tensor("normal", (n,), dtype, 1.0, 2.0, 3, 5).double()
    assert normal.mean().item() == pytest.approx(1.0, abs=5 * 2 / n**0.5)
    assert normal.var().item() == pytest.approx(4.0, rel=0.01)
    assert abs(torch.corrcoef(torch.stack([normal[0::2], normal[1::2]]))[0, 1].item()) < 0.005


def test_seeds_are_64_bit_words():
    negative = random_tensor("uniform", (9,), torch.float32, 0.0, 1.0, -1, -2)
    assert torch.equal(negative, random_tensor("uniform", (9,), torch.float32, 0.0, 1.0,
                                               2**64 - 1, 2**64 - 2))
    assert not torch.equal(negative, random_tensor("uniform", (9,), torch.float32, 0.0, 1.0,
                                                   2**64 - 1, 2**64 - 3))


# -- generated kernels -------------------------------------------------------------------------


def emulated(fusion, inputs, seed: int, rewrite=lambda kernel: kernel) -> list[torch.Tensor]:
    """Every segment's generated kernel run on the emulator, in order; the fusion's outputs."""
    segmented = segment_fusion(fusion, inputs)
    assert segmented.ok
    fusion = segmented.fusion
    bindings = bind_inputs(fusion, inputs)
    ctx = ExecutionContext.for_fusion(fusion, device="cpu", seed=seed, faults=frozenset(),
                                      extents=bindings.extents)
    env = dict(bindings.values)
    for segment in segmented.segments:
        kernel = generate(segment, EnvironmentSizes(ctx, env),
                          [env[v.uid] for v in segment.inputs])
        assert isinstance(kernel, Kernel), kernel
        kernel = rewrite(kernel)
        values, outputs = kernel_arguments(kernel, env, ctx, torch.device("cpu"), poison=True)
        emulate.emulate(kernel, values)
        env.update(outputs)
    return [env[output.value.uid] for output in fusion.outputs]


def _random_fusion(dtype: DataType, distribution: str, shape: list[int]):
    """``uniform``/``normal`` unseeded and seeded by scalar inputs, ``rand_like``/``randn_like``
    of a tensor input: its outputs, and the (kind, first, second, offset) each draws."""
    make, like = {"uniform": ("uniform", "rand_like"), "normal": ("normal", "randn_like")}[
        distribution]
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), contiguity=[True] * len(shape),
                             dtype=dtype)
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        low, high = fd.define_scalar(-1.5), fd.define_scalar(2.25)
        fd.add_output(getattr(fd.ops, make)(low, high, shape, dtype=dtype))
        fd.add_output(getattr(fd.ops, like)(x))
        fd.add_output(getattr(fd.ops, make)(low, high, shape, rng_seed=seed, rng_offset=offset,
                                            dtype=dtype))
    return fd.fusion


@needs_gxx
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [[8, 64], [5, 37]], ids=str)
def test_kernel_uniform_draws_are_the_reference_bit_for_bit(dtype, shape):
    fusion = _random_fusion(dtype, "uniform", shape)
    x = torch.zeros(shape, dtype=dt.to_torch(dtype))
    seed, offset = 2**63 + 12345, 2**40 + 3
    outputs = emulated(fusion, [x, seed - 2**64, offset], seed=9)
    torch_dtype, size = dt.to_torch(dtype), tuple(shape)
    expected = [
        random_tensor("uniform", size, torch_dtype, -1.5, 2.25, 9, 0),
        random_tensor("uniform", size, torch_dtype, 0.0, 1.0, 9, 1),
        random_tensor("uniform", size, torch_dtype, -1.5, 2.25, seed, offset),
    ]
    for got, want in zip(outputs, expected, strict=True):
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(execute_fusion(fusion, [x, seed - 2**64, offset], seed=9)[2], expected[2])


@needs_gxx
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_kernel_normal_draws_are_the_reference_to_a_few_ulps(dtype):
    shape = [6, 40]
    fusion = _random_fusion(dtype, "normal", shape)
    x = torch.zeros(shape, dtype=dt.to_torch(dtype))
    outputs = emulated(fusion, [x, 4, 2**35], seed=2)
    torch_dtype, size = dt.to_torch(dtype), tuple(shape)
    expected = [
        random_tensor("normal", size, torch_dtype, -1.5, 2.25, 2, 0),
        random_tensor("normal", size, torch_dtype, 0.0, 1.0, 2, 1),
        random_tensor("normal", size, torch_dtype, -1.5, 2.25, 4, 2**35),
    ]
    ulp = {DataType.Double: 2**-52, DataType.Float: 2**-23}.get(dtype, 2**-7)
    for got, want in zip(outputs, expected, strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got.double(), want.double(), rtol=4 * ulp, atol=4 * ulp)


def _counting(kernel: Kernel) -> Kernel:
    """The kernel with a count of its Philox calls, ``philox_calls`` in the emulator."""
    source = kernel.source.replace(
        "struct PhiloxState {",
        'extern "C" { unsigned long long philox_calls = 0; }\nstruct PhiloxState {', 1,
    ).replace("  unsigned int key0 = (unsigned int)seed,",
              "  ++philox_calls;\n  unsigned int key0 = (unsigned int)seed,", 1)
    assert source.count("++philox_calls") == 1
    return dataclasses.replace(kernel, source=source)


def _philox_calls(fusion, inputs, seed: int) -> tuple[Kernel, int]:
    kernels = []
    emulated(fusion, inputs, seed=seed,
             rewrite=lambda k: kernels.append(_counting(k)) or kernels[-1])
    (kernel,) = kernels
    library = emulate._library(emulate.host_source(kernel))
    return kernel, ctypes.c_ulonglong.in_dll(library, "philox_calls").value


@needs_gxx
@pytest.mark.parametrize(("dtype", "per_call"), [
    (DataType.Float, 4), (DataType.BFloat16, 4), (DataType.Half, 4), (DataType.Double, 2),
])
def test_a_thread_draws_philox_once_per_four_consecutive_elements(dtype, per_call):
    """A vectorized loop's elements are a multiple of 4 (2 for double) plus a constant: the
    generator knows each one's subsequence and component and draws once per subsequence."""
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), [8, 64],
                                     dtype=dtype))
    (values,) = emulated(fd.fusion, [], seed=1)
    assert torch.equal(values, random_tensor("uniform", (8, 64), dt.to_torch(dtype), 0.0, 1.0,
                                             1, 0))
    kernel, calls = _philox_calls(fd.fusion, [], seed=1)
    assert "philox_draw(" in kernel.source and "PhiloxState t0_rng" not in kernel.source
    assert calls == 8 * 64 // per_call
    kinds = [p.kind for p in kernel.args]
    assert kinds == [ArgKind.RNG_SEED, ArgKind.RNG_OFFSET, ArgKind.OUTPUT]
    assert all(p.ctype == "unsigned long long" for p in kernel.args[:2])


@needs_gxx
def test_elements_at_indices_only_run_time_knows_keep_the_last_draw() -> None:
    """A transposed random output (its linear index strided through the loop) has no
    subsequence the generator knows: each random op keeps its last draw in a PhiloxState and
    draws again for a new subsequence."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        drawn = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), [6, 10],
                               dtype=DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.permute(drawn, [1, 0]), x))
    x = torch.randn(10, 6)
    (values,) = emulated(fd.fusion, [x], seed=3)
    want = random_tensor("uniform", (6, 10), torch.float32, 0.0, 1.0, 3, 0).permute(1, 0) + x
    assert torch.equal(values, want)
    kernel, calls = _philox_calls(fd.fusion, [x], seed=3)
    assert "PhiloxState t" in kernel.source and "rng_uniformf(" in kernel.source
    assert 60 // 4 <= calls <= 60


@needs_gxx
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_is_the_same_on_aten_and_in_the_kernel(dtype):
    x, residual = torch.randn(16, 96, dtype=dtype), torch.randn(16, 96, dtype=dtype)
    p = 0.1
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt.from_torch(dtype))
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt.from_torch(dtype))
        x32 = t0 if dtype is torch.float32 else fd.ops.cast(t0, DataType.Float)
        keep = fd.ops.lt(fd.ops.rand_like(x32), fd.define_scalar(1 - p))
        scaled = fd.ops.mul(fd.ops.where(keep, x32, fd.define_scalar(0.0)),
                            fd.define_scalar(1 / (1 - p)))
        out = fd.ops.add(scaled, t1 if dtype is torch.float32 else fd.ops.cast(t1, DataType.Float))
        fd.add_output(out if dtype is torch.float32 else fd.ops.cast(out, dt.from_torch(dtype)))
        fd.add_output(keep)
    aten = execute_fusion(fd.fusion, [x, residual], seed=123)
    kernel = emulated(fd.fusion, [x, residual], seed=123)
    for got, want in zip(kernel, aten, strict=True):
        assert got.dtype == want.dtype and torch.equal(got, want)
    kept = aten[1].double().mean().item()
    assert kept == pytest.approx(0.9, abs=0.03)


@needs_gxx
def test_a_reduction_kernel_draws_the_same_numbers():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.mul(fd.ops.rand_like(t0), t0), dims=[1]))
    x = torch.randn(12, 300)
    (got,) = emulated(fd.fusion, [x], seed=7)
    want = (random_tensor("uniform", (12, 300), torch.float32, 0.0, 1.0, 7, 0) * x).sum(dim=1)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


def test_rng_argument_is_the_given_scalar_or_the_executions_choice():
    with FusionDefinition() as fd:
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        one = fd.define_scalar(1.0)
        fd.add_output(fd.ops.uniform(one, one, [2], dtype=DataType.Float))
        fd.add_output(fd.ops.uniform(one, one, [2], rng_seed=seed, rng_offset=offset))
    fusion = fd.fusion
    unseeded, seeded = [e for e in fusion.exprs if e.op.value == "uniform"]
    bindings = bind_inputs(fusion, [-3, 2**40])
    ctx = ExecutionContext.for_fusion(fusion, device="cpu", seed=8, faults=frozenset())
    env = dict(bindings.values)

    def argument(kind, expr):
        param = KernelArg(kind, "T_seed", "unsigned long long", DataType.UInt64, expr.output,
                          expr=expr)
        return rng_argument(param, env, ctx)

    assert argument(ArgKind.RNG_SEED, unseeded) == 8
    assert argument(ArgKind.RNG_OFFSET, unseeded) == 0
    assert argument(ArgKind.RNG_SEED, seeded) == 2**64 - 3
    assert argument(ArgKind.RNG_OFFSET, seeded) == 2**40
