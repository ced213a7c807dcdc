"""The error analysis counts the rounding of every scalar a fusion holds in a narrow dtype.

A scalar (a Double -3.38953e38, 0.1, -10/3) given to an op whose result is float16, bfloat16 or
an fp8 is rounded to that dtype (or to the float32 its arithmetic computes in) by eager torch
and by every executor alike; the float64 reference keeps it exact. The hard bound must count
that rounding: ``llama_causal_mask_build`` (a Double -3.38953e38 filled into bfloat16, then
``where``) was a mismatch on the GPU though every element was eager torch's. Each op taking a
scalar, in each position, into each narrow dtype: eager torch's own result is within the bound
of the float64 value; and a value one ulp off the rounded scalar is still caught.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fusecli.compare.diff import bounded_mismatch
from fusecli.compare.elements import element_errors, pair_kind
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.builder import DefinitionError
from fusecli.ir.optype import OpType
from fusecli.load import load_path
from fusecli.reference import run_reference
from fusecli.reference.interpreter import ReferenceError

NARROW = (DataType.Half, DataType.BFloat16, DataType.Float8_e4m3fn, DataType.Float8_e5m2)
SIZE = 64

# Binary and ternary elementwise ops with a floating result: any operand may be a scalar
# (where's condition excepted).
SCALAR_OPS = [op for op in OpType if op.definition.is_elementwise and op.definition.arity >= 2
              and not op.definition.integer_only and op.definition.promotion is not None
              and op.definition.promotion.name != "BOOL"]


def scalar_values(dtype: DataType) -> list[float]:
    """Values the dtype does not hold: they round. The last is just above the largest finite
    value, so it rounds down to it (bfloat16: nvFuser's mask value, -3.38953e38)."""
    info = torch.finfo(dt.to_torch(dtype))
    return [0.1, -10 / 3, -info.max * (1 + info.eps / 8)]


def _tensor(dtype: DataType, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(SIZE, generator=generator, dtype=torch.float64) * 3).to(
        dt.to_torch(dtype))


def _fusion(build) -> FusionDefinition:
    with FusionDefinition() as fd:
        build(fd)
    return fd


def outside_the_bound(fusion, inputs: list, corrupt=None) -> list[int]:
    """Per output, how many elements of eager torch's result (changed by ``corrupt`` first)
    lie farther from the float64 value than the hard bound allows."""
    eager = run_reference(fusion, [x.clone() for x in inputs]).outputs
    exact = run_reference(fusion, [x.clone() for x in inputs], float64=True, bounds=True)
    counts = []
    for index, (got, value, bound) in enumerate(zip(eager, exact.outputs, exact.bounds,
                                                   strict=True)):
        assert hasattr(bound, "hard"), f"output {index} has no bound: {bound}"
        if corrupt is not None:
            got = corrupt(index, got.clone())
        to_eager = element_errors(got, got, pair_kind(got.dtype, got.dtype))
        to_exact = element_errors(got, value, pair_kind(got.dtype, value.dtype))
        beyond, _ = bounded_mismatch(got, to_eager, to_exact, (bound.hard, bound.tight))
        counts.append(int(beyond.sum()))
    return counts


def _op_cases(op: OpType, dtype: DataType):
    """(label, fusion, inputs) for the scalar in each position of ``op`` and each value."""
    first = 1 if op is OpType.where else 0
    for position in range(first, op.definition.arity):
        for value in scalar_values(dtype):
            def build(fd, position=position, value=value):
                operands = []
                for index in range(op.definition.arity):
                    if index == position:
                        operands.append(fd.define_scalar(value, dtype=DataType.Double))
                    elif op is OpType.where and index == 0:
                        operands.append(fd.define_tensor(shape=[-1], dtype=DataType.Bool))
                    else:
                        operands.append(fd.define_tensor(shape=[-1], dtype=dtype))
                fd.add_output(getattr(fd.ops, op.value)(*operands))

            inputs = [torch.arange(SIZE) % 3 == 0 if (op is OpType.where and index == 0)
                      else _tensor(dtype, index) for index in range(op.definition.arity)
                      if index != position]
            yield f"{op.value}, scalar {value:g} as operand {position}", build, inputs


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("op", SCALAR_OPS, ids=lambda op: op.value)
def test_eager_torch_with_a_scalar_is_within_the_bound(op: OpType, dtype: DataType) -> None:
    checked, failures = 0, []
    for label, build, inputs in _op_cases(op, dtype):
        try:
            counts = outside_the_bound(_fusion(build).fusion, inputs)
        except (DefinitionError, ReferenceError):  # the op does not take it, or torch refuses
            continue
        checked += 1
        if any(counts):
            failures.append(f"{label}: {counts} elements outside the hard bound")
    if not checked:
        pytest.skip(f"{op.value} on {dtype.name}: the frontend or eager torch refuses it")
    assert not failures, "\n".join(failures)


def _creation_cases(dtype: DataType, value: float):
    """full, iota and pad with the scalar, then where selecting it (the llama mask)."""

    def full(fd):
        condition = fd.define_tensor(shape=[-1], dtype=DataType.Bool)
        filled = fd.ops.full([SIZE], fd.define_scalar(value, dtype=DataType.Double), dtype)
        fd.add_output(filled)
        fd.add_output(fd.ops.where(condition, filled, fd.define_scalar(0.0)))

    def iota(fd):
        start = fd.define_scalar(value, dtype=DataType.Double)
        step = fd.define_scalar(value / 16, dtype=DataType.Double)
        fd.add_output(fd.ops.iota(fd.define_scalar(SIZE), start, step, dtype))

    def pad(fd):
        x = fd.define_tensor(shape=[-1], dtype=dtype)
        fd.add_output(fd.ops.pad(x, [2, 3], fd.define_scalar(value, dtype=DataType.Double)))

    condition = torch.arange(SIZE) % 3 == 0
    yield "full", full, [condition]
    yield "iota", iota, []
    yield "pad", pad, [_tensor(dtype, 0)]


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["full", "iota", "pad"])
def test_a_created_or_padded_scalar_is_within_the_bound(op: str, dtype: DataType) -> None:
    checked, failures = 0, []
    for value in scalar_values(dtype):
        for label, build, inputs in _creation_cases(dtype, value):
            if label != op:
                continue
            try:
                counts = outside_the_bound(_fusion(build).fusion, inputs)
            except (DefinitionError, ReferenceError):
                continue
            checked += 1
            if any(counts):
                failures.append(f"{op}({value:g}) into {dtype.name}: {counts} outside")
    if not checked:
        pytest.skip(f"{op} into {dtype.name}: the frontend or eager torch refuses it")
    assert not failures, "\n".join(failures)


def _one_ulp_off(tensor: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """``tensor`` with the elements at ``where`` moved one ulp of its dtype toward zero."""
    bits = tensor.view({1: torch.uint8, 2: torch.int16}[tensor.element_size()])
    return torch.where(where, bits - 1, bits).view(tensor.dtype)


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_a_fill_one_ulp_off_its_rounding_is_still_caught(dtype: DataType) -> None:
    # Not 0.1: an fp8's smallest normal (the comparison's absolute allowance) exceeds its ulp.
    for value in scalar_values(dtype)[1:]:
        (label, build, inputs), *_ = _creation_cases(dtype, value)
        fusion = _fusion(build).fusion
        masked = inputs[0]

        def corrupt(index, got, masked=masked):  # output 0: the full; output 1: where over it
            return _one_ulp_off(got, torch.ones_like(masked) if index == 0 else masked)

        assert outside_the_bound(fusion, inputs) == [0, 0], (label, value)
        assert outside_the_bound(fusion, inputs, corrupt) == [SIZE, int(masked.sum())], value


def test_the_llama_causal_mask_matches_its_float64_value_within_the_bound() -> None:
    path = Path(__file__).parent / "nvfuser_corpus" / "llama_causal_mask_build.py"
    (loaded,) = load_path(path, device="cpu")
    assert outside_the_bound(loaded.fusion, loaded.inputs) == [0, 0]
