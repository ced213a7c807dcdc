"""fusecli.ir.attrs: which operand of a packed expr is which, read off exprs the frontend built."""

from __future__ import annotations

from fusecli.frontend import FusionDefinition
from fusecli.ir.attrs import (
    embedding_options,
    given_options,
    pad_widths,
    random_seed,
    slice_bounds,
)
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType


def _only(fd: FusionDefinition, op: OpType) -> Expr:
    (expr,) = [expr for expr in fd.fusion.exprs if expr.op is op]
    return expr


def _constants(operands: list) -> list:
    return [None if value is None else value.value for value in operands]


def test_slice_bounds_are_the_starts_then_the_ends_per_dimension() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.slice(t0, [0, 1, 2], [3, 4, 5]))
    expr = _only(fd, OpType.slice)
    starts, ends = slice_bounds(expr, expr.inputs)
    assert _constants(starts) == [0, 1, 2] and _constants(ends) == [3, 4, 5]


def test_pad_widths_follow_the_tensor_and_the_value() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.pad(t0, [1, 2, 3, 4], fd.define_scalar(7.0)))
    expr = _only(fd, OpType.pad)
    assert _constants(pad_widths(expr.inputs)) == [1, 2, 3, 4]


def test_sdpfa_options_name_only_the_operands_given() -> None:
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[2, 3, 4, 8], dtype=DataType.Float)
        outputs = fd.ops.sdpfa_fwd(
            q, q, q, is_causal=fd.define_scalar(True), scale=fd.define_scalar(0.5)
        )
        fd.add_output(outputs[0])
    expr = _only(fd, OpType.sdpfa_fwd)
    options = given_options(expr, list(range(len(expr.inputs))))
    assert options == {"is_causal": 3, "scale": 4}


def test_embedding_options_name_the_given_keywords() -> None:
    with FusionDefinition() as fd:
        indices = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        weight = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.embedding_fwd(indices, weight, max_norm=fd.define_scalar(1.0)))
    expr = _only(fd, OpType.embedding_fwd)
    options = embedding_options(expr, list(range(len(expr.inputs))))
    assert options == {"max_norm": 2}


def test_random_seed_is_the_last_two_operands_of_a_seeded_expr() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        seed = fd.define_scalar(11, DataType.Int)
        offset = fd.define_scalar(5, DataType.Int)
        fd.add_output(fd.ops.rand_like(t0, rng_seed=seed, rng_offset=offset))
        fd.add_output(fd.ops.randn_like(t0))
    seeded = _only(fd, OpType.rand_like)
    assert _constants(list(random_seed(seeded, seeded.inputs))) == [11, 5]
    unseeded = _only(fd, OpType.randn_like)
    assert random_seed(unseeded, unseeded.inputs) is None
