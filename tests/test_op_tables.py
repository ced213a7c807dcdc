"""Each backend's op table covers every OpType, or says which ops it leaves out and why.

The reference and the ATen executor each keep one table keyed by ``OpType``, assembled from
per-concept tables, next to an ``UNSUPPORTED`` frozenset; the CUDA generators render through
``render.C_OPS`` and the emitter's handlers, next to ``codegen.support.UNSUPPORTED`` (with the
reason the CuPy executor reports). A new op without an entry fails here, naming the op, instead
of failing at import or in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import torch

from fusecli.codegen import support as cuda_support
from fusecli.codegen.render import C_OPS
from fusecli.ir.optype import OpType
from fusecli.reference import attention as reference_attention
from fusecli.reference import context as reference_context
from fusecli.reference import elementwise as reference_elementwise
from fusecli.reference import rules as reference_rules
from fusecli.reference import structural as reference_structural
from fusecli.runtime import (
    aten,
    aten_attention,
    aten_elementwise,
    aten_other,
    aten_reduction,
    aten_shape,
)

# backend: (its table, its unsupported set, the per-concept tables it is assembled from)
BACKENDS: dict[str, tuple[Mapping, frozenset, list[Mapping]]] = {
    "reference": (
        reference_rules.RULES,
        reference_rules.UNSUPPORTED,
        [
            reference_elementwise.ELEMENTWISE_RULES,
            reference_structural.STRUCTURAL_RULES,
            reference_attention.ATTENTION_RULES,
        ],
    ),
    "aten": (
        aten.ATEN_OPS,
        aten.UNSUPPORTED,
        [
            aten_elementwise.ELEMENTWISE_OPS,
            aten_shape.SHAPE_OPS,
            aten_reduction.REDUCTION_OPS,
            aten_other.OTHER_OPS,
            aten_attention.ATTENTION_OPS,
        ],
    ),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_every_op_has_an_entry_or_is_declared_unsupported(backend: str) -> None:
    table, unsupported, _ = BACKENDS[backend]
    missing = set(OpType) - table.keys() - unsupported
    assert not missing, f"{backend}: no entry for {sorted(op.value for op in missing)}"


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_no_op_is_both_supported_and_unsupported(backend: str) -> None:
    table, unsupported, _ = BACKENDS[backend]
    assert not table.keys() & unsupported


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_per_concept_tables_claim_each_op_once(backend: str) -> None:
    # Assembling with ** would let a later table silently replace an earlier one's entry.
    table, _, parts = BACKENDS[backend]
    claimed = [op for part in parts for op in part]
    assert len(claimed) == len(set(claimed))
    assert set(claimed) == table.keys()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_entries_are_callable_and_keyed_by_optype(backend: str) -> None:
    table, unsupported, _ = BACKENDS[backend]
    assert all(isinstance(op, OpType) and callable(rule) for op, rule in table.items())
    assert all(isinstance(op, OpType) for op in unsupported)


def test_reference_leaves_out_only_the_ops_that_never_become_exprs() -> None:
    assert reference_rules.UNSUPPORTED == {OpType.shape, OpType.at}


def test_aten_covers_every_op() -> None:
    assert aten.UNSUPPORTED == frozenset()


def test_cuda_renders_every_op_or_says_why_not() -> None:
    missing = [op.value for op in OpType
               if not cuda_support.renders(op) and op not in cuda_support.UNSUPPORTED]
    assert not missing, f"cuda: no entry for {missing}"


def test_cuda_never_both_renders_and_declares_unsupported() -> None:
    both = [op.value for op in cuda_support.UNSUPPORTED if cuda_support.renders(op)]
    assert not both
    assert all(reason for reason in cuda_support.UNSUPPORTED.values())


def test_only_elementwise_ops_have_a_c_expression() -> None:
    assert all(op.definition.is_elementwise for op in C_OPS)


def _strides_that_matter(tensor: torch.Tensor) -> list[int]:
    """Strides of the dims longer than 1: a size-1 dim's stride never moves an element."""
    return [stride for size, stride in zip(tensor.shape, tensor.stride()) if size > 1]


@pytest.mark.parametrize(
    ("shape", "stride_order", "strides"),
    [
        ((2, 3, 4), (2, 0, 1), (12, 1, 3)),
        ((2, 3, 4), (0, 1, 2), (1, 2, 6)),
        ((2, 3, 4), (2, 1, 0), (12, 4, 1)),
        ((5, 1, 3), (0, 2, 1), (1, 15, 5)),
    ],
)
def test_reference_and_aten_agree_on_a_stride_order_layout(
    shape: tuple[int, ...], stride_order: tuple[int, ...], strides: tuple[int, ...]
) -> None:
    # Written independently (strides counted out; permute, make dense, permute back): the two
    # must still give one memory layout, or the same output would come back in two strides.
    x = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    ours = reference_context.with_stride_order(x, stride_order)
    theirs = aten_elementwise.with_stride_order(x, stride_order)
    assert torch.equal(ours, x) and torch.equal(theirs, x)
    assert ours.stride() == strides
    assert _strides_that_matter(ours) == _strides_that_matter(theirs)
