"""fusecli.runtime: every op on the ATen executor against hand-written eager torch.

Each test defines a fusion through the nvFuser frontend, runs ``execute_fusion`` on CPU tensors
and compares with the torch computation nvFuser's semantics call for (promotion included:
bfloat16 arithmetic comes back as float32, integer ``div`` truncates, ...).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from fusecli.errors import InputError, MissingEnvironmentError, PipelineError
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType
from fusecli.ir.rng import random_tensor
from fusecli.runtime import (
    ATEN_OPS,
    AtenExecutor,
    ExecutionContext,
    FaultInjectionWarning,
    corrupt,
    execute_fusion,
    faults,
    injected_faults,
    run_exprs,
)
from fusecli.runtime.bind import bind_inputs


def define(fd: FusionDefinition, tensor: torch.Tensor, static: bool = False):
    """An input shaped and strided like ``tensor`` (nvFuser's define_tensor(sizes, strides))."""
    return fd.define_tensor(
        sizes=list(tensor.shape), strides=list(tensor.stride()),
        dtype=dt.from_torch(tensor.dtype), static_sizes=static,
    )


def fusion_of(body: Callable[[FusionDefinition], None]) -> FusionDefinition:
    with FusionDefinition() as fd:
        body(fd)
    return fd


def run(body: Callable[[FusionDefinition], None], inputs: list, **kwargs) -> list[torch.Tensor]:
    return execute_fusion(fusion_of(body).fusion, inputs, **kwargs)


def assert_same(actual: torch.Tensor, expected: torch.Tensor, **tolerances) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    torch.testing.assert_close(actual, expected, equal_nan=True, **tolerances)


@pytest.fixture(autouse=True)
def _no_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)


torch.manual_seed(0)
X = torch.randn(3, 5)
POSITIVE = torch.rand(3, 5) + 0.1
UNIT = torch.rand(3, 5) * 1.8 - 0.9  # inside (-1, 1)


# -- unary ------------------------------------------------------------------------------------

UNARY_CASES = [
    ("abs", X, torch.abs), ("acos", UNIT, torch.acos), ("asin", UNIT, torch.asin),
    ("atan", X, torch.atan), ("atanh", UNIT, torch.atanh), ("cos", X, torch.cos),
    ("cosh", X, torch.cosh), ("exp", X, torch.exp), ("exp2", X, torch.exp2),
    ("expm1", X, torch.expm1), ("erf", X, torch.erf), ("erfc", X, torch.erfc),
    ("erfinv", UNIT, torch.erfinv), ("erfcinv", UNIT + 1, lambda x: torch.erfinv(1 - x)),
    ("lgamma", POSITIVE, torch.lgamma), ("log", POSITIVE, torch.log),
    ("log10", POSITIVE, torch.log10), ("log1p", POSITIVE, torch.log1p),
    ("log2", POSITIVE, torch.log2), ("reciprocal", POSITIVE, torch.reciprocal),
    ("rsqrt", POSITIVE, torch.rsqrt), ("sigmoid", X, torch.sigmoid), ("sin", X, torch.sin),
    ("sinh", X, torch.sinh), ("sqrt", POSITIVE, torch.sqrt), ("tan", UNIT, torch.tan),
    ("tanh", X, torch.tanh), ("neg", X, torch.neg), ("sign", X, torch.sign),
    ("ceil", X * 3, torch.ceil), ("floor", X * 3, torch.floor), ("frac", X * 3, torch.frac),
    ("relu", X, torch.relu), ("round", torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5]), torch.round),
    ("silu", X, F.silu), ("trunc", X * 3, torch.trunc), ("signbit", X, torch.signbit),
    ("isfinite", torch.tensor([1.0, math.inf, math.nan]), torch.isfinite),
    ("isinf", torch.tensor([1.0, -math.inf, math.nan]), torch.isinf),
    ("isnan", torch.tensor([1.0, math.inf, math.nan]), torch.isnan),
    ("isneginf", torch.tensor([1.0, -math.inf, math.inf]), torch.isneginf),
    ("isposinf", torch.tensor([1.0, -math.inf, math.inf]), torch.isposinf),
    ("logical_not", torch.tensor([0.0, 2.0, -1.0]), torch.logical_not),
    ("bitwise_not", torch.tensor([0, 5, -3]), torch.bitwise_not),
]


@pytest.mark.parametrize(("op", "x", "reference"), UNARY_CASES, ids=[c[0] for c in UNARY_CASES])
def test_unary_matches_torch(op: str, x: torch.Tensor, reference: Callable) -> None:
    def body(fd):
        fd.add_output(getattr(fd.ops, op)(define(fd, x)))

    (out,) = run(body, [x])
    assert_same(out, reference(x))


def test_bfloat16_unary_computes_and_returns_float() -> None:
    x = torch.randn(4, 6, dtype=torch.bfloat16)
    (out,) = run(lambda fd: fd.add_output(fd.ops.exp(define(fd, x))), [x])
    assert_same(out, torch.exp(x.float()))


def test_integer_exp_is_computed_in_float() -> None:
    x = torch.tensor([0, 1, 2])
    (out,) = run(lambda fd: fd.add_output(fd.ops.exp(define(fd, x))), [x])
    assert_same(out, torch.exp(x.float()))


# -- binary -----------------------------------------------------------------------------------

A = torch.randn(4, 3)
B = torch.randn(4, 3) + 0.1
IA = torch.tensor([7, -7, 7, -7, 0, 9])
IB = torch.tensor([2, 2, -2, -2, 3, -4])

BINARY_CASES = [
    ("add", A, B, torch.add), ("sub", A, B, torch.sub), ("mul", A, B, torch.mul),
    ("div", A, B, torch.div), ("truediv", A, B, torch.true_divide),
    ("atan2", A, B, torch.atan2), ("pow", A.abs(), B, torch.pow),
    ("minimum", torch.tensor([1.0, math.nan, 3.0]), torch.tensor([2.0, 1.0, math.nan]),
     torch.minimum),
    ("maximum", torch.tensor([1.0, math.nan, 3.0]), torch.tensor([2.0, 1.0, math.nan]),
     torch.maximum),
    ("nextafter", A, B, torch.nextafter),
    ("eq", IA, IB, torch.eq), ("ne", IA, IB, torch.ne), ("lt", A, B, torch.lt),
    ("le", IA, IB, torch.le), ("gt", A, B, torch.gt), ("ge", IA, IB, torch.ge),
    # integers: C-style division truncates; fmod (and mod) takes the dividend's sign,
    # remainder the divisor's
    ("div", IA, IB, lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("fmod", IA, IB, torch.fmod), ("mod", IA, IB, torch.fmod),
    ("remainder", IA, IB, torch.remainder),
    ("fmod", A * 5, B, torch.fmod), ("remainder", A * 5, B, torch.remainder),
    ("bitwise_and", IA, IB, torch.bitwise_and), ("bitwise_or", IA, IB, torch.bitwise_or),
    ("bitwise_xor", IA, IB, torch.bitwise_xor), ("gcd", IA, IB, torch.gcd),
    ("bitwise_left_shift", IA, IB.abs(), torch.bitwise_left_shift),
    ("bitwise_right_shift", IA, IB.abs(), torch.bitwise_right_shift),
    ("logical_and", torch.tensor([True, True, False]), torch.tensor([True, False, False]),
     torch.logical_and),
    ("logical_or", torch.tensor([True, True, False]), torch.tensor([True, False, False]),
     torch.logical_or),
]


@pytest.mark.parametrize(
    ("op", "a", "b", "reference"), BINARY_CASES,
    ids=[f"{c[0]}-{str(c[1].dtype).removeprefix('torch.')}" for c in BINARY_CASES],
)
def test_binary_matches_torch(op: str, a: torch.Tensor, b: torch.Tensor, reference) -> None:
    def body(fd):
        fd.add_output(getattr(fd.ops, op)(define(fd, a), define(fd, b)))

    (out,) = run(body, [a, b])
    assert_same(out, reference(a, b))


def test_integer_division_truncates_toward_zero() -> None:
    a, b = torch.tensor([-7, 7, -1]), torch.tensor([2, -2, 3])
    (out,) = run(lambda fd: fd.add_output(define(fd, a) / define(fd, b)), [a, b])
    assert out.tolist() == [-3, -3, 0]


def test_logical_right_shift_fills_with_zeros() -> None:
    a = torch.tensor([-8, 8, -1, -8], dtype=torch.int64)
    shift = torch.tensor([1, 1, 0, 64], dtype=torch.int64)

    def body(fd):
        fd.add_output(fd.ops.logical_right_shift(define(fd, a), define(fd, shift)))

    (out,) = run(body, [a, shift])
    assert out.tolist() == [(2**64 - 8) >> 1, 4, -1, 0]


def test_logical_right_shift_int32() -> None:
    a = torch.tensor([-8, 16], dtype=torch.int32)
    shift = torch.tensor([28, 2], dtype=torch.int32)

    def body(fd):
        fd.add_output(fd.ops.logical_right_shift(define(fd, a), define(fd, shift)))

    (out,) = run(body, [a, shift])
    assert out.dtype is torch.int32
    assert out.tolist() == [(2**32 - 8) >> 28, 4]


def test_bfloat16_add_returns_float32() -> None:
    a, b = torch.randn(2, 3, dtype=torch.bfloat16), torch.randn(2, 3, dtype=torch.bfloat16)
    (out,) = run(lambda fd: fd.add_output(fd.ops.add(define(fd, a), define(fd, b))), [a, b])
    assert_same(out, a.float() + b.float())


def test_tensor_and_scalar_operands() -> None:
    x = torch.randn(3, 4)
    ints = torch.tensor([1, 2, 3])

    def body(fd):
        t0, t1 = define(fd, x), define(fd, ints)
        s_const = fd.define_scalar(2.5, dtype=DataType.Double)
        s_input = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(t0, s_const))  # Float tensor dominates: Float
        fd.add_output(fd.ops.mul(t1, s_const))  # Int tensor, Double scalar: Double
        fd.add_output(fd.ops.sub(s_input, t0))
        fd.add_output(fd.ops.pow(t0, fd.define_scalar(2, dtype=DataType.Int)))

    outs = run(body, [x, ints, 0.75])
    assert_same(outs[0], x * 2.5)
    assert_same(outs[1], ints.double() * 2.5)
    assert_same(outs[2], 0.75 - x)
    assert_same(outs[3], x * x)


def test_scalar_arithmetic_feeds_shapes() -> None:
    x = torch.randn(6, 4)

    def body(fd):
        t0 = define(fd, x)
        rows = fd.ops.size(t0, dim=0)
        half = fd.ops.div(rows, fd.define_scalar(2, dtype=DataType.Int))
        fd.add_output(fd.ops.reshape(t0, [half, -1]))
        fd.add_output(fd.ops.mul(half, fd.define_scalar(3, dtype=DataType.Int)))

    reshaped, scalar = run(body, [x])
    assert_same(reshaped, x.reshape(3, 8))
    assert scalar.dim() == 0 and scalar.dtype is torch.int64 and scalar.item() == 9


# -- ternary ------------------------------------------------------------------------------------


def test_ternary_ops() -> None:
    x, y, w = torch.randn(3, 4), torch.randn(3, 4), torch.rand(3, 4)
    cond = x > 0

    def body(fd):
        t_cond, t_x, t_y, t_w = define(fd, cond), define(fd, x), define(fd, y), define(fd, w)
        lo = fd.define_scalar(-0.5, dtype=DataType.Float)
        hi = fd.define_scalar(0.5, dtype=DataType.Float)
        fd.add_output(fd.ops.where(t_cond, t_x, t_y))
        fd.add_output(fd.ops.lerp(t_x, t_y, t_w))
        fd.add_output(fd.ops.clamp(t_x, lo, hi))
        fd.add_output(fd.ops.threshold(t_x, lo, hi))
        fd.add_output(fd.ops.addcmul(t_x, t_y, t_w, hi))
        fd.add_output(fd.ops.add_alpha(t_x, t_y, hi))
        fd.add_output(fd.ops.sub_alpha(t_x, t_y, hi))

    outs = run(body, [cond, x, y, w])
    assert_same(outs[0], torch.where(cond, x, y))
    assert_same(outs[1], torch.lerp(x, y, w))
    assert_same(outs[2], x.clamp(-0.5, 0.5))
    assert_same(outs[3], torch.where(x <= -0.5, 0.5, x))
    assert_same(outs[4], torch.addcmul(x, y, w, value=0.5))
    assert_same(outs[5], x + 0.5 * y)
    assert_same(outs[6], x - 0.5 * y)


def test_where_with_scalar_branches_keeps_their_dtype() -> None:
    cond = torch.tensor([True, False, True])

    def body(fd):
        fd.add_output(
            fd.ops.where(define(fd, cond), fd.define_scalar(3.0), fd.define_scalar(5.0))
        )

    (out,) = run(body, [cond])
    assert_same(out, torch.tensor([3.0, 5.0, 3.0], dtype=torch.float64))


def test_cast() -> None:
    x = torch.tensor([1.7, -2.5, 0.0, 3.2])

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.cast(t0, DataType.Int))
        fd.add_output(fd.ops.cast(t0, DataType.Bool))
        fd.add_output(fd.ops.cast(t0, DataType.BFloat16))

    as_int, as_bool, as_bf16 = run(body, [x])
    assert_same(as_int, x.long())
    assert_same(as_bool, x.bool())
    assert_same(as_bf16, x.bfloat16())


# -- reductions and friends -------------------------------------------------------------------

R = torch.randn(2, 3, 4)


def test_sum_over_dims_and_keepdim() -> None:
    def body(fd):
        t0 = define(fd, R)
        fd.add_output(fd.ops.sum(t0, dims=[0, 2]))
        fd.add_output(fd.ops.sum(t0, dims=[1], keepdim=True))
        fd.add_output(fd.ops.sum(t0))

    over_two, kept, everything = run(body, [R])
    assert_same(over_two, R.sum(dim=(0, 2)))
    assert_same(kept, R.sum(dim=1, keepdim=True))
    assert_same(everything, R.sum())


def test_integer_and_bool_sums_accumulate_in_int64() -> None:
    ints = torch.randint(-5, 5, (3, 4), dtype=torch.int32)
    flags = torch.rand(3, 4) > 0.5

    def body(fd):
        fd.add_output(fd.ops.sum(define(fd, ints), dims=[1]))
        fd.add_output(fd.ops.sum(define(fd, flags), dims=[0]))

    int_sum, bool_sum = run(body, [ints, flags])
    assert_same(int_sum, ints.sum(dim=1))
    assert int_sum.dtype is torch.int64
    assert_same(bool_sum, flags.sum(dim=0))


def test_prod_max_min_and_sum_dtype() -> None:
    x = torch.rand(2, 3, 4) + 0.5

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.prod(t0, dims=[0, 2]))
        fd.add_output(fd.ops.max(t0, dims=[1]))
        fd.add_output(fd.ops.min(t0, dims=[0, 1], keepdim=True))
        fd.add_output(fd.ops.sum(t0, dims=[2], dtype=DataType.Double))

    prod, maximum, minimum, summed = run(body, [x])
    assert_same(prod, x.prod(dim=2).prod(dim=0))
    assert_same(maximum, x.amax(dim=1))
    assert_same(minimum, x.amin(dim=(0, 1), keepdim=True))
    assert_same(summed, x.double().sum(dim=2))


def test_var_var_mean_and_welford() -> None:
    def body(fd):
        t0 = define(fd, R)
        fd.add_output(fd.ops.var(t0, dims=[1], correction=0))
        var, mean = fd.ops.var_mean(t0, dims=[0, 2], correction=1, keepdim=True)
        fd.add_output(var)
        fd.add_output(mean)
        for out in fd.ops.welford(t0, dims=[2]):
            fd.add_output(out)

    var0, var1, mean1, avg, m2, count = run(body, [R])
    assert_same(var0, R.var(dim=1, correction=0))
    expected_var, expected_mean = torch.var_mean(R, dim=(0, 2), correction=1, keepdim=True)
    assert_same(var1, expected_var)
    assert_same(mean1, expected_mean)
    assert_same(avg, R.mean(dim=2))
    assert_same(m2, ((R - R.mean(dim=2, keepdim=True)) ** 2).sum(dim=2))
    assert_same(count, torch.full((2, 3), 4, dtype=torch.int64))


def test_a_var_mean_of_a_var_means_variance_reads_its_translation() -> None:
    """Random fusion 1404: var_mean over all dims, then var_mean of that variance. Both become
    two passes (TranslateApplicableWelford); the second's sum and sizes read the first's new
    variance, not the var_mean output no expr defines any more (fd.execute failed: "operand
    ... has not been computed")."""
    x = torch.randn(3, 4, 5, dtype=torch.float64)

    def body(fd):
        var, _ = fd.ops.var_mean(define(fd, x), dims=[0, 1], correction=1)
        again, mean = fd.ops.var_mean(var, dims=[0], correction=0)
        fd.add_output(fd.ops.sub(var, var))
        fd.add_output(fd.ops.mul(again, mean))

    zero, product = fusion_of(body).execute([x])  # segmented, as fd.execute runs it
    var = x.var(dim=(0, 1), correction=1)
    again, mean = torch.var_mean(var, dim=0, correction=0)
    assert_same(zero, var - var)
    assert_same(product, again * mean)


def test_var_mean_of_half_is_computed_in_float() -> None:
    x = torch.randn(2, 1, 2, dtype=torch.float16)

    def body(fd):
        t0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True],
                              dtype=DataType.Half)
        var, mean = fd.ops.var_mean(fd.ops.cast(t0, DataType.Float), dims=[1], correction=1)
        fd.add_output(fd.ops.cast(var, DataType.Half))
        fd.add_output(fd.ops.cast(mean, DataType.Half))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # var with one element and correction 1: NaN, as torch
        var, mean = run(body, [x])
        expected_var, expected_mean = torch.var_mean(x.float(), dim=1, correction=1)
    assert_same(var, expected_var.half())
    assert_same(mean, expected_mean.half())


def test_cumsum_argsort_topk() -> None:
    x = torch.tensor([[3.0, 1.0, 2.0, 5.0], [0.5, 4.0, -1.0, 2.5]])
    ints = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.cumsum(t0, dim=1))
        fd.add_output(fd.ops.cumsum(define(fd, ints), dim=0))
        fd.add_output(fd.ops.argsort(t0, dim=1, descending=True, stable=True))
        values, indices = fd.ops.topk(t0, fd.define_scalar(2, dtype=DataType.Int), dim=1,
                                      largest=True, sorted=True)
        fd.add_output(values)
        fd.add_output(indices)

    summed, int_summed, order, values, indices = run(body, [x, ints])
    assert_same(summed, x.cumsum(dim=1))
    assert_same(int_summed, ints.cumsum(dim=0))
    assert int_summed.dtype is torch.int64
    assert_same(order, torch.argsort(x, dim=1, descending=True, stable=True))
    expected_values, expected_indices = torch.topk(x, 2, dim=1, largest=True, sorted=True)
    assert_same(values, expected_values)
    assert_same(indices, expected_indices)


# -- shape ops --------------------------------------------------------------------------------


def test_broadcast_in_dim_and_broadcast() -> None:
    v = torch.randn(3)

    def body(fd):
        t0 = define(fd, v)
        fd.add_output(fd.ops.broadcast_in_dim(t0, shape=[2, 3, 4], broadcast_dims=[1]))
        fd.add_output(fd.ops.broadcast(t0, [True, False, True]))

    expanded, inserted = run(body, [v])
    assert_same(expanded, v.reshape(1, 3, 1).expand(2, 3, 4))
    assert expanded.stride()[0] == 0 and expanded.stride()[2] == 0  # nvFuser: not allocated
    assert_same(inserted, v.reshape(1, 3, 1))


def test_expand_and_stride_zero_inputs() -> None:
    base = torch.randn(3, 1)
    stride_zero = base.expand(3, 4)  # strides (1, 0): an expanded broadcast input

    def body(fd):
        t0 = define(fd, stride_zero)
        t1 = define(fd, base)
        fd.add_output(fd.ops.add(t0, fd.ops.expand(t1, [3, 4])))
        fd.add_output(fd.ops.sum(t0, dims=[1]))

    added, summed = run(body, [stride_zero, base])
    assert_same(added, stride_zero * 2)
    assert_same(summed, stride_zero.sum(dim=1))


def test_reshape_permute_squeeze() -> None:
    x = torch.randn(2, 3, 4)
    y = torch.randn(3, 1, 4)

    def body(fd):
        t0, t1 = define(fd, x), define(fd, y)
        fd.add_output(fd.ops.reshape(t0, [4, -1]))
        fd.add_output(fd.ops.permute(t0, [2, 0, 1]))
        fd.add_output(fd.ops.squeeze(t1, [1]))

    reshaped, permuted, squeezed = run(body, [x, y])
    assert_same(reshaped, x.reshape(4, 6))
    assert_same(permuted, x.permute(2, 0, 1))
    assert permuted.is_contiguous()  # materialized, not a view of the input
    assert_same(squeezed, y.squeeze(1))


def test_squeeze_expanded_dimension() -> None:
    x = torch.randn(3, 1).expand(3, 5)

    def body(fd):
        fd.add_output(fd.ops.squeeze(define(fd, x), [1], squeeze_expanded=True))

    (out,) = run(body, [x])
    assert_same(out, x[:, 0])


def test_slice_with_negative_indices() -> None:
    x = torch.randn(5, 6)

    def body(fd):
        # negative bounds known at run time (constant ones are refused, as nvFuser refuses them)
        t0, t1 = define(fd, x), define(fd, x, static=True)
        lo, hi, four, two, far = (fd.define_scalar(dtype=DataType.Int) for _ in range(5))
        fd.add_output(fd.ops.slice(t0, [lo, 1], [5, hi]))
        fd.add_output(fd.ops.slice(t1, [lo, 1], [5, hi]))
        fd.add_output(fd.ops.slice(t0, [four, far], [two, 100]))
        fd.add_output(fd.ops.slice(t0, [1, 0], [3, 6], manual_normalization=True))

    tail, static_tail, clamped, manual = run(body, [x, x, -3, -1, 4, 2, -100])
    assert_same(tail, x[-3:5, 1:-1])
    assert_same(static_tail, x[-3:5, 1:-1])
    assert_same(clamped, x[4:2, -100:100])
    assert_same(manual, x[1:3, :])


def test_slice_with_dynamic_indices() -> None:
    x = torch.randn(5, 6)

    def body(fd):
        t0 = define(fd, x)
        start = fd.define_scalar(dtype=DataType.Int)
        stop = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.slice(t0, [start, 0], [stop, 6]))

    (out,) = run(body, [x, 1, 4])
    assert_same(out, x[1:4])


def test_pad_including_negative_widths() -> None:
    x = torch.randn(3, 4)

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.pad(t0, [1, 2]))
        fd.add_output(fd.ops.pad(t0, [-1, 2, 1, -2], fd.define_scalar(7.0)))

    padded, cropped = run(body, [x])
    assert_same(padded, F.pad(x, [1, 2]))
    assert_same(cropped, F.pad(x, [-1, 2, 1, -2], value=7.0))


def test_cat_of_operands_cast_to_one_dtype() -> None:
    """nvFuser's cat does not promote (operands of two dtypes are refused at definition)."""
    a, b = torch.randn(2, 3), torch.randn(2, 5, dtype=torch.float64)

    def body(fd):
        widened = fd.ops.cast(define(fd, a), DataType.Double)
        fd.add_output(fd.ops.cat([widened, define(fd, b)], dim=-1))

    (out,) = run(body, [a, b])
    assert_same(out, torch.cat([a.double(), b], dim=-1))


# -- indexing ---------------------------------------------------------------------------------


def test_index_select_select_gather_take_along_axis() -> None:
    x = torch.randn(4, 5)
    index = torch.tensor([3, 0, 3])
    gather_index = torch.tensor([[0, 4], [1, 1], [2, 0]])
    along = torch.tensor([[0], [4], [2], [1]])

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.index_select(t0, define(fd, index), dim=0))
        fd.add_output(fd.ops.select(t0, fd.define_scalar(2, dtype=DataType.Int), dim=1))
        fd.add_output(fd.ops.gather(t0, define(fd, gather_index), dim=1))
        fd.add_output(fd.ops.take_along_axis(t0, define(fd, along), dim=1))

    selected_rows, column, gathered, taken = run(body, [x, index, gather_index, along])
    assert_same(selected_rows, x.index_select(0, index))
    assert_same(column, x[:, 2])
    assert_same(gathered, torch.gather(x, 1, gather_index))
    assert_same(taken, torch.take_along_dim(x, along, dim=1))


def test_gather_with_int32_index() -> None:
    x = torch.randn(3, 4)
    index = torch.tensor([[0, 3], [1, 2]], dtype=torch.int32)

    def body(fd):
        fd.add_output(fd.ops.gather(define(fd, x), define(fd, index), dim=1))

    (out,) = run(body, [x, index])
    assert_same(out, torch.gather(x, 1, index.long()))


def test_scatter_with_tensor_and_scalar_source() -> None:
    x = torch.zeros(3, 4)
    index = torch.tensor([[1, 0], [3, 2], [0, 1]])
    src = torch.randn(3, 2)

    def body(fd):
        t0, t1 = define(fd, x), define(fd, index)
        fd.add_output(fd.ops.scatter(t0, t1, define(fd, src), dim=1))
        fd.add_output(fd.ops.scatter(t0, t1, fd.define_scalar(2.0, dtype=DataType.Float), dim=1))

    from_tensor, from_scalar = run(body, [x, index, src])
    assert_same(from_tensor, torch.scatter(x, 1, index, src))
    assert_same(from_scalar, torch.scatter(x, 1, index, 2.0))
    assert x.abs().sum() == 0  # out of place


def test_embedding_fwd() -> None:
    indices = torch.tensor([[0, 2], [4, 2]])
    weight = torch.randn(5, 3)

    def body(fd):
        fd.add_output(fd.ops.embedding_fwd(define(fd, indices), define(fd, weight),
                                           None, None, None, None, None))
        fd.add_output(fd.ops.embedding_fwd(define(fd, indices), define(fd, weight),
                                           fd.define_scalar(2, dtype=DataType.Int),
                                           None, None, None, None))

    plain, padded = run(body, [indices, weight, indices, weight])
    assert_same(plain, F.embedding(indices, weight))
    assert_same(padded, F.embedding(indices, weight, padding_idx=2))


# -- creation and random numbers ----------------------------------------------------------------


def test_full_and_iota() -> None:
    def body(fd):
        fd.add_output(fd.ops.full([2, 3], fd.define_scalar(1.5), DataType.BFloat16))
        fd.add_output(fd.ops.iota(fd.define_scalar(5, dtype=DataType.Int),
                                  fd.define_scalar(2, dtype=DataType.Int),
                                  fd.define_scalar(3, dtype=DataType.Int), DataType.Int))
        fd.add_output(fd.ops.iota(fd.define_scalar(4, dtype=DataType.Int),
                                  fd.define_scalar(0.5, dtype=DataType.Float),
                                  fd.define_scalar(0.25, dtype=DataType.Float), DataType.Float))

    filled, ints, floats = run(body, [], device="cpu")
    assert_same(filled, torch.full((2, 3), 1.5, dtype=torch.bfloat16))
    assert_same(ints, torch.tensor([2, 5, 8, 11, 14]))
    assert_same(floats, torch.tensor([0.5, 0.75, 1.0, 1.25]))


def test_uniform_is_deterministic_and_follows_the_shared_stream() -> None:
    def body(fd):
        low, high = fd.define_scalar(-1.0), fd.define_scalar(1.0)
        fd.add_output(fd.ops.uniform(low, high, [3, 4], dtype=DataType.Float))
        fd.add_output(fd.ops.normal(low, high, [5], dtype=DataType.Double))
        seed = fd.define_scalar(dtype=DataType.Int)
        offset = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.uniform(low, high, [2], rng_seed=seed, rng_offset=offset,
                                     dtype=DataType.Float))

    fd = fusion_of(body)
    first = execute_fusion(fd.fusion, [42, 7], seed=3, device="cpu")
    again = execute_fusion(fd.fusion, [42, 7], seed=3, device="cpu")
    other_seed = execute_fusion(fd.fusion, [42, 7], seed=4, device="cpu")
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    assert not torch.equal(first[0], other_seed[0])
    assert torch.equal(first[2], other_seed[2])  # seeded: the execution seed does not matter
    assert_same(first[0], random_tensor("uniform", (3, 4), torch.float32, -1.0, 1.0, 3, 0))
    assert_same(first[1], random_tensor("normal", (5,), torch.float64, -1.0, 1.0, 3, 1))
    assert_same(first[2], random_tensor("uniform", (2,), torch.float32, -1.0, 1.0, 42, 7))
    assert first[0].min() >= -1 and first[0].max() <= 1


def test_rand_like_in_a_segment_matches_the_whole_fusion() -> None:
    x = torch.randn(3, 3)

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.randn_like(t0))
        fd.add_output(fd.ops.add(fd.ops.rand_like(t0), t0))

    fusion = fusion_of(body).fusion
    whole = execute_fusion(fusion, [x], seed=5)
    ctx = ExecutionContext.for_fusion(fusion, device="cpu", seed=5)
    env = dict(bind_inputs(fusion, [x]).values)
    second_random = fusion.exprs[1:]  # the segment without the first random expr
    run_exprs(fusion, second_random, env, ctx, "aten")
    assert torch.equal(env[fusion.outputs[1].value.uid], whole[1])
    assert_same(whole[1] - x, random_tensor("uniform", (3, 3), torch.float32, 0.0, 1.0, 5, 1))


def test_run_exprs_names_a_missing_segment_input() -> None:
    x = torch.randn(3)

    def body(fd):
        fd.add_output(fd.ops.exp(fd.ops.neg(define(fd, x))))

    fusion = fusion_of(body).fusion
    ctx = ExecutionContext.for_fusion(fusion, device="cpu")
    env = dict(bind_inputs(fusion, [x]).values)
    with pytest.raises(PipelineError, match=r"expr 1 \(exp\) reads .* expr 0 \(neg\)"):
        run_exprs(fusion, fusion.exprs[1:], env, ctx, AtenExecutor())


# -- matmul, linear, attention ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
     ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (6, 4, 2))],
)
def test_matmul(a_shape: tuple, b_shape: tuple) -> None:
    a, b = torch.randn(a_shape), torch.randn(b_shape)
    (out,) = run(lambda fd: fd.add_output(fd.ops.matmul(define(fd, a), define(fd, b))), [a, b])
    assert_same(out, torch.matmul(a, b))


def test_matmul_bfloat16_keeps_the_input_dtype() -> None:
    a, b = torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(16, 4, dtype=torch.bfloat16)
    (out,) = run(lambda fd: fd.add_output(fd.ops.matmul(define(fd, a), define(fd, b))), [a, b])
    assert_same(out, torch.matmul(a, b))


def test_linear_with_and_without_bias() -> None:
    x, weight, bias = torch.randn(2, 3, 4), torch.randn(5, 4), torch.randn(5)

    def body(fd):
        t0, t1, t2 = define(fd, x), define(fd, weight), define(fd, bias)
        fd.add_output(fd.ops.linear(t0, t1))
        fd.add_output(fd.ops.linear(t0, t1, t2))

    plain, biased = run(body, [x, weight, bias])
    assert_same(plain, F.linear(x, weight))
    assert_same(biased, F.linear(x, weight, bias))


@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpfa_fwd_matches_scaled_dot_product_attention(is_causal: bool) -> None:
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 6)

    def body(fd):
        tq, tk, tv = define(fd, q), define(fd, k), define(fd, v)
        outs = fd.ops.sdpfa_fwd(tq, tk, tv, None, None, fd.define_scalar(0.0),
                                fd.define_scalar(is_causal), None)
        for out in outs:
            fd.add_output(out)

    out, logsumexp, seed, offset = run(body, [q, k, v])
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    assert_same(out, expected, atol=1e-5, rtol=1e-4)
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    if is_causal:
        scores = scores.masked_fill(~torch.ones(5, 7, dtype=torch.bool).tril(), -math.inf)
    assert_same(logsumexp, torch.logsumexp(scores, dim=-1), atol=1e-5, rtol=1e-4)
    # torch >= 2.7's flash attention state: rng_state uint64[2], an unused uint64 scalar
    assert seed.shape == (2,) and offset.shape == () and seed.dtype is torch.uint64


def test_sdpfa_fwd_with_scale_and_bfloat16() -> None:
    q, k, v = (torch.randn(1, 2, 4, 8, dtype=torch.bfloat16) for _ in range(3))

    def body(fd):
        tq, tk, tv = define(fd, q), define(fd, k), define(fd, v)
        out, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, scale=fd.define_scalar(0.5))
        fd.add_output(out)

    (out,) = run(body, [q, k, v])
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=0.5)
    assert_same(out, expected.bfloat16(), atol=2e-2, rtol=2e-2)


def test_triu() -> None:
    x = torch.randn(2, 4, 4)

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.triu(t0))
        fd.add_output(fd.ops.triu(t0, 1))

    upper, strictly_upper = run(body, [x])
    assert_same(upper, torch.triu(x))
    assert_same(strictly_upper, torch.triu(x, 1))


# -- outputs ----------------------------------------------------------------------------------


def test_alias_output_writes_the_input_and_is_hidden() -> None:
    x = torch.randn(3, 4)
    original = x.clone()

    def body(fd):
        t0 = define(fd, x)
        t1 = fd.ops.exp(t0)
        fd.add_output(t1, t0)  # written into T0, hidden
        fd.add_output(fd.ops.neg(t0))

    outputs = run(body, [x])
    assert len(outputs) == 1
    assert_same(outputs[0], -original)  # computed from the input's value before the write
    assert_same(x, torch.exp(original))


def test_output_that_is_an_input_is_a_copy() -> None:
    x = torch.randn(3, 4)

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(t0)
        fd.add_output(fd.ops.set(t0))
        fd.add_output(fd.ops.slice(t0, [0, 0], [2, 4]))

    same, copied, sliced = run(body, [x])
    for out in (same, copied, sliced):
        assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert_same(same, x)
    assert_same(sliced, x[:2])
    assert same.untyped_storage().data_ptr() != copied.untyped_storage().data_ptr()


def test_add_output_stride_order_sets_the_layout() -> None:
    x = torch.randn(2, 3, 4)

    def body(fd):
        t1 = fd.ops.exp(define(fd, x))
        fd.add_output(t1, stride_order=[0, 1, 2])  # dim 0 innermost
        fd.add_output(fd.ops.stride_order(t1, [1, 2, 0]))

    reversed_layout, rotated = run(body, [x])
    assert_same(reversed_layout, torch.exp(x))
    assert reversed_layout.stride() == (1, 2, 6)
    assert_same(rotated, torch.exp(x))
    assert rotated.stride() == (4, 8, 1)


def test_seed_fusion_nvfuser_issue_2127() -> None:
    """/work/shared/seeds/nvfuser-issue-2127.txt: permute, reshape, matmul, reshape, permute."""

    def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
        T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                              dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
        T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16,
                              is_cpu=False, stride_order=[1, 0])
        T2 = fd.ops.permute(T1, dims=[1, 0])
        T3 = fd.ops.permute(T0, dims=[2, 1, 0])
        S4 = fd.define_scalar(16, dtype=DataType.Int)
        S5 = fd.define_scalar(32, dtype=DataType.Int)
        V6 = fd.define_vector([S4, S5], dtype=DataType.Int)
        T7 = fd.ops.reshape(T3, new_shape=V6)
        T8 = fd.ops.matmul(T2, T7)
        S9 = fd.define_scalar(16, dtype=DataType.Int)
        S10 = fd.define_scalar(16, dtype=DataType.Int)
        S11 = fd.define_scalar(2, dtype=DataType.Int)
        V12 = fd.define_vector([S9, S10, S11], dtype=DataType.Int)
        T13 = fd.ops.reshape(T8, new_shape=V12)
        T14 = fd.ops.permute(T13, dims=[2, 1, 0])
        fd.add_output(T14)

    inputs = [
        torch.randn((512,), dtype=torch.bfloat16).as_strided((2, 16, 16), (256, 16, 1)),
        torch.randn((256,), dtype=torch.bfloat16).as_strided((16, 16), (16, 1)),
    ]
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    (out,) = fd.execute(inputs)
    t0, t1 = inputs
    expected = torch.matmul(t1.permute(1, 0), t0.permute(2, 1, 0).reshape(16, 32))
    assert_same(out, expected.reshape(16, 16, 2).permute(2, 1, 0))


# -- executors and errors ---------------------------------------------------------------------


def test_executor_names() -> None:
    x = torch.randn(2)
    fusion = fusion_of(lambda fd: fd.add_output(fd.ops.exp(define(fd, x)))).fusion
    assert_same(execute_fusion(fusion, [x], executor="auto")[0], torch.exp(x))
    with pytest.raises(MissingEnvironmentError, match="the cupy executor is not available"):
        execute_fusion(fusion, [x], executor="cupy")
    with pytest.raises(InputError, match="unknown executor 'tvm'.*aten"):
        execute_fusion(fusion, [x], executor="tvm")


def test_op_failure_names_the_expr() -> None:
    x = torch.randn(2, 3)

    def body(fd):
        t0 = define(fd, x)
        size = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.reshape(fd.ops.exp(t0), [size, 4]))

    # The element count is known once the scalar is bound: refused then, before any op runs.
    with pytest.raises(
        InputError,
        match=r"^reshape \(expr 1\): Total element counts across view operation must match: "
        r"6 vs 20",
    ):
        run(body, [x, 5])


def test_every_op_has_an_aten_entry() -> None:
    assert set(AtenExecutor().ops) == set(OpType)


def test_results_are_checked_against_the_ir_shape() -> None:
    """An entry overridden to return a wrong shape is caught, naming the expr."""
    x = torch.randn(3, 4)
    fusion = fusion_of(lambda fd: fd.add_output(fd.ops.exp(define(fd, x)))).fusion
    truncating = AtenExecutor(ops={**ATEN_OPS, OpType.exp: lambda expr, args, ctx: (args[0][:1],)})
    ctx = ExecutionContext.for_fusion(fusion, extents=bind_inputs(fusion, [x]).extents)
    env = dict(bind_inputs(fusion, [x]).values)
    with pytest.raises(PipelineError, match=r"expr 0 \(exp\): produced shape \[1, 4\] but the IR"):
        run_exprs(fusion, fusion.exprs, env, ctx, truncating)


def test_mma_multiplies_broadcast_operands_and_sums_the_reduction_domain() -> None:
    """nvfuser-2024's lowering of matmul, built directly in the IR (the frontend has no mma)."""
    from fusecli.ir.builder import FusionBuilder
    from fusecli.ir.nodes import IterDomain, TensorView
    from fusecli.ir.ops_shape import broadcast

    builder = FusionBuilder()
    a = builder.define_tensor([4, 8], [True, True], DataType.BFloat16)
    b = builder.define_tensor([8, 5], [True, True], DataType.BFloat16)
    a3 = broadcast(builder, a, [False, False, True])
    b3 = broadcast(builder, b, [True, False, False])
    out = TensorView(DataType.Float, (IterDomain.iteration(4), IterDomain.reduction(8),
                                      IterDomain.iteration(5)))
    builder.emit(OpType.mma, [a3, b3], [out])
    builder.add_output(out)
    out_with_axis = TensorView(DataType.Float, out.domain)
    builder.emit(OpType.mma, [a3, b3], [out_with_axis], reduction_axis=1)  # as segment.lowering
    builder.add_output(out_with_axis)
    x, y = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(8, 5, dtype=torch.bfloat16)
    from_domain, from_attr = execute_fusion(builder.build(), [x, y])
    assert_same(from_domain, x.float() @ y.float(), atol=1e-5, rtol=1e-5)
    assert_same(from_attr, from_domain)


def test_pad_bool_and_int_tensors() -> None:
    flags, ints = torch.tensor([True, False]), torch.tensor([[1, 2], [3, 4]])

    def body(fd):
        fd.add_output(fd.ops.pad(define(fd, flags), [1, 1], fd.define_scalar(True)))
        fd.add_output(fd.ops.pad(define(fd, ints), [0, 1, 1, 0],
                                 fd.define_scalar(7, dtype=DataType.Int)))

    padded_flags, padded_ints = run(body, [flags, ints])
    assert_same(padded_flags, torch.tensor([True, True, False, True]))
    assert_same(padded_ints, F.pad(ints, [0, 1, 1, 0], value=7))


# -- on a GPU: the ATen executor is also the GPU fallback ---------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_inputs_stay_on_the_gpu() -> None:
    x = torch.randn(64, 128, device="cuda")
    ints = torch.randint(-50, 50, (64, 128), device="cuda")
    cpu_scalar = torch.tensor(2.0, dtype=torch.float32)

    def body(fd):
        t0, t1 = define(fd, x), define(fd, ints)
        t2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        scaled = fd.ops.mul(t0, fd.define_scalar(0.5))
        fd.add_output(fd.ops.add(scaled, t2))
        fd.add_output(fd.ops.sum(t1, dims=[1]))
        fd.add_output(fd.ops.div(t1, fd.define_scalar(7, dtype=DataType.Int)))
        fd.add_output(fd.ops.logical_right_shift(t1, fd.define_scalar(3, dtype=DataType.Int)))
        fd.add_output(fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), [4, 5]))
        fd.add_output(fd.ops.cat([t0, scaled], dim=1), stride_order=[0, 1])

    added, summed, divided, shifted, uniform, catted = run(body, [x, ints, cpu_scalar])
    for out in (added, summed, divided, shifted, uniform, catted):
        assert out.is_cuda
    assert_same(added, x * 0.5 + 2.0)
    assert_same(summed, ints.sum(dim=1))
    assert_same(divided, torch.div(ints, 7, rounding_mode="trunc"))
    assert_same(shifted, torch.bitwise_and(ints >> 3, (1 << 61) - 1))
    assert_same(uniform.cpu(), random_tensor("uniform", (4, 5), torch.float32, 0.0, 1.0, 0, 0))
    assert_same(catted, torch.cat([x, x * 0.5], dim=1))
    assert catted.stride() == (1, 64)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_cuda_sdpfa_fwd(dtype: torch.dtype) -> None:
    q, k, v = (torch.randn(2, 4, 128, 64, device="cuda", dtype=dtype) for _ in range(3))

    def body(fd):
        outs = fd.ops.sdpfa_fwd(define(fd, q), define(fd, k), define(fd, v),
                                is_causal=fd.define_scalar(True))
        fd.add_output(outs[0])
        fd.add_output(outs[1])

    out, logsumexp = run(body, [q, k, v])
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    assert_same(out, expected.to(dtype), atol=2e-2, rtol=2e-2)
    scores = (q.float() @ k.float().transpose(-2, -1)) / 8
    scores = scores.masked_fill(~torch.ones(128, 128, dtype=torch.bool, device="cuda").tril(),
                                -math.inf)
    assert_same(logsumexp, torch.logsumexp(scores, dim=-1), atol=2e-2, rtol=2e-2)


# -- fault injection --------------------------------------------------------------------------


def test_fault_injection_corrupts_only_the_named_op(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(3, 4)

    def body(fd):
        t0 = define(fd, x)
        fd.add_output(fd.ops.exp(t0))
        fd.add_output(fd.ops.neg(t0))
        fd.add_output(fd.ops.gt(t0, fd.define_scalar(0.0, dtype=DataType.Float)))

    fusion = fusion_of(body).fusion
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp,gt")
    monkeypatch.setattr(faults, "_warned", False)
    with pytest.warns(FaultInjectionWarning, match="compute exp, gt wrongly"):
        exp, neg, positive = execute_fusion(fusion, [x])
    assert ((exp - torch.exp(x)).abs() > 100).all()
    assert_same(neg, -x)
    assert torch.equal(positive, ~(x > 0))
    monkeypatch.delenv("FUSECLI_INJECT_FAULT")
    exp, _, _ = execute_fusion(fusion, [x])  # read at each execution
    assert_same(exp, torch.exp(x))


def test_fault_injection_rejects_unknown_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "add, expp")
    with pytest.raises(InputError, match="unknown op 'expp'.*exp"):
        injected_faults()


def test_corrupt_is_far_off_for_every_kind_of_value() -> None:
    floats = torch.tensor([0.0, -2.5, math.nan, math.inf], dtype=torch.bfloat16)
    corrupted = corrupt(floats)
    assert corrupted.dtype is torch.bfloat16
    assert (corrupted[:2].float() - floats[:2].float()).abs().min() > 500
    assert torch.isfinite(corrupted[2:]).all()
    assert torch.equal(corrupt(torch.tensor([1, 2])), torch.tensor([1001, 1002]))
    assert torch.equal(corrupt(torch.tensor([True, False])), torch.tensor([False, True]))
    assert corrupt(3) == 1003 and corrupt(True) is False and corrupt(1.0) == 2001.0
