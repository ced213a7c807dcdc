"""The op records are the one declaration of each op: everything derived from them agrees.

``fusecli.ir.opdefs`` declares each op once; ``OpType``, the frontend's ``fd.ops`` methods and
argument binding, the promotion table, the printer's names and the CUDA math functions are
read off the records. These tests check the derivation, and that a record's claims hold where
nvFuser's frontend defines the behaviour.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

from fusecli.app.codegen_check import check_fusion
from fusecli.codegen import support as cuda_support
from fusecli.codegen.render import C_OPS
from fusecli.frontend import DataType, FusionDefinition
from fusecli.frontend.ops import Ops
from fusecli.ir import opdocs, ops_elementwise
from fusecli.ir.opdefs import DEFS, OPS, OpKind
from fusecli.ir.optype import OpType
from fusecli.ir.printer_exprs import EXPR_PRINTERS

ELEMENTWISE = [op for op in OpType if op.definition.is_elementwise]


def test_optype_has_one_member_per_record_in_record_order() -> None:
    assert [op.value for op in OpType] == [d.name for d in OPS]
    assert all(OpType(name).definition is d for name, d in DEFS.items())
    assert all(op.kind is op.definition.kind for op in OpType)


@pytest.mark.parametrize("op", [op for op in OpType if op.definition.params], ids=str)
def test_every_op_with_a_signature_is_an_fd_ops_method(op: OpType) -> None:
    assert callable(getattr(Ops, op.value, None)), f"fd.ops.{op.value} is missing"


def test_every_op_has_a_printer() -> None:
    assert set(OpType) <= EXPR_PRINTERS.keys()


def test_every_elementwise_op_has_a_dtype_rule_and_nothing_else_has_one() -> None:
    assert {op for op in OpType if op.definition.promotion} == set(ELEMENTWISE)
    assert set(ops_elementwise.PROMOTION) == set(ELEMENTWISE)


def test_record_arity_is_the_number_of_required_params() -> None:
    arity = {OpKind.UNARY: 1, OpKind.BINARY: 2}
    for op in ELEMENTWISE:
        if op.kind in arity:
            assert op.definition.arity == arity[op.kind], op


def test_cuda_math_names_become_render_entries() -> None:
    for op in OpType:
        if op.definition.cuda:
            assert op in C_OPS
            assert C_OPS[op](["x"] * op.definition.arity, DataType.Double).startswith(
                op.definition.cuda + "(")


def _one_op_fusion(name: str, dtype: DataType):
    with FusionDefinition() as fd:
        operands = [fd.define_tensor(shape=[-1], dtype=dtype)]
        arity = getattr(OpType, name).definition.arity
        operands += [fd.define_tensor(shape=[-1], dtype=dtype) for _ in range(arity - 1)]
        fd.add_output(getattr(fd.ops, name)(*operands))
    return fd


@pytest.mark.parametrize("name", ["add", "bitwise_and", "exp", "logical_not", "rsqrt"])
def test_generated_methods_take_the_record_signature(name: str) -> None:
    method = getattr(Ops, name)
    assert method.__name__ == name
    assert ", ".join(getattr(OpType, name).definition.params) in inspect.getdoc(method)
    fd = _one_op_fusion(name, DataType.Int if "bitwise" in name else DataType.Float)
    assert fd.fusion.exprs[-1].op is getattr(OpType, name)


def test_a_generated_method_checks_its_arity_from_the_record() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        with pytest.raises(TypeError, match=r"exp\(\): incompatible function arguments. takes 1 "
                           r"arguments, got 2"):
            fd.ops.exp(t0, t0)


def test_bound_signatures_come_from_the_record() -> None:
    # sum's record: arg, dims, keepdim=False, dtype=Null, with axes= and dim= for dims.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, axes=[1], keepdim=True))
    assert fd.fusion.outputs[0].value.ndim == 2
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
            fd.ops.sum(t0, axis=0)


@pytest.mark.parametrize(
    ("name", "dtype", "expected"),
    [("isnan", DataType.BFloat16, "isnan"), ("logical_and", DataType.BFloat16, "&&")],
)
def test_records_that_test_operands_in_their_own_dtype_emit_no_dead_casts(
    name: str, dtype: DataType, expected: str
) -> None:
    fd = _one_op_fusion(name, dtype)
    produced = {o for e in fd.fusion.exprs for o in e.outputs}
    used = {v for e in fd.fusion.exprs for v in e.inputs} | {
        o.value for o in fd.fusion.outputs}
    assert produced <= used, "an expr whose output nothing reads"
    assert expected in fd.fusion_ir()


def test_the_cuda_generator_reports_why_an_op_is_unsupported() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.triu(t0), t0))
    x = torch.randn(4, 4)
    (check,) = check_fusion(fd.fusion, [x], compile=False)
    assert (check.scheduler, check.status) == ("pointwise", "skipped")
    assert check.message == f"triu: {cuda_support.UNSUPPORTED[OpType.triu]}"


def test_the_docs_op_table_is_the_one_written_from_the_records() -> None:
    docs = Path(__file__).resolve().parent.parent / "docs" / "ir.md"
    text = docs.read_text()
    assert opdocs.rewritten(text) == text, "run: python -m fusecli.ir.opdocs docs/ir.md"
    assert all(f"`{d.name}`" in text for d in OPS if not d.is_elementwise or d.doc)
