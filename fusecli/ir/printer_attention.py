"""The text of attention and grouped matmul exprs, as nvFuser prints SdpaFwdOp, SdpaBwdOp and
GroupedMmaOp (csrc/ir/composite_nodes.cpp); part of ``printer_exprs.EXPR_PRINTERS``.

An option not given prints nvFuser's default where nvFuser fills one in (dropout_p 0,
is_causal false) and is left out otherwise (bias, mask, scale).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.attrs import given_options
from fusecli.ir.nodes import Expr

if TYPE_CHECKING:
    from fusecli.ir.printer import ValuePrinter

# Arguments aligned under the first, as matmul, linear and embedding print theirs.
_ALIGNED = ",\n            "
_FILLED_IN = {"dropout_p": "double(0)", "is_causal": "false"}


def _texts(expr: Expr, values: ValuePrinter) -> tuple[list[str], dict[str, str]]:
    """The required operands' texts, and the given options' by name."""
    texts = [values.value(v) for v in expr.inputs]
    given = given_options(expr, texts)
    return texts[: len(texts) - len(given)], given


def sdpa(expr: Expr, values: ValuePrinter) -> str:
    (query, key, value), given = _texts(expr, values)
    scalars = {**_FILLED_IN, **given}
    args = [query, key, value, *(f"{n} = {given[n]}" for n in ("bias", "mask") if n in given)]
    args += [f"{n} = {scalars[n]}" for n in ("dropout_p", "is_causal")]
    outputs = ",\n".join(values.value(v) for v in expr.outputs)
    text = f"{outputs}\n   = sdpa({_ALIGNED.join(args)}"
    if "scale" in given:  # with nvFuser's spaces, as in linear
        text += f"  ,\n          scale = {given['scale']}"
    return text + "  )\n"


def sdpa_bwd(expr: Expr, values: ValuePrinter) -> str:
    tensors, given = _texts(expr, values)
    grad, query, key, value, out, logsumexp, seed, offset = tensors
    scalars = {**_FILLED_IN, **given}
    args = [grad, query, key, value, out, f"logsum_exp = {logsumexp}",
            *(f"{n} = {scalars[n]}" for n in ("dropout_p", "is_causal")),
            f"philox_seed = {seed}", f"philox_offset = {offset}"]
    if "scale" in given:
        args.append(f"scale = {given['scale']}")
    outputs = ",\n".join(values.value(v) for v in expr.outputs)
    return f"{outputs}\n   = sdpa_bwd({_ALIGNED.join(args)})\n"


def grouped_mm(expr: Expr, values: ValuePrinter) -> str:
    (mat1, mat2, offsets), given = _texts(expr, values)
    args = [f"mat1={mat1}", f"mat2={mat2}", f"offsets={offsets}"]
    args += [f"{name}={text}" for name, text in given.items()]
    return f"{values.value(expr.output)} = GroupedMmaOp({', '.join(args)})\n"
