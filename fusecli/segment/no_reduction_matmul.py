"""TranslateNoReductionMatmulToMulSqueeze: a matmul over K = 1 is a broadcast multiply.

nvFuser's pre-segmentation pass (csrc/preseg_passes/
translate_no_reduction_matmul_to_mul_squeeze.cpp, PR #3810, February 2025; run second,
right after RemoveEmptyPass, since #4738). A ``matmul`` whose A operand's last dimension is a
broadcast (K = 1, not expanded) sums nothing: it becomes an outer product. The operands'
batch dimensions are aligned as torch.matmul aligns them (the one with fewer gets leading
broadcasts), the matrix dimensions get one broadcast each so the product has the K dimension
last (or, for a vector A, second to last), and a squeeze of K gives the matmul's result:

    [M, 1] @ [1, N]    ->  broadcast(A) [M, b, 1] * broadcast(transpose(B)) [b, N, 1]
                           -> squeeze -> [M, N]

Two vectors (a dot product) are left alone. Without a MatmulOp the fusion is pointwise and
reduction work: no expr_eval segment for the matmul, as nvFuser's logs show.
"""

from __future__ import annotations

from dataclasses import replace

from fusecli.ir.builder import FusionBuilder
from fusecli.ir.nodes import Expr, Fusion, TensorView, Val
from fusecli.ir.ops_elementwise import cast, elementwise
from fusecli.ir.ops_shape import broadcast, permute, squeeze
from fusecli.ir.optype import OpType
from fusecli.segment.remove_empty import with_replacements


def translate_no_reduction_matmuls(fusion: Fusion) -> Fusion:
    """``fusion`` with each matmul over a broadcast K replaced by mul + squeeze."""
    if not any(_sums_nothing(expr) for expr in fusion.exprs):
        return fusion
    replaced: dict[int, Val] = {}  # the matmul's output uid -> the squeeze's output
    exprs: list[Expr] = []
    for expr in fusion.exprs:
        expr = with_replacements(expr, replaced)
        if not _sums_nothing(expr):
            exprs.append(expr)
            continue
        builder = FusionBuilder()
        result = _mul_squeeze(builder, *expr.inputs, expr.output)
        exprs.extend(builder.exprs)
        replaced[expr.output.uid] = result
    outputs = tuple(
        replace(output, value=replaced.get(output.value.uid, output.value))
        for output in fusion.outputs
    )
    return Fusion(inputs=fusion.inputs, outputs=outputs, exprs=tuple(exprs))


def _sums_nothing(expr: Expr) -> bool:
    """A matmul whose K is a broadcast of extent 1, other than a dot product."""
    if expr.op is not OpType.matmul:
        return False
    a, b = expr.inputs
    if a.ndim == 1 and b.ndim == 1:
        return False
    k = a.logical[-1]
    return k.is_broadcast and k.expanded is None


def _mul_squeeze(
    builder: FusionBuilder, a: TensorView, b: TensorView, out: TensorView
) -> TensorView:
    """The three cases of nvFuser's translator: matrix x vector, vector x matrix, and matrix
    x matrix (batch dimensions aligned first)."""
    batch_a, batch_b = max(a.ndim - 2, 0), max(b.ndim - 2, 0)
    matrix_a, matrix_b = min(a.ndim, 2), min(b.ndim, 2)
    flags_a = [True] * max(batch_b - batch_a, 0) + [False] * (batch_a + matrix_a)
    flags_b = [True] * max(batch_a - batch_b, 0) + [False] * (batch_b + matrix_b)
    if matrix_a == 2 and matrix_b == 1:  # [M, K] x [K]: K last
        b = broadcast(builder, b, [*flags_b[:-1], True, False])
        squeezed = -1
    elif matrix_a == 1 and matrix_b == 2:  # [K] x [K, N]: K second to last
        a = broadcast(builder, a, [*flags_a, True])
        squeezed = -2
    else:  # [M, K] x [K, N] -> [M, b, K] x [b, N, K]: K last
        a = broadcast(builder, a, [*flags_a[:-1], True, False])
        b = permute(builder, b, [*range(b.ndim - 2), b.ndim - 1, b.ndim - 2])
        b = broadcast(builder, b, [*flags_b[:-2], True, False, False])
        squeezed = -1
    product = cast(builder, elementwise(builder, OpType.mul, [a, b]), out.dtype)
    return squeeze(builder, product, [product.ndim + squeezed])

