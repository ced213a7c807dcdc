"""Special values through generated kernels: eager torch's answer on the same device, bit for bit.

Every elementwise op the CUDA renderer has (``codegen.render.C_OPS``) and every cast runs, in
each dtype it takes, on NaN, ±inf, ±0, ±the smallest subnormal, ±the smallest normal, ±1 and
±max (integers: min, -1, 0, 1, 2, the width minus one, the width, max; booleans: both), over
the whole cartesian product of its operands, through the kernel the generators write: on the
CPU through the emulator (``fusecli.codegen.emulate``), on a GPU (``-m cuda``, run by
``scripts/gpu-check``) through CuPy. The answer is the reference interpreter's: eager torch,
op by op, on the same device. An op "takes" a dtype when the frontend accepts it, eager torch
computes it and the generators render it (else the segment runs on ATen, which is torch).

Bit for bit: NaN where torch has NaN (any payload), elsewhere the same bits (-0 is not +0).
The ops in ``INEXACT`` come from a math library whose last bits differ between g++'s libm,
CUDA's and torch's (SLEEF on the CPU); for them bit for bit holds where torch's result is
special (NaN, ±inf, ±0), and other values agree within ``ULPS`` ulps (even a result of 1:
exp(2^-24) is 1 + 2^-23 correctly rounded, and 1 from SLEEF).
Operands whose result C leaves undefined and torch makes device-specific, or where torch
raises, are excluded by the named rules of ``EXCLUSIONS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import pytest
import torch
from test_codegen import EmulatingExecutor, kernels_of, needs_gxx

from fusecli.codegen import Kernel
from fusecli.codegen.render import C_OPS
from fusecli.codegen.support import UNSUPPORTED as NOT_RENDERED
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.builder import DefinitionError
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType
from fusecli.reference import run_reference
from fusecli.reference.interpreter import ReferenceError
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import CupyExecutor, FallbackReason, cupy_available
from fusecli.segment.segmenter import segment_fusion

DTYPES = (DataType.Double, DataType.Float, DataType.Half, DataType.BFloat16, DataType.Int,
          DataType.Int32, DataType.UInt64, DataType.Bool)
GROUPS = ("unary", "cast", "binary", "ternary")

# A math library's result, not one IEEE operation or an exact rule: ulps differ between libraries.
INEXACT = frozenset({op for op in C_OPS if op.definition.cuda} | {
    OpType.sigmoid, OpType.silu, OpType.pow,
})
ULPS = 8  # CUDA's own bound is 2 to 6 ulps for most of these (lgammaf: 6), float's or double's


# -- values and operands ------------------------------------------------------------------------


def special_values(dtype: DataType) -> torch.Tensor:
    torch_dtype = dt.to_torch(dtype)
    if dtype is DataType.Bool:
        return torch.tensor([False, True])
    if dt.is_integral(dtype):
        info = torch.iinfo(torch_dtype)
        edges = {info.min, -1, 0, 1, 2, info.bits - 1, info.bits, info.max}
        return torch.tensor(sorted(v for v in edges if info.min <= v <= info.max),
                            dtype=torch_dtype)
    info = torch.finfo(torch_dtype)
    magnitudes = (0.0, _smallest_subnormal(torch_dtype), info.smallest_normal, 1.0, info.max,
                  math.inf)
    values = [math.nan, *(sign * m for m in magnitudes for sign in (1.0, -1.0))]
    return torch.tensor(values, dtype=torch_dtype)


@cache
def operand_grid(dtypes: tuple[DataType, ...]) -> tuple[torch.Tensor, ...]:
    """Every combination of the special values of ``dtypes``: one flat tensor per operand.
    Cached: cases sharing their operands share their input tensors, so that a group of ops
    is one segment, one kernel (ops on inputs of their own would each be a segment)."""
    columns = [special_values(dtype) for dtype in dtypes]
    if len(columns) == 1:
        index = torch.arange(len(columns[0]))[:, None]
    else:
        index = torch.cartesian_prod(*(torch.arange(len(c)) for c in columns))
    # Repeated up to a multiple of 64 rows: torch's CPU kernels then run their vectorized body
    # on every row; their scalar tail rounds otherwise (lerp: no FMA).
    index = torch.cat([index, index[: -len(index) % 64]])
    return tuple(column[index[:, i]] for i, column in enumerate(columns))


# -- what is not compared, and why --------------------------------------------------------------


@dataclass(frozen=True)
class Exclusion:
    reason: str
    applies: Callable[[str, DataType, str], bool]  # (case label, operand dtype, device type)
    rows: Callable[[list[torch.Tensor]], torch.Tensor]  # the operand rows it leaves out


_INTEGER_DIVISIONS = {"div", "mod", "fmod", "remainder"}


def _is_integer(dtype: DataType) -> bool:
    return dt.is_integral(dtype) and dtype is not DataType.Bool


def _overflowing_quotient(operands: list[torch.Tensor]) -> torch.Tensor:
    a, b = operands  # unsigned: none
    return (a == torch.iinfo(a.dtype).min) & (b == -1) & a.is_signed()


def _out_of_integer_range(target: DataType) -> Callable[[list[torch.Tensor]], torch.Tensor]:
    def rows(operands: list[torch.Tensor]) -> torch.Tensor:
        (x,) = operands
        info = torch.iinfo(dt.to_torch(target))
        whole = torch.trunc(x.double())
        # Beyond 2^63 double's own rounding decides the edge: compare with the bound's double.
        return ~((whole >= float(info.min)) & (whole < float(info.max) + 1.0))

    return rows


def _compute_dtype(operand: torch.Tensor) -> torch.dtype:  # half and bfloat16: float
    return torch.float64 if operand.dtype == torch.float64 else torch.float32


def _quotient_overflows(operands: list[torch.Tensor]) -> torch.Tensor:
    a, b = (x.double() for x in operands)
    largest = torch.finfo(_compute_dtype(operands[0])).max
    return a.isfinite() & (b != 0) & ((a / b).abs() > largest)


def _factors(operands: list[torch.Tensor]) -> list[torch.Tensor]:
    """A multiply-add's factors in eager torch's order: (value * b) * c, alpha * b."""
    if len(operands) == 4:  # addcmul(a, b, c, value)
        return [operands[3], operands[1], operands[2]]
    return [operands[2], operands[1]]  # add_alpha(a, b, alpha), sub_alpha


def _product_out_of_range(factors: list[torch.Tensor]) -> torch.Tensor:
    """Rows whose last product (of the earlier ones, rounded) is out of the normal range."""
    compute = _compute_dtype(factors[0])
    *first, last = (x.to(compute) for x in factors)
    rounded = first[0]
    for factor in first[1:]:
        rounded = rounded * factor
    info = torch.finfo(compute)
    magnitude = torch.log2(rounded.double().abs()) + torch.log2(last.double().abs())
    finite = (rounded != 0) & (last != 0) & rounded.isfinite() & last.isfinite()
    return finite & ((magnitude < math.log2(info.smallest_normal))
                     | (magnitude >= math.log2(info.max)))


def _smallest_subnormal(torch_dtype: torch.dtype) -> float:
    return torch.finfo(torch_dtype).smallest_normal * torch.finfo(torch_dtype).eps


EXCLUSIONS: tuple[Exclusion, ...] = (
    Exclusion(
        "integer division by zero: torch raises ZeroDivisionError on the CPU; the GPU's quotient"
        " is unspecified (PTX div and rem)",
        lambda label, dtype, device: label in _INTEGER_DIVISIONS and _is_integer(dtype),
        lambda operands: operands[1] == 0,
    ),
    Exclusion(
        "the integer quotient min / -1 overflows: undefined in C; torch on the CPU dies of"
        " SIGFPE",
        lambda label, dtype, device: label in _INTEGER_DIVISIONS and _is_integer(dtype),
        _overflowing_quotient,
    ),
    *(
        Exclusion(
            f"a float (NaN, inf or out of range) cast to {target.name}: undefined in C; the CPU"
            " gives x86's integer indefinite, the GPU saturates (NaN to 0)",
            lambda label, dtype, device, target=target: (label == f"cast to {target.name}"
                                                 and dt.is_floating(dtype)),
            _out_of_integer_range(target),
        )
        for target in DTYPES if _is_integer(target)
    ),
    Exclusion(
        "torch's CPU log1p (SLEEF's) gives 0 for the smallest subnormal, which is its own log1p",
        lambda label, dtype, device: label == "log1p" and device == "cpu"
        and dtype in (DataType.Float, DataType.Double),
        lambda operands: operands[0].abs() == _smallest_subnormal(operands[0].dtype),
    ),
    Exclusion(
        "torch's CPU fmod (SLEEF's vectorized fmod) gives NaN where the quotient a / b"
        " overflows; C's fmod, torch's scalar path and its CUDA give the exact remainder",
        lambda label, dtype, device: label in {"mod", "fmod", "remainder"} and device == "cpu"
        and dt.is_floating(dtype),
        _quotient_overflows,
    ),
    Exclusion(
        "relu(-0): torch's CUDA gives +0 (fmax(x, 0)); its CPU, and the kernel, -0 (x < 0 ? 0 : x)",
        lambda label, dtype, device: label == "relu" and device == "cuda"
        and dt.is_floating(dtype),
        lambda operands: (operands[0] == 0) & torch.signbit(operands[0]),
    ),
    Exclusion(
        "lerp to a zero: torch's CUDA fuses end - (end - start) (1 - weight), its CPU"
        " fmadd(weight - 1, end - start, end): the zero's sign differs; the kernel is the CPU's",
        lambda label, dtype, device: label == "lerp" and device == "cuda",
        lambda operands: torch.lerp(*(x.double() for x in operands)) == 0,
    ),
    Exclusion(
        "a product under- or overflowing in a multiply-add (a + v b c, a + alpha b): NVRTC fuses"
        " it into one FMA, as it compiles nvFuser's kernels; eager torch rounds it first",
        lambda label, dtype, device: label in {"addcmul", "add_alpha", "sub_alpha"}
        and device == "cuda" and dt.is_floating(dtype),
        lambda operands: _product_out_of_range(_factors(operands)),
    ),
    Exclusion(
        "logical_right_shift by a negative amount: torch has no such op, and the reference"
        " refuses it rather than pick a meaning",
        lambda label, dtype, device: label == "logical_right_shift"
        and dtype in (DataType.Int, DataType.Int32),
        lambda operands: operands[1] < 0,
    ),
    Exclusion(
        "erfcinv of double's smallest subnormal: the reference's x / 2 rounds it to 0 (torch has"
        " no erfcinv; the reference's is the normal quantile of x / 2)",
        lambda label, dtype, device: label == "erfcinv" and dtype is DataType.Double,
        lambda operands: operands[0] == _smallest_subnormal(operands[0].dtype),
    ),
)


def excluded_rows(label: str, dtype: DataType, device: str, operands: list[torch.Tensor],
                  ) -> torch.Tensor:
    rows = torch.zeros(len(operands[-1]), dtype=torch.bool)
    for exclusion in EXCLUSIONS:
        if exclusion.applies(label, dtype, device):
            rows |= exclusion.rows(operands)
    return rows


# -- the cases of a group -----------------------------------------------------------------------


@dataclass
class Case:
    label: str  # the op's name, or "cast to Half"
    operands: list[torch.Tensor]  # excluded rows replaced by a row that is not
    excluded: torch.Tensor  # bool per row
    apply: Callable[[FusionDefinition, list], object]
    inexact: bool


def _op_case(op: OpType, dtype: DataType, device: str) -> Case:
    columns = [dtype] * op.definition.arity
    if op is OpType.where:
        columns[0] = DataType.Bool
    return _case(op.value, dtype, device, list(operand_grid(tuple(columns))),
                 lambda fd, tensors: getattr(fd.ops, op.value)(*tensors), op in INEXACT)


def _cast_case(source: DataType, target: DataType, device: str) -> Case:
    return _case(f"cast to {target.name}", source, device, list(operand_grid((source,))),
                 lambda fd, tensors: fd.ops.cast(tensors[0], target), False)


def _case(label: str, dtype: DataType, device: str, operands: list[torch.Tensor], apply,
          inexact: bool) -> Case:
    excluded = excluded_rows(label, dtype, device, operands)
    if bool(excluded.any()):
        keep = int(torch.nonzero(~excluded)[0])  # an included row stands in: torch may trap
        operands = [_replaced(x, excluded, keep) for x in operands]
    return Case(label, operands, excluded, apply, inexact)


def _replaced(x: torch.Tensor, rows: torch.Tensor, keep: int) -> torch.Tensor:
    """``x`` with ``rows`` replaced by row ``keep`` (UInt64 by its bits: torch < 2.13)."""
    bits = x.view(torch.int64) if x.dtype == torch.uint64 else x
    return torch.where(rows, bits[keep], bits).view(x.dtype)


def _candidates(dtype: DataType, group: str, device: str) -> list[Case]:
    if group == "cast":
        return [_cast_case(dtype, target, device) for target in DTYPES if target is not dtype]
    arity = {"unary": (1,), "binary": (2,), "ternary": (3, 4)}[group]
    return [_op_case(op, dtype, device) for op in C_OPS
            if op.definition.arity in arity and op not in NOT_RENDERED]


def fusion_of(cases: list[Case]) -> tuple[FusionDefinition, list[torch.Tensor]]:
    """One fusion computing every case, one input per distinct operand tensor."""
    inputs = list({id(x): x for case in cases for x in case.operands}.values())
    with FusionDefinition() as fd:
        defined = {id(x): fd.define_tensor(shape=[-1], dtype=dt.from_torch(x.dtype))
                   for x in inputs}
        for case in cases:
            fd.add_output(case.apply(fd, [defined[id(x)] for x in case.operands]))
    return fd, inputs


@cache
def cases_taken(dtype: DataType, group: str, device: str) -> tuple[Case, ...]:
    """The group's cases the frontend accepts, eager torch computes and a kernel renders."""
    taken = []
    for case in _candidates(dtype, group, device):
        try:
            fd, inputs = fusion_of([case])
            run_reference(fd.fusion, [x.to(device) for x in inputs])
        except (DefinitionError, ReferenceError, NotImplementedError):
            continue
        if all(isinstance(kernel, Kernel) for _, kernel in kernels_of(fd.fusion, inputs)):
            taken.append(case)
    return tuple(taken)


# -- running and comparing ------------------------------------------------------------------------


def run_kernels(fusion, inputs: list[torch.Tensor], executor: CupyExecutor) -> list[torch.Tensor]:
    """The fusion's outputs, every segment through its generated kernel."""
    segmented = segment_fusion(fusion, inputs)
    ctx = ExecutionContext.for_fusion(segmented.fusion, device=inputs[0].device,
                                      faults=frozenset(),
                                      extents=bind_inputs(segmented.fusion, inputs).extents)
    env: dict[int, object] = {v.uid: x for v, x in zip(segmented.fusion.inputs, inputs)}
    for segment in segmented.segments:
        result = executor.execute_segment(segment, env, ctx)
        assert not isinstance(result, FallbackReason), result.reason
        env.update(result[0])
    return [env[output.value.uid] for output in segmented.fusion.outputs]


def _bits(x: torch.Tensor) -> torch.Tensor:
    return x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])


def wrong_elements(actual: torch.Tensor, expected: torch.Tensor, inexact: bool) -> torch.Tensor:
    """Where ``actual`` is not torch's ``expected``: bit for bit, NaN matching any NaN; for an
    inexact op, within ``ULPS`` ulps where torch's result is not special."""
    if not expected.is_floating_point():
        return actual != expected
    nan, expected_nan = actual.isnan(), expected.isnan()
    wrong = (nan != expected_nan) | (~expected_nan & (_bits(actual) != _bits(expected)))
    if not inexact:
        return wrong
    special = expected.isinf() | (expected == 0)
    ulp = expected.double().abs() * torch.finfo(expected.dtype).eps
    close = (actual.double() - expected.double()).abs() <= ULPS * ulp
    return wrong & (special | ~close | ~actual.isfinite())


def disagreements(cases: tuple[Case, ...], dtype: DataType, device: str,
                  executor: CupyExecutor) -> list[str]:
    fd, inputs = fusion_of(list(cases))
    inputs = [x.to(device) for x in inputs]
    actual = run_kernels(fd.fusion, inputs, executor)
    expected = run_reference(fd.fusion, [x.clone() for x in inputs]).outputs
    found = []
    for case, got, want in zip(cases, actual, expected, strict=True):
        if got.dtype != want.dtype:
            found.append(f"{case.label} on {dtype.name}: kernel {got.dtype}, torch {want.dtype}")
            continue
        wrong = wrong_elements(got.cpu(), want.cpu(), case.inexact) & ~case.excluded
        for row in torch.nonzero(wrong).flatten()[:4].tolist():
            operands = ", ".join(str(x[row].item()) for x in case.operands)
            found.append(f"{case.label}({operands}) on {dtype.name}: kernel "
                         f"{got[row].item()}, torch {want[row].item()}")
    return found


CASES = [(dtype, group) for dtype in DTYPES for group in GROUPS]
IDS = [f"{dtype.name}-{group}" for dtype, group in CASES]


@needs_gxx
@pytest.mark.parametrize(("dtype", "group"), CASES, ids=IDS)
def test_special_values_on_the_emulator_are_eager_torch_s(dtype: DataType, group: str) -> None:
    cases = cases_taken(dtype, group, "cpu")
    if not cases:
        pytest.skip(f"no {group} op takes {dtype.name} in the frontend, eager torch and codegen")
    found = disagreements(cases, dtype, "cpu", EmulatingExecutor(poison=True))
    assert not found, "\n".join(found)


@pytest.mark.cuda
@pytest.mark.skipif(cupy_available() is not None, reason=f"{cupy_available()}")
@pytest.mark.parametrize(("dtype", "group"), CASES, ids=IDS)
def test_special_values_on_the_gpu_are_eager_torch_s(dtype: DataType, group: str) -> None:
    cases = cases_taken(dtype, group, "cuda")
    if not cases:
        pytest.skip(f"no {group} op takes {dtype.name} in the frontend, eager torch and codegen")
    found = disagreements(cases, dtype, "cuda", CupyExecutor(poison=True, synchronize=True))
    assert not found, "\n".join(found)


def test_every_rendered_elementwise_op_meets_special_values_in_some_dtype() -> None:
    checked = {case.label for dtype in DTYPES for group in GROUPS
               for case in cases_taken(dtype, group, "cpu")}
    missing = [op.value for op in C_OPS if op not in NOT_RENDERED and op.value not in checked]
    assert not missing
