"""Reference rules for attention (sdpfa_fwd, sdpfa_bwd) and grouped matmul (grouped_mm).

Each is the math written out in eager torch, in float32 at least (float64 for Double inputs and
in float64 mode), independent of the executors' kernels:

- sdpfa_fwd: softmax(q kᵀ · scale + bias, masked) v and the logsumexp of the same scores; a
  row whose every key is masked attends to nothing (output 0, logsumexp -inf), as torch's safe
  softmax; no dropout state (zeros).
- sdpfa_bwd: flash attention's backward from the given out and logsumexp: P = exp(s - lse),
  dV = Pᵀ dO, dS = P ∘ (dO Vᵀ - rowsum(dO ∘ O)), dQ = dS K · scale, dK = dSᵀ Q · scale.
- grouped_mm: each group's slice of the operands multiplied on its own; the scaled form
  multiplies each row of mat1 and each column of mat2 by its scale, and its result is rounded
  to BFloat16 (torch._scaled_grouped_mm's only output dtype) before the output's dtype, except
  in float64 mode.

Dropout cannot be reproduced: it draws from the generator of the run that computed it
(torch's CUDA generator where the executors call torch's flash attention on CUDA, as
nvFuser does; fusecli's philox stream elsewhere), whose state the reference does not see.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from fusecli.ir.attrs import given_options
from fusecli.ir.optype import OpType
from fusecli.reference.context import OpContext

Tensor = torch.Tensor


def _options(ctx: OpContext, operands: tuple[object, ...]) -> tuple[dict, bool, float]:
    """The given options, is_causal and scale (1/sqrt(E) by default); dropout refused."""
    options = given_options(ctx.expr, operands)
    dropout_p = float(options.get("dropout_p") or 0.0)
    if dropout_p > 0:
        raise ValueError(
            f"dropout_p={dropout_p} cannot be reproduced: dropout draws from the run's random "
            "generator (torch's CUDA generator for flash attention on a GPU); compare with "
            "dropout_p=0.0"
        )
    query = operands[0] if ctx.expr.op is OpType.sdpfa_fwd else operands[1]
    scale = options.get("scale")
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    return options, bool(options.get("is_causal") or False), scale


def _math_dtype(tensor: Tensor) -> torch.dtype:
    return torch.promote_types(tensor.dtype, torch.float32)


def _scores(query: Tensor, key: Tensor, is_causal: bool, scale: float) -> Tensor:
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:  # query i sees keys 0..i: the lower triangle of each matrix
        visible = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
        scores = torch.where(visible, scores, -math.inf)
    return scores


def _no_philox(ctx: OpContext) -> tuple[Tensor, Tensor]:
    return (torch.zeros(2, dtype=torch.uint64, device=ctx.device),
            torch.zeros((), dtype=torch.uint64, device=ctx.device))


def _sdpfa_fwd(ctx: OpContext, query: Tensor, key: Tensor, value: Tensor, *given: object):
    options, is_causal, scale = _options(ctx, (query, key, value, *given))
    dtype = _math_dtype(query)
    scores = _scores(query.to(dtype), key.to(dtype), is_causal, scale)
    if "bias" in options:
        scores = scores + options["bias"].to(dtype)
    if "mask" in options:
        scores = scores.masked_fill(~options["mask"], -math.inf)
    logsumexp = torch.logsumexp(scores, dim=-1)
    nothing_visible = (scores == -math.inf).all(dim=-1, keepdim=True)
    weights = torch.where(nothing_visible, 0.0, torch.softmax(scores, dim=-1))
    out = torch.matmul(weights, value.to(dtype))
    return out, logsumexp, *_no_philox(ctx)


def _sdpfa_bwd(
    ctx: OpContext, grad_out: Tensor, query: Tensor, key: Tensor, value: Tensor, out: Tensor,
    logsumexp: Tensor, philox_seed: Tensor, philox_offset: Tensor, *given: object,
):
    operands = (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, *given)
    _, is_causal, scale = _options(ctx, operands)
    dtype = _math_dtype(query)
    d_out, q, k, v, o = (t.to(dtype) for t in (grad_out, query, key, value, out))
    lse = logsumexp.to(dtype).unsqueeze(-1)
    scores = _scores(q, k, is_causal, scale)
    probabilities = torch.where(lse == -math.inf, 0.0, torch.exp(scores - lse))
    grad_value = torch.matmul(probabilities.transpose(-2, -1), d_out)
    grad_probabilities = torch.matmul(d_out, v.transpose(-2, -1))
    grad_scores = probabilities * (grad_probabilities - (d_out * o).sum(-1, keepdim=True))
    grad_query = torch.matmul(grad_scores, k) * scale
    grad_key = torch.matmul(grad_scores.transpose(-2, -1), q) * scale
    return grad_query, grad_key, grad_value


def _grouped_mm(ctx: OpContext, mat1: Tensor, mat2: Tensor, offsets: Tensor, *given: object):
    options = given_options(ctx.expr, (mat1, mat2, offsets, *given))
    dtype = _math_dtype(mat1)
    a, b = mat1.to(dtype), mat2.to(dtype)
    scaled = "scale1" in options
    one = torch.ones((), dtype=dtype, device=a.device)
    s1, s2 = (options[n].to(dtype) for n in ("scale1", "scale2")) if scaled else (one, one)
    ends = [int(end) for end in offsets.tolist()]
    rows, cols = a.shape[-2], b.shape[-1]
    if a.dim() == 2 and b.dim() == 2:  # groups split k: one [m, n] product each
        out = torch.zeros(len(ends), rows, cols, dtype=dtype, device=a.device)
    else:
        out = torch.zeros(rows if a.dim() == 3 else a.shape[0], cols, dtype=dtype,
                          device=a.device)
    for group, (start, end) in enumerate(zip([0, *ends[:-1]], ends)):
        if a.dim() == 2 and b.dim() == 2:
            left, right = a[:, start:end], b[start:end]
            left_scale, right_scale = _group_of(s1, group), _group_of(s2, group)
            out[group] = torch.matmul(left * left_scale, right * right_scale)
        elif a.dim() == 3:  # [g, m, k] x [k, n]: groups split n
            right_scale = s2[..., start:end] if scaled else one
            out[:, start:end] = torch.matmul(a[group] * _group_of(s1, group),
                                             b[:, start:end] * right_scale)
        else:  # [m, k] x [g, k, n]: groups split m
            left_scale = s1[start:end] if scaled else one
            out[start:end] = torch.matmul(a[start:end] * left_scale,
                                          b[group] * _group_of(s2, group))
    if scaled and not ctx.float64:
        out = out.to(torch.bfloat16)
    return out


def _group_of(scale: Tensor, group: int) -> Tensor:
    """A group's scales from a tensor that holds one set per group (or the number 1)."""
    return scale[group] if scale.dim() else scale


ATTENTION_RULES: dict[OpType, Callable[..., object]] = {
    OpType.grouped_mm: _grouped_mm,
    OpType.sdpfa_fwd: _sdpfa_fwd,
    OpType.sdpfa_bwd: _sdpfa_bwd,
}
