"""fusecli.reference: every op against hand-written eager torch, float64 mode, layouts, aliases
and errors.

Fusions are built through the nvFuser frontend, so each test also checks that the IR's dtype and
shape inference agree with what the reference computes (the interpreter checks every result's
rank and static sizes against the IR).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir import rng
from fusecli.ir.dtype import from_torch
from fusecli.ir.optype import OpType
from fusecli.reference import (
    RULES,
    ReferenceError,
    ReferenceInputError,
    ReferenceResult,
    run_reference,
)
from fusecli.reference import interpreter as reference_interpreter

# -- helpers ---------------------------------------------------------------------------------------


def _input(fd: FusionDefinition, tensor: torch.Tensor):
    """A fusion input with ``tensor``'s sizes and strides: size-1 dims become broadcasts and a
    transposed tensor keeps its stride order."""
    return fd.define_tensor(
        sizes=list(tensor.shape), strides=list(tensor.stride()), dtype=from_torch(tensor.dtype)
    )


def _define(build: Callable, inputs: list[torch.Tensor]) -> FusionDefinition:
    """One fusion input per tensor; ``build(fd, *inputs)`` returns the output(s)."""
    with FusionDefinition() as fd:
        handles = [_input(fd, tensor) for tensor in inputs]
        outputs = build(fd, *handles)
        for output in outputs if isinstance(outputs, tuple) else (outputs,):
            fd.add_output(output)
    return fd


def _run(build: Callable, inputs: list[torch.Tensor], **options) -> list:
    return run_reference(_define(build, inputs).fusion, inputs, **options).outputs


def _close(actual: torch.Tensor, expected: torch.Tensor, **tolerance) -> None:
    """Values, dtype and shape; NaNs where expected has them."""
    torch.testing.assert_close(actual, expected, equal_nan=True, **tolerance)


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_generator()).to(dtype)


def _transposed(rows: int, cols: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A non-contiguous [rows, cols] input: the transpose of a contiguous [cols, rows]."""
    return _randn(cols, rows, dtype=dtype).t()


# A [4, 6] non-contiguous grid from -3 to 2.75 in steps of 0.25, exact in bfloat16.
GRID = (torch.arange(-12, 12, dtype=torch.float32) * 0.25).reshape(6, 4).t()


# -- unary -----------------------------------------------------------------------------------------

# Ops whose torch function has the same name and meaning.
SAME_NAME_UNARY = """
    acos acosh asin asinh atan atanh cos cosh exp expm1 erf erfc erfinv lgamma log log10 log1p
    log2 reciprocal rsqrt sigmoid sin sinh sqrt tan tanh neg sign abs ceil floor trunc
""".split()

WRITTEN_OUT_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exp2": lambda x: 2.0**x,
    "erfcinv": lambda x: torch.erfinv(1 - x),
    "frac": lambda x: x - x.trunc(),
    "relu": lambda x: x.clamp(min=0),
    "silu": lambda x: x * torch.sigmoid(x),
    "round": lambda x: torch.round(x),  # half to even: -2.5 -> -2, 0.5 -> 0, 1.5 -> 2
}

# Ops whose output keeps a bfloat16 input's dtype; the others compute and return float32.
KEEPS_DTYPE = {"abs", "ceil", "floor", "frac", "relu", "round", "sign", "silu", "trunc"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", SAME_NAME_UNARY + sorted(WRITTEN_OUT_UNARY))
def test_unary_float_ops(name: str, dtype: torch.dtype) -> None:
    x = (_transposed(4, 6) * 1.5).to(dtype)  # NaN outside an op's domain, in both
    assert not x.is_contiguous()
    (out,) = _run(lambda fd, t: getattr(fd.ops, name)(t), [x])
    function = WRITTEN_OUT_UNARY.get(name) or getattr(torch, name)
    expected = function(x.float())
    if name in KEEPS_DTYPE:
        expected = expected.to(dtype)
    _close(out, expected)


def test_round_is_half_to_even() -> None:
    x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
    (out,) = _run(lambda fd, t: fd.ops.round(t), [x])
    assert out.tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0]


SPECIALS = torch.tensor([1.0, -0.0, 0.0, float("inf"), -float("inf"), float("nan"), -2.5])

PREDICATES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "isfinite": lambda x: (x == x) & (x.abs() != float("inf")),
    "isinf": lambda x: x.abs() == float("inf"),
    "isnan": lambda x: x != x,
    "isneginf": lambda x: x == -float("inf"),
    "isposinf": lambda x: x == float("inf"),
    "isreal": lambda x: torch.ones_like(x, dtype=torch.bool),
    "signbit": lambda x: torch.tensor([math.copysign(1.0, v) < 0 for v in x.tolist()]),
    "logical_not": lambda x: x == 0,
}


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_unary_predicates(name: str) -> None:
    (out,) = _run(lambda fd, t: getattr(fd.ops, name)(t), [SPECIALS])
    assert out.dtype == torch.bool
    assert out.tolist() == PREDICATES[name](SPECIALS).tolist()


INTEGER_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "neg": lambda x: -x,
    "abs": lambda x: torch.where(x < 0, -x, x),
    "sign": lambda x: (x > 0).to(x.dtype) - (x < 0).to(x.dtype),
    "bitwise_not": lambda x: -x - 1,
    "relu": lambda x: torch.where(x > 0, x, 0),
    "ceil": lambda x: x,
    "floor": lambda x: x,
    "trunc": lambda x: x,
}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("name", sorted(INTEGER_UNARY))
def test_unary_integer_ops(name: str, dtype: torch.dtype) -> None:
    x = torch.tensor([[-7, 0, 3], [5, -1, 2]], dtype=dtype).t()
    (out,) = _run(lambda fd, t: getattr(fd.ops, name)(t), [x])
    _close(out, INTEGER_UNARY[name](x).to(dtype))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("real", lambda z: torch.tensor([1.0, -3.0])),
        ("imag", lambda z: torch.tensor([2.0, 0.5])),
        ("abs", lambda z: torch.tensor([math.hypot(1, 2), math.hypot(3, 0.5)])),
    ],
)
def test_complex_unary_ops_return_real(name: str, expected: Callable) -> None:
    z = torch.tensor([1 + 2j, -3 + 0.5j], dtype=torch.complex64)
    (out,) = _run(lambda fd, t: getattr(fd.ops, name)(t), [z])
    _close(out, expected(z))


# -- binary ----------------------------------------------------------------------------------------

FLOAT_BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "truediv": lambda a, b: a / b,
    "mod": torch.fmod,
    "fmod": torch.fmod,
    "remainder": lambda a, b: a - b * torch.floor(a / b),
    "pow": lambda a, b: a**b,
    "atan2": torch.atan2,
    "nextafter": torch.nextafter,
    "minimum": torch.minimum,
    "maximum": torch.maximum,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "logical_and": lambda a, b: (a != 0) & (b != 0),
    "logical_or": lambda a, b: (a != 0) | (b != 0),
}


def _binary_operands(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A non-contiguous [4, 6] tensor with a NaN, and a broadcast [1, 6] tensor with a zero."""
    a = _transposed(4, 6)
    a[1, 2] = float("nan")
    a[0, 0] = 0.0
    b = torch.tensor([[0.5, -1.25, 2.0, 0.0, -3.0, 1.0]])
    return a.to(dtype), b.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_binary_float_ops(name: str, dtype: torch.dtype) -> None:
    a, b = _binary_operands(dtype)
    (out,) = _run(lambda fd, x, y: getattr(fd.ops, name)(x, y), [a, b])
    # half types compute in float32 and return it; comparisons return Bool.
    _close(out, FLOAT_BINARY[name](a.float(), b.float()))


def test_bfloat16_add_returns_float32() -> None:
    a, b = _randn(3, 5, dtype=torch.bfloat16), _randn(3, 5, dtype=torch.bfloat16)
    (out,) = _run(lambda fd, x, y: fd.ops.add(x, y), [a, b])
    assert out.dtype == torch.float32
    _close(out, a.float() + b.float())


INTEGER_BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "mod": torch.fmod,
    "fmod": torch.fmod,
    "remainder": lambda a, b: a - b * torch.div(a, b, rounding_mode="floor"),
    "minimum": torch.minimum,
    "maximum": torch.maximum,
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "gcd": torch.gcd,
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("name", sorted(INTEGER_BINARY))
def test_binary_integer_ops(name: str, dtype: torch.dtype) -> None:
    a = torch.tensor([[-7, 7, -8, 9, 0], [13, -13, 1, -1, 100]], dtype=dtype).t()
    b = torch.tensor([[2, -2, 3, -4, 7]], dtype=dtype).t()  # [5, 1]: broadcast in dim 1
    (out,) = _run(lambda fd, x, y: getattr(fd.ops, name)(x, y), [a, b])
    _close(out, INTEGER_BINARY[name](a, b))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("div", [-3, -3, 3, -2]),  # C-style: truncates toward zero
        ("fmod", [-1, 1, -1, 1]),  # sign of the dividend
        ("mod", [-1, 1, -1, 1]),
        ("remainder", [1, -1, -1, -1]),  # sign of the divisor
    ],
)
def test_integer_division_truncates(name: str, expected: list[int]) -> None:
    a = torch.tensor([-7, 7, -7, 5])
    b = torch.tensor([2, -2, -2, -2])
    (out,) = _run(lambda fd, x, y: getattr(fd.ops, name)(x, y), [a, b])
    assert out.dtype == torch.int64
    assert out.tolist() == expected


def _unsigned_shift(value: int, shift: int, bits: int) -> int:
    unsigned = (value % 2**bits) >> shift if shift < bits else 0
    return unsigned - 2**bits if unsigned >= 2 ** (bits - 1) else unsigned


@pytest.mark.parametrize(("dtype", "bits"), [(torch.int64, 64), (torch.int32, 32)])
def test_logical_right_shift_shifts_the_bit_pattern(dtype: torch.dtype, bits: int) -> None:
    lowest = -(2 ** (bits - 1))
    values = [-1, -8, 5, lowest, 123456789, -123456789, -1, lowest, -5, 7]
    shifts = [0, 1, 3, bits - 1, 10, 20, bits - 1, 1, bits, bits + 3]
    a, b = torch.tensor(values, dtype=dtype), torch.tensor(shifts, dtype=dtype)
    (out,) = _run(lambda fd, x, y: fd.ops.logical_right_shift(x, y), [a, b])
    assert out.tolist() == [_unsigned_shift(v, s, bits) for v, s in zip(values, shifts)]


def test_arithmetic_shifts_and_integer_pow() -> None:
    a, b = torch.tensor([-8, 8, 3]), torch.tensor([1, 2, 4])
    left, right, power = _run(
        lambda fd, x, y: (
            fd.ops.bitwise_left_shift(x, y),
            fd.ops.bitwise_right_shift(x, y),
            fd.ops.pow(x, y),
        ),
        [a, b],
    )
    assert left.tolist() == [-16, 32, 48]
    assert right.tolist() == [-4, 2, 0]  # the sign bit is copied in
    assert power.tolist() == [-8, 64, 81] and power.dtype == torch.int64


# -- ternary and scalars ---------------------------------------------------------------------------


def _with_scalars(build: Callable, tensors: list[torch.Tensor], scalars: list[float]) -> list:
    """Like _run, with constant Double scalars passed to ``build`` after the tensors."""
    with FusionDefinition() as fd:
        handles = [_input(fd, t) for t in tensors]
        constants = [fd.define_scalar(value, DataType.Double) for value in scalars]
        fd.add_output(build(fd, *handles, *constants))
    return run_reference(fd.fusion, tensors).outputs


TERNARY: dict[str, tuple[int, list[float], Callable]] = {
    # name: (tensor operands, scalar operands, expected)
    "lerp": (2, [0.3], lambda a, b, w: a + w * (b - a)),
    "clamp": (
        1,
        [-0.5, 0.75],
        lambda x, lo, hi: torch.minimum(torch.maximum(x, torch.tensor(lo)), torch.tensor(hi)),
    ),
    "threshold": (1, [0.25, -9.0], lambda x, t, v: torch.where(x <= t, v, x)),
    "addcmul": (3, [0.5], lambda a, b, c, v: a + v * b * c),
    "add_alpha": (2, [2.5], lambda a, b, alpha: a + alpha * b),
    "sub_alpha": (2, [2.5], lambda a, b, alpha: a - alpha * b),
}


@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_ops(name: str) -> None:
    tensor_count, scalars, expected = TERNARY[name]
    tensors = [_transposed(4, 6)] + [_randn(6) * (i + 2) for i in range(tensor_count - 1)]
    (out,) = _with_scalars(lambda fd, *ops: getattr(fd.ops, name)(*ops), tensors, scalars)
    _close(out, expected(*tensors, *scalars))


def test_where_with_tensor_and_scalar_branches() -> None:
    x = _transposed(4, 6)
    (out,) = _with_scalars(
        lambda fd, t, s: fd.ops.where(fd.ops.gt(t, s), t, fd.ops.neg(s)), [x], [0.25]
    )
    _close(out, torch.where(x > 0.25, x, torch.tensor(-0.25)))


def test_input_scalars_as_numbers_and_0dim_tensors() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        s0 = fd.define_scalar(DataType.Double)
        s1 = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.mul(fd.ops.add(t0, s0), s1))
        fd.add_output(fd.ops.mul(s0, s1))
    x = _randn(5)
    for s0_value in (2.5, torch.tensor(2.5, dtype=torch.float64)):
        out, product = run_reference(fd.fusion, [x, s0_value, 3]).outputs
        _close(out, (x + 2.5) * 3)
        assert product == 7.5 and isinstance(product, float)


def test_scalar_arithmetic_builds_a_shape() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        numel = fd.ops.mul(fd.ops.size(t0, 0), fd.ops.size(t0, 1))
        fd.add_output(fd.ops.reshape(t0, [numel]))
        fd.add_output(numel)
    x = _randn(3, 4)
    flat, numel = run_reference(fd.fusion, [x]).outputs
    _close(flat, x.reshape(12))
    assert numel == 12 and isinstance(numel, int)


def test_define_vector_inputs_are_individual_scalars() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        shape = fd.define_vector(2)
        fd.add_output(fd.ops.reshape(t0, shape))
    x = _randn(4, 6)
    (out,) = run_reference(fd.fusion, [x, 3, 8]).outputs
    _close(out, x.reshape(3, 8))


# -- casts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (torch.float32, DataType.BFloat16),
        (torch.float32, DataType.Int),
        (torch.float32, DataType.Bool),
        (torch.int64, DataType.Half),
        (torch.bfloat16, DataType.Double),
        (torch.float32, DataType.ComplexFloat),
    ],
)
def test_cast(source: torch.dtype, target: DataType) -> None:
    x = (GRID * 3).to(source)
    (out,) = _run(lambda fd, t: fd.ops.cast(t, target), [x])
    expected_dtype = {
        DataType.BFloat16: torch.bfloat16,
        DataType.Int: torch.int64,
        DataType.Bool: torch.bool,
        DataType.Half: torch.float16,
        DataType.Double: torch.float64,
        DataType.ComplexFloat: torch.complex64,
    }[target]
    _close(out, x.to(expected_dtype))


# -- reductions ------------------------------------------------------------------------------------


def _prod(x: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    result = x
    for dim in sorted((d % x.dim() for d in dims), reverse=True):
        result = result.prod(dim, keepdim=keepdim)
    return result


REDUCTIONS: dict[str, Callable[[torch.Tensor, list[int], bool], torch.Tensor]] = {
    "sum": lambda x, dims, keepdim: x.sum(dims, keepdim=keepdim),
    "prod": _prod,
    "max": lambda x, dims, keepdim: x.amax(dims, keepdim=keepdim),
    "min": lambda x, dims, keepdim: x.amin(dims, keepdim=keepdim),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", [[0], [1], [-1], [0, 2], [0, 1, 2]])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name: str, dims: list[int], keepdim: bool) -> None:
    x = _randn(5, 3, 4).permute(2, 0, 1) * 0.9  # [4, 5, 3], non-contiguous
    (out,) = _run(lambda fd, t: getattr(fd.ops, name)(t, dims, keepdim=keepdim), [x])
    _close(out, REDUCTIONS[name](x, dims, keepdim))


def test_integer_sum_accumulates_in_int64() -> None:
    x = torch.tensor([[2**30, 2**30, 2**30], [1, 2, 3]], dtype=torch.int32)
    (out,) = _run(lambda fd, t: fd.ops.sum(t, [1]), [x])
    assert out.dtype == torch.int64
    assert out.tolist() == [3 * 2**30, 6]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_var_mean(dtype: torch.dtype, correction: int, keepdim: bool) -> None:
    """bf16 is upcast first: nvFuser's variance_mean refuses half types (normalization.cpp)."""
    x = _transposed(4, 6, dtype)
    var, mean = _run(
        lambda fd, t: fd.ops.var_mean(fd.ops.cast(t, DataType.Float), [1],
                                      correction=correction, keepdim=keepdim), [x]
    )
    expected_var, expected_mean = torch.var_mean(
        x.float(), dim=1, correction=correction, keepdim=keepdim
    )
    _close(var, expected_var)
    _close(mean, expected_mean)


def test_var_mean_refuses_half_types_as_nvfuser_does() -> None:
    """nvFuser's variance_mean: "not supported for __bfloat please upcast to float"."""
    with pytest.raises(Exception, match="variance_mean is not supported for __bfloat"):
        _run(lambda fd, t: fd.ops.var_mean(t, [1], correction=0),
             [_randn(4, 6, dtype=torch.bfloat16)])


@pytest.mark.parametrize("op", ["clamp", "threshold"])
def test_clamp_and_threshold_keep_their_input_dtype(op: str) -> None:
    """newValLike(in, in->getDataType()) with the bounds cast to it (ops/arith.cpp): a bf16
    input gives a bf16 output, bit for bit torch's on bf16."""
    x = _randn(4, 6, dtype=torch.bfloat16)

    def body(fd, t):
        low, high = fd.define_scalar(-0.3, dtype=DataType.Double), fd.define_scalar(
            0.7, dtype=DataType.Double)
        return getattr(fd.ops, op)(t, low, high)

    (out,) = _run(body, [x])
    assert out.dtype == torch.bfloat16
    bf = torch.tensor([-0.3, 0.7]).bfloat16()
    expected = (torch.clamp(x, bf[0], bf[1]) if op == "clamp"
                else torch.where(x <= bf[0], bf[1], x))
    assert torch.equal(out, expected)


def test_var() -> None:
    x = _transposed(4, 6)
    (var,) = _run(lambda fd, t: fd.ops.var(t, [0, 1], correction=1), [x])
    _close(var, x.var(correction=1))


def test_welford() -> None:
    x = _transposed(4, 6)
    mean, m2, count = _run(lambda fd, t: fd.ops.welford(t, [1]), [x])
    _close(mean, x.mean(1))
    _close(m2, ((x - x.mean(1, keepdim=True)) ** 2).sum(1))
    _close(count, torch.full((4,), 6, dtype=torch.int64))


def test_cumsum_argsort_topk() -> None:
    x = _transposed(4, 6)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        fd.add_output(fd.ops.cumsum(t0, 1))
        fd.add_output(fd.ops.argsort(t0, 1, descending=True, stable=True))
        values, indices = fd.ops.topk(t0, fd.define_scalar(2, DataType.Int), dim=1)
        fd.add_output(values)
        fd.add_output(indices)
    cumsum, order, top_values, top_indices = run_reference(fd.fusion, [x]).outputs
    _close(cumsum, x.cumsum(1))
    _close(order, torch.argsort(x, dim=1, descending=True, stable=True))
    expected_values, expected_indices = torch.topk(x, 2, dim=1)
    _close(top_values, expected_values)
    _close(top_indices, expected_indices)


# -- shape ops -------------------------------------------------------------------------------------


@pytest.mark.parametrize("new_shape", [[-1, 3], [2, -1, 3], [24], [3, 8]])
def test_reshape(new_shape: list[int]) -> None:
    x = _transposed(4, 6)
    (out,) = _run(lambda fd, t: fd.ops.reshape(t, new_shape), [x])
    _close(out, x.reshape(new_shape))


@pytest.mark.parametrize("dims", [[1, 0, 2], [2, 0, 1], [-1, 0, 1]])
def test_permute(dims: list[int]) -> None:
    x = _randn(2, 3, 4)
    (out,) = _run(lambda fd, t: fd.ops.permute(t, dims), [x])
    _close(out, x.permute(dims))


def test_broadcast_in_dim_expand_and_squeeze() -> None:
    x = _randn(4)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        t1 = fd.ops.broadcast_in_dim(t0, [3, 1, 4], [2])
        fd.add_output(t1)
        fd.add_output(fd.ops.squeeze(t1, [1]))
        fd.add_output(fd.ops.broadcast(t0, [True, False, True]))
    expanded, squeezed, broadcast = run_reference(fd.fusion, [x]).outputs
    _close(expanded, x.expand(3, 1, 4))
    _close(squeezed, x.expand(3, 4))
    _close(broadcast, x.reshape(1, 4, 1))


@pytest.mark.parametrize(
    ("starts", "ends"),
    [
        ([-4, 1], [-1, 100]),  # negative indices wrap, stops clamp
        ([0, -100], [6, -2]),
        ([3, 2], [1, 5]),  # stop before start: empty
        ([1, 0], [6, 8]),
    ],
)
def test_slice(starts: list[int], ends: list[int]) -> None:
    """Bounds known only at run time wrap and clamp as torch's do (nvFuser's normalization)."""
    x = _transposed(6, 8)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(sizes=[6, 8], strides=[1, 6], static_sizes=True)
        bounds = [fd.define_scalar(DataType.Int) for _ in range(4)]
        fd.add_output(fd.ops.slice(t0, bounds[:2], bounds[2:]))
    (out,) = run_reference(fd.fusion, [x, *starts, *ends]).outputs
    _close(out, x[starts[0] : ends[0], starts[1] : ends[1]])


def test_slice_of_a_symbolic_extent_with_negative_and_out_of_range_bounds() -> None:
    x = _randn(6, 8)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        bounds = [fd.define_scalar(DataType.Int) for _ in range(2)]
        fd.add_output(fd.ops.slice(t0, [0, bounds[0]], [6, bounds[1]]))
    (out,) = run_reference(fd.fusion, [x, -100, -2]).outputs
    _close(out, x[:, :-2])


def _int_scalars(fd: FusionDefinition, values: list[int]) -> list:
    return [fd.define_scalar(value, DataType.Int) for value in values]


@pytest.mark.parametrize(
    ("starts", "ends", "message"),
    [
        ([-4, 0], [6, 8], "Slice operation start_indices must be greater than or equal to 0. "
         "Start Indices: -4"),
        ([3, 0], [1, 8], "Slice operation end_indices must be greater than or equal to "
         "start_indices. Start Indices: 3 End Indices: 1"),
    ],
)
def test_constant_slice_bounds_out_of_order_are_refused_in_nvfusers_words(
    starts: list[int], ends: list[int], message: str
) -> None:
    """nvFuser's frontends refuse a negative constant start and a constant end before its start
    (only bounds known at run time are normalized), as RuntimeErrors."""
    with pytest.raises(RuntimeError, match=re.escape(message)):
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
            fd.ops.slice(t0, starts, ends)


def test_negative_literal_pad_widths() -> None:
    x = _randn(6, 8)
    (padded,) = _run(lambda fd, t: fd.ops.pad(t, [1, -2]), [x])
    _close(padded, F.pad(x, [1, -2]))


def test_slice_with_input_scalar_bounds() -> None:
    x = _randn(6, 8)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        start = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.slice(t0, [start, 0], [6, 8]))
    (out,) = run_reference(fd.fusion, [x, -2]).outputs
    _close(out, x[-2:])


@pytest.mark.parametrize("widths", [[1, 2], [1, -2, -1, 3], [0, 0, 2, 2], [-1, -1]])
def test_pad(widths: list[int]) -> None:
    x = _transposed(4, 6)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        fd.add_output(
            fd.ops.pad(t0, _int_scalars(fd, widths), fd.define_scalar(0.5, DataType.Float))
        )
    (out,) = run_reference(fd.fusion, [x]).outputs
    _close(out, F.pad(x, widths, value=0.5))


def test_pad_default_value_is_zero() -> None:
    x = torch.tensor([[1, 2], [3, 4]])
    (out,) = _run(lambda fd, t: fd.ops.pad(t, [1, 0]), [x])
    assert out.tolist() == [[0, 1, 2], [0, 3, 4]]


def test_cat_refuses_operands_of_different_dtypes_as_nvfuser_does() -> None:
    """torch.cat promotes; nvFuser's cat checks (ops/alias.cpp; 0.2.36 raises it on the H200)."""
    a, b = _randn(3, 2, dtype=torch.bfloat16), _transposed(3, 4)
    with pytest.raises(Exception, match="Can't concatenate tensors with different data types"):
        _run(lambda fd, x, y: fd.ops.cat([x, y], dim=1), [a, b])
    (out,) = _run(lambda fd, x, y: fd.ops.cat([fd.ops.cast(x, DataType.Float), y], dim=1),
                  [a, b])
    _close(out, torch.cat([a.float(), b], dim=1))


# -- indexing --------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_select(index_dtype: torch.dtype) -> None:
    x, index = _transposed(5, 4), torch.tensor([4, 0, 2, 2], dtype=index_dtype)
    (out,) = _run(lambda fd, t, i: fd.ops.index_select(t, i, 0), [x, index])
    _close(out, x[index.long()])


def test_select() -> None:
    x = _randn(3, 5)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        fd.add_output(fd.ops.select(t0, fd.define_scalar(2, DataType.Int), 1))
    (out,) = run_reference(fd.fusion, [x]).outputs
    _close(out, x[:, 2])


GATHER_INDEX = torch.tensor([[5, 0, 1], [2, 2, 3], [0, 4, 5], [1, 1, 1]])


@pytest.mark.parametrize("index", [GATHER_INDEX, GATHER_INDEX[:2]])
def test_gather(index: torch.Tensor) -> None:
    x = _transposed(4, 6)
    (out,) = _run(lambda fd, t, i: fd.ops.gather(t, i, 1), [x, index])
    expected = torch.stack(
        [torch.stack([x[r, index[r, c]] for c in range(3)]) for r in range(index.shape[0])]
    )
    _close(out, expected)


def test_take_along_axis() -> None:
    x = _transposed(4, 6)
    (out,) = _run(lambda fd, t, i: fd.ops.take_along_axis(t, i, 1), [x, GATHER_INDEX])
    _close(out, torch.take_along_dim(x, GATHER_INDEX, dim=1))


def test_scatter() -> None:
    x, index, src = torch.zeros(3, 4), torch.tensor([[3, 1], [0, 2], [1, 0]]), _randn(3, 2)
    (out,) = _run(lambda fd, t, i, s: fd.ops.scatter(t, i, s, 1), [x, index, src])
    expected = x.clone()
    for row in range(3):
        for col in range(2):
            expected[row, index[row, col]] = src[row, col]
    _close(out, expected)


def test_embedding_fwd() -> None:
    indices, weight = torch.tensor([[0, 3], [2, 2]]), _randn(5, 4)
    (out,) = _run(lambda fd, i, w: fd.ops.embedding_fwd(i, w), [indices, weight])
    _close(out, weight[indices])


def test_triu() -> None:
    x = _randn(4, 5)
    (out,) = _run(lambda fd, t: fd.ops.triu(t, 1), [x])
    _close(out, torch.triu(x, 1))


# -- creation and random numbers -------------------------------------------------------------------


def test_iota_and_full() -> None:
    with FusionDefinition() as fd:
        length = fd.define_scalar(5, DataType.Int)
        fd.add_output(
            fd.ops.iota(
                length,
                fd.define_scalar(2, DataType.Int),
                fd.define_scalar(3, DataType.Int),
                DataType.Int,
            )
        )
        fd.add_output(
            fd.ops.iota(
                length,
                fd.define_scalar(0.5, DataType.Float),
                fd.define_scalar(0.25, DataType.Float),
                DataType.Float,
            )
        )
        fd.add_output(fd.ops.full([2, 3], fd.define_scalar(1.5), DataType.BFloat16))
    ints, floats, filled = run_reference(fd.fusion, []).outputs
    _close(ints, torch.tensor([2, 5, 8, 11, 14]))
    _close(floats, torch.tensor([0.5, 0.75, 1.0, 1.25, 1.5]))
    _close(filled, torch.full((2, 3), 1.5, dtype=torch.bfloat16))


def test_random_ops_follow_the_shared_stream() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        zero, one = fd.define_scalar(0.0), fd.define_scalar(1.0)
        fd.add_output(fd.ops.uniform(zero, one, [3, 4], dtype=DataType.Float))
        fd.add_output(fd.ops.randn_like(t0))
        seed, offset = fd.define_scalar(7, DataType.Int), fd.define_scalar(9, DataType.Int)
        fd.add_output(
            fd.ops.normal(zero, one, [2], rng_seed=seed, rng_offset=offset, dtype=DataType.Double)
        )
    x = _randn(2, 5)
    uniform, normal_like, seeded = run_reference(fd.fusion, [x], seed=5).outputs
    _close(uniform, rng.random_tensor("uniform", (3, 4), torch.float32, 0.0, 1.0, 5, 0))
    _close(normal_like, rng.random_tensor("normal", (2, 5), torch.float32, 0.0, 1.0, 5, 1))
    _close(seeded, rng.random_tensor("normal", (2,), torch.float64, 0.0, 1.0, 7, 9))
    again = run_reference(fd.fusion, [x], seed=5).outputs
    assert all(torch.equal(first, second) for first, second in zip(again, [uniform, normal_like]))


# -- matmul and attention --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [([3, 4], [4, 5]), ([2, 3, 4], [4, 5]), ([4], [2, 4, 3]), ([4], [4])]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matmul(a_shape: list[int], b_shape: list[int], dtype: torch.dtype) -> None:
    a, b = _randn(*a_shape, dtype=dtype), _randn(*b_shape, dtype=dtype) * 0.5
    (out,) = _run(lambda fd, x, y: fd.ops.matmul(x, y), [a, b])
    assert out.dtype == dtype
    _close(out, (a.double() @ b.double()).to(dtype), **_matmul_tolerance(dtype))


def _matmul_tolerance(dtype: torch.dtype) -> dict:
    return {"rtol": 1.6e-2, "atol": 1e-2} if dtype is torch.bfloat16 else {}


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(with_bias: bool) -> None:
    a, weight, bias = _transposed(3, 4), _randn(5, 4), _randn(5)
    inputs = [a, weight, bias] if with_bias else [a, weight]
    (out,) = _run(lambda fd, *ts: fd.ops.linear(*ts), inputs)
    expected = a @ weight.t() + (bias if with_bias else 0)
    _close(out, expected)


def _attention(q, k, v, scale: float, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    scores = (q.double() @ k.double().transpose(-2, -1)) * scale
    if is_causal:
        scores = scores.masked_fill(torch.ones(scores.shape[-2:]).tril() == 0, -math.inf)
    out = torch.softmax(scores, -1) @ v.double()
    return out, torch.logsumexp(scores, -1)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sdpfa_fwd(dtype: torch.dtype, is_causal: bool) -> None:
    q, k, v = (_randn(2, 3, 5, 8, dtype=dtype) * (i + 1) * 0.5 for i in range(3))
    k, v = k[:, :, :4], v[:, :, :4]  # S = 4 keys for L = 5 queries
    with FusionDefinition() as fd:
        tq, tk, tv = (_input(fd, t) for t in (q, k, v))
        outputs = fd.ops.sdpfa_fwd(
            tq,
            tk,
            tv,
            dropout_p=fd.define_scalar(0.0),
            is_causal=fd.define_scalar(is_causal, DataType.Bool),
        )
        for output in outputs:
            fd.add_output(output)
    out, logsumexp, seed, offset = run_reference(fd.fusion, [q, k, v]).outputs
    expected_out, expected_lse = _attention(q, k, v, 1 / math.sqrt(8), is_causal)
    _close(out, expected_out.to(dtype))
    _close(logsumexp, expected_lse.float())
    _close(
        out,
        F.scaled_dot_product_attention(q, k, v, is_causal=is_causal),
        **_matmul_tolerance(dtype),
    )
    assert seed.dtype == offset.dtype == torch.uint64 and seed.shape == (2,)
    assert seed.tolist() == [0, 0] and offset.dim() == 0


def test_sdpfa_fwd_with_scale() -> None:
    q, k, v = (_randn(1, 2, 3, 4) for _ in range(3))
    with FusionDefinition() as fd:
        tq, tk, tv = (_input(fd, t) for t in (q, k, v))
        out, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, scale=fd.define_scalar(0.7))
        fd.add_output(out)
    (out,) = run_reference(fd.fusion, [q, k, v]).outputs
    _close(out, _attention(q, k, v, 0.7, False)[0].float())


def test_sdpfa_fwd_with_dropout_cannot_be_reproduced() -> None:
    q = _randn(1, 1, 2, 4)
    with FusionDefinition() as fd:
        tq, tk, tv = (_input(fd, q) for _ in range(3))
        out, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=fd.define_scalar(0.1))
        fd.add_output(out)
    with pytest.raises(ReferenceError, match=r"expr 0 \(fd.ops.sdpfa_fwd\): dropout_p=0.1 cannot"):
        run_reference(fd.fusion, [q, q, q])


# -- layouts and aliases ---------------------------------------------------------------------------


def test_stride_order_expr_and_output() -> None:
    x = _randn(2, 3, 4)
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        fd.add_output(fd.ops.stride_order(t0, [2, 0, 1]))
        fd.add_output(fd.ops.neg(t0), stride_order=[0, 1, 2])
    ordered, negated = run_reference(fd.fusion, [x]).outputs
    _close(ordered, x)
    assert ordered.stride() == (12, 1, 3)  # dim 1 innermost, then dim 2, then dim 0
    _close(negated, -x)
    assert negated.stride() == (1, 2, 6)  # dim 0 innermost


def test_aliased_output_is_written_into_its_input_and_hidden() -> None:
    x = _randn(3, 4)
    original = x.clone()
    with FusionDefinition() as fd:
        t0 = _input(fd, x)
        fd.add_output(fd.ops.set(t0))
        fd.add_output(fd.ops.add(t0, fd.define_scalar(1.0)), alias_input=t0)
        fd.add_output(fd.ops.mul(t0, t0))
    result = run_reference(fd.fusion, [x])
    copy, squared = result.outputs
    _close(copy, original)  # computed before the input was written
    _close(squared, original * original)
    _close(x, original + 1)


# -- float64 mode ----------------------------------------------------------------------------------


def test_float64_mode_is_closer_to_a_float64_computation() -> None:
    x = torch.rand(8, 4096, generator=_generator()).to(torch.bfloat16) + 1

    def build(fd, t):
        squared = fd.ops.cast(fd.ops.mul(t, t), DataType.BFloat16)
        return fd.ops.sum(fd.ops.exp(fd.ops.neg(squared)), [1])

    (low,) = _run(build, [x])
    (high,) = _run(build, [x], float64=True)
    exact = torch.exp(-(x.double() ** 2)).sum(1)
    assert low.dtype == torch.float32 and high.dtype == torch.float64
    high_error = (high - exact).abs().max().item()
    low_error = (low.double() - exact).abs().max().item()
    assert high_error < 1e-9 < low_error


def test_float64_mode_leaves_integers_and_casts_the_float64_value() -> None:
    # 0.7 in float32 is 0.69999998...; times 10 is 6.9999998 exactly, which float32 rounds to 7.
    x = torch.tensor([0.7], dtype=torch.float32)

    def build(fd, t):
        truncated = fd.ops.cast(fd.ops.mul(t, fd.define_scalar(10.0, DataType.Float)), DataType.Int)
        return truncated, fd.ops.cast(t, DataType.Half)

    low_int, low_half = _run(build, [x])
    high_int, high_half = _run(build, [x], float64=True)
    assert low_int.tolist() == [7] and high_int.tolist() == [6]
    assert high_int.dtype == torch.int64 and high_half.dtype == torch.float64
    assert low_half.dtype == torch.float16
    assert high_half.item() == x.double().item()


def test_result_records_mode_and_intermediates() -> None:
    x = _randn(3)
    fd = _define(lambda fd, t: fd.ops.exp(fd.ops.neg(t)), [x])
    result = run_reference(fd.fusion, [x], float64=True, keep_intermediates=True)
    assert isinstance(result, ReferenceResult) and result.float64
    computed = {out.uid for expr in fd.fusion.exprs for out in expr.outputs}
    assert computed <= result.values.keys()
    assert run_reference(fd.fusion, [x]).values == {}


# -- errors ----------------------------------------------------------------------------------------


def test_error_names_the_expr_and_the_op() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.exp(t0)
        fd.add_output(fd.ops.reshape(t1, [16, 33]))
    with pytest.raises(ReferenceError) as caught:
        run_reference(fd.fusion, [_randn(16, 32)])
    assert str(caught.value) == (
        "reference: expr 1 (fd.ops.reshape): shape '[16, 33]' is invalid for input of size 512"
    )
    assert caught.value.position == 1 and caught.value.op == "reshape"


def test_missing_rule_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(reference_interpreter.RULES, OpType.exp)
    x = _randn(3)
    fd = _define(lambda fd, t: fd.ops.exp(t), [x])
    with pytest.raises(ReferenceError, match=r"expr 0 \(fd.ops.exp\): the reference has no rule"):
        run_reference(fd.fusion, [x])


def test_every_op_the_frontend_emits_has_a_rule() -> None:
    # shape and at never become exprs.
    assert set(OpType) - RULES.keys() == {OpType.shape, OpType.at}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([], "the fusion has 1 inputs, got 0"),
        ([_randn(3, 4, dtype=torch.bfloat16)], "input 0: expected a float32 tensor, got bfloat16"),
        ([_randn(3)], r"input 0: got a tensor of shape \[3\], the fusion defines \[\?, 4\]"),
        ([1.5], "input 0: expected a tensor, got float"),
    ],
)
def test_inputs_that_do_not_fit(inputs: list, message: str) -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(t0))
    with pytest.raises(ReferenceInputError, match=message) as caught:
        run_reference(fd.fusion, inputs)
    assert caught.value.exit_code == 2


# -- the reference's own promotion table agrees with the IR's --------------------------------

_PROMOTION_DTYPES = (
    torch.bool, torch.int32, torch.int64, torch.bfloat16, torch.float16, torch.float32,
    torch.float64, torch.complex64, torch.complex128,
)
# (is_tensor, ndim) of a second operand: a tensor, a 0-dim tensor, a scalar
_OPERAND_KINDS = ((True, 2), (True, 0), (False, 0))


def _promotion_cases():
    from fusecli.ir.ops_elementwise import PROMOTION
    from fusecli.reference.promotion import CONFIG

    both = sorted(set(CONFIG) & {op.value for op in PROMOTION})
    assert len(both) >= 80, both  # the tables cover the same elementwise ops
    return both


def test_the_reference_promotion_table_covers_the_irs_elementwise_ops() -> None:
    from fusecli.ir.ops_elementwise import PROMOTION
    from fusecli.reference.promotion import CONFIG

    assert {op.value for op in PROMOTION} - {"real", "imag", "abs"} <= set(CONFIG)


@pytest.mark.parametrize("op", _promotion_cases())
def test_reference_and_ir_promotion_agree(op: str) -> None:
    from fusecli.ir.dtype import Operand, promote
    from fusecli.ir.ops_elementwise import PROMOTION
    from fusecli.reference.promotion import Arg, output_dtype

    rule = PROMOTION[OpType(op)]
    checked = 0
    for first in _PROMOTION_DTYPES:
        for second in _PROMOTION_DTYPES:
            for is_tensor, ndim in _OPERAND_KINDS:
                ir_args = [Operand(from_torch(first), True, 2),
                           Operand(from_torch(second), is_tensor, ndim)]
                ref_args = [Arg(first, True, 2), Arg(second, is_tensor, ndim)]
                if op == "where":
                    ir_args = [Operand(from_torch(torch.bool), True, 2), *ir_args]
                    ref_args = [Arg(torch.bool, True, 2), *ref_args]
                try:
                    _, ir_output = promote(ir_args if op != "where" else ir_args[1:], rule)
                except (ValueError, KeyError):
                    continue  # the IR rejects the pair: nothing to agree on
                from fusecli.ir.dtype import to_torch

                assert output_dtype(op, ref_args) == to_torch(ir_output), (op, first, second,
                                                                           is_tensor, ndim)
                checked += 1
    assert checked > 100


def test_a_wrong_ir_promotion_rule_shows_as_a_dtype_mismatch(monkeypatch) -> None:
    # The reference derives exp's dtype from its operand (bf16 computes and returns Float);
    # an IR that wrongly kept bf16 would, with a reference casting to the IR's dtype, agree.
    from fusecli.compare import compare_tensors, tolerance_for
    from fusecli.ir import ops_elementwise
    from fusecli.ir.dtype import Promotion

    monkeypatch.setitem(ops_elementwise.PROMOTION, OpType.exp, Promotion.SAME)
    inputs = [_randn(4, 8, dtype=torch.bfloat16)]
    fd = _define(lambda fd, t: fd.ops.exp(t), inputs)
    (ir_output,) = fd.fusion.outputs
    assert ir_output.value.dtype is DataType.BFloat16  # the planted wrong rule took effect
    (expected,) = run_reference(fd.fusion, inputs).outputs
    assert expected.dtype == torch.float32
    wrong = torch.exp(inputs[0].float()).to(torch.bfloat16)  # an executor following the IR
    diff = compare_tensors(wrong, expected, tolerance=tolerance_for(torch.float32))
    assert not diff.ok and not diff.dtype_ok
