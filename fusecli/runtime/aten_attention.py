"""ATen execution of attention (sdpfa_fwd, sdpfa_bwd) and grouped matmul (grouped_mm).

nvFuser evaluates these ops with ATen (csrc/ir/composite_nodes.cpp); so does this executor,
with the kernels torch has on the operands' device:

- sdpfa_fwd on CUDA, where torch's flash kernel takes the operands (half and bfloat16, head
  sizes that are multiples of 8 up to 256, no bias: with one, nvFuser takes the math path):
  torch's flash attention with the dropout, as nvFuser's SdpaFwdOp::evaluate calls it; the
  dropout mask comes from torch's CUDA generator, and philox_seed and philox_offset are the
  kernel's rng_state (uint64 [2]) and its unused uint64 scalar (zeros without dropout, where
  the kernel leaves them unwritten).
- sdpfa_fwd elsewhere: without dropout on the CPU, torch's CPU flash kernel, which takes the
  bias as its mask (what eager torch computes there). Otherwise the math:
  softmax(q kᵀ · scale + bias) v in Float, with dropout drawn from fusecli's random stream at
  this expr's offset. A row every key of which is masked gives 0 (torch's safe softmax) and a
  logsumexp of -inf. philox_seed is uint64 [seed, offset] (zeros without dropout),
  philox_offset unused (0).
- sdpfa_bwd: on CUDA where the flash kernel applies, torch's flash backward with the
  philox_seed and philox_offset given (those sdpfa_fwd returned), as nvFuser's
  SdpaBwdOp::evaluate calls it; torch's CPU flash backward without dropout on the CPU;
  otherwise the math of flash attention's backward from out and logsumexp, the dropout mask
  drawn again from the [seed, offset] that sdpfa_fwd returned.
- grouped_mm: one matmul per group in the operands' dtype (nvFuser's fallback). The scaled
  form on CUDA, where torch has it: torch._scaled_grouped_mm with k the fastest dimension of
  both operands and the scales reshaped as nvFuser's GroupedMmaOp::evaluate passes them, its
  BFloat16 result cast to the output's dtype; elsewhere it dequantizes in Float and rounds to
  BFloat16 as that kernel does, then casts.

Batch dimensions beyond one (q [N1, N2, H, L, E]) are flattened for the kernels and restored.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from fusecli.ir import dtype as dt
from fusecli.ir.attrs import given_options
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.ir.rng import random_tensor
from fusecli.runtime.aten_elementwise import AtenFn
from fusecli.runtime.context import ExecutionContext

Tensor = torch.Tensor

# -- attention ----------------------------------------------------------------------------------


def _scalars(options: dict[str, Any], query: Tensor) -> tuple[float, bool, float]:
    """(dropout_p, is_causal, scale) with nvFuser's defaults: 0, false, 1/sqrt(E)."""
    scale = options.get("scale")
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    return float(options.get("dropout_p") or 0.0), bool(options.get("is_causal") or False), scale


def _sdpfa_fwd(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    query, key, value = args[:3]
    options = given_options(expr, args)
    dropout_p, is_causal, scale = _scalars(options, query)
    bias = _attention_bias(options.get("bias"), options.get("mask"), query.dtype)
    batch = query.shape[:-3]
    q, k, v = (_flatten(t) for t in (query, key, value))
    if bias is not None:
        bias = _flatten(bias.expand(*batch, *bias.shape[-3:]))
    if query.device.type == "cuda" and _flash_applies(q, k, v, bias):
        out, logsumexp, philox_seed, philox_offset = _cuda_flash(
            q, k, v, dropout_p, is_causal, scale
        )
    else:
        seed, offset = (ctx.seed, ctx.random_offsets.get(expr.uid, 0)) if dropout_p else (0, 0)
        if dropout_p == 0.0 and _flash_applies(q, k, v, bias):
            out, logsumexp = _cpu_flash(q, k, v, bias, is_causal, scale)
        else:
            out, logsumexp = _attention_math(q, k, v, bias, dropout_p, is_causal, scale,
                                             (seed, offset))
        philox_seed, philox_offset = _philox_state(seed, offset, query.device)
    out = out.reshape(*batch, *out.shape[1:])
    logsumexp = logsumexp.float().reshape(*batch, *logsumexp.shape[1:])
    return (out, logsumexp, philox_seed, philox_offset)


def _philox_state(seed: int, offset: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """philox_seed (uint64 [seed, offset]) and philox_offset (an unused uint64 0)."""
    return (torch.tensor([seed, offset], dtype=torch.uint64, device=device),
            torch.zeros((), dtype=torch.uint64, device=device))


def _attention_bias(bias: Tensor | None, mask: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """nvFuser's attention bias: bias plus 0 where mask holds and -inf elsewhere."""
    if mask is None:
        return bias
    masked = torch.where(mask, 0.0, -math.inf).to(dtype)
    return masked if bias is None else bias + masked


def _flatten(tensor: Tensor) -> Tensor:
    """[N1, ..., H, L, E] as [N, H, L, E]."""
    return tensor.reshape(-1, *tensor.shape[-3:])


def _flash_applies(query: Tensor, key: Tensor, value: Tensor, bias: Tensor | None = None):
    """Whether torch's flash kernel takes these operands (one head size; on CUDA, no bias,
    half types and head sizes that are multiples of 8 up to 256)."""
    head_size = query.shape[-1]
    if key.shape[-1] != head_size or value.shape[-1] != head_size:
        return False
    if query.device.type == "cpu":
        return True
    return bias is None and query.dtype in (torch.float16, torch.bfloat16) and (
        head_size % 8 == 0 and head_size <= 256
    )


def _cpu_flash(query, key, value, bias, is_causal: bool, scale: float) -> tuple[Tensor, Tensor]:
    """torch's CPU flash kernel, without dropout."""
    out, logsumexp = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query, key, value, 0.0, is_causal, attn_mask=bias, scale=scale
    )
    if bias is None:
        return out, logsumexp
    # The kernel's logsumexp of a row with no visible key is 0; it is that of no terms.
    visible = bias != -math.inf
    if is_causal:
        lengths = (query.shape[-2], key.shape[-2])
        visible = visible & torch.ones(lengths, dtype=torch.bool, device=bias.device).tril()
    return out, logsumexp.masked_fill(~visible.any(dim=-1), -math.inf)


def _cuda_flash(
    query, key, value, dropout_p: float, is_causal: bool, scale: float
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """out, logsumexp, philox_seed and philox_offset from torch's CUDA flash kernel, called as
    nvFuser's SdpaFwdOp::evaluate calls it; its dropout draws from torch's CUDA generator."""
    results = torch.ops.aten._scaled_dot_product_flash_attention(
        query, key, value, dropout_p, is_causal, False, scale=scale
    )
    # (out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, rng_state, unused, debug_attn_mask)
    out, logsumexp, rng_state, unused = results[0], results[1], results[6], results[7]
    if dropout_p == 0.0:  # the kernel leaves its rng_state unwritten: zeros, as elsewhere
        return (out, logsumexp, *_philox_state(0, 0, query.device))
    return out, logsumexp, rng_state, unused


def _scores(query: Tensor, key: Tensor, bias: Tensor | None, is_causal: bool, scale: float):
    """q kᵀ · scale + bias in Float, -inf where a causal query may not look."""
    scores = torch.matmul(query.float(), key.float().transpose(-2, -1)) * scale
    if bias is not None:
        scores = scores + bias.float()
    if is_causal:
        length, source_length = scores.shape[-2:]
        keep = torch.ones(length, source_length, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    return scores


def _probabilities(scores: Tensor, logsumexp: Tensor) -> Tensor:
    """exp(scores - logsumexp), 0 in a row whose every score is -inf."""
    weights = torch.exp(scores - logsumexp.unsqueeze(-1))
    return torch.where((logsumexp == -math.inf).unsqueeze(-1), 0.0, weights)


def _kept(shape: torch.Size, dropout_p: float, philox: tuple[int, int], device) -> Tensor:
    """Where dropout keeps a probability: the same draws in the forward and the backward."""
    draws = random_tensor("uniform", tuple(shape), torch.float32, 0.0, 1.0, *philox, device)
    return draws >= dropout_p


def _attention_math(
    query, key, value, bias, dropout_p: float, is_causal: bool, scale: float,
    philox: tuple[int, int],
) -> tuple[Tensor, Tensor]:
    scores = _scores(query, key, bias, is_causal, scale)
    logsumexp = torch.logsumexp(scores, dim=-1)
    weights = _probabilities(scores, logsumexp)
    if dropout_p:
        kept = _kept(weights.shape, dropout_p, philox, weights.device)
        weights = torch.where(kept, weights / (1 - dropout_p), 0.0)
    out = torch.matmul(weights, value.float()).to(query.dtype)
    return out, logsumexp


def _sdpfa_bwd(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset = args[:8]
    dropout_p, is_causal, scale = _scalars(given_options(expr, args), query)
    if query.device.type == "cuda" and _flash_applies(query, key, value):
        # As nvFuser's SdpaBwdOp::evaluate: cum_seq_q and cum_seq_k undefined (no nested
        # tensors), max_q and max_k the sequence lengths, the philox state as given.
        return tuple(torch.ops.aten._scaled_dot_product_flash_attention_backward(
            grad_out, query, key, value, out, logsumexp, None, None,
            query.shape[2], key.shape[2], dropout_p, is_causal, philox_seed, philox_offset,
            scale=scale,
        ))
    if dropout_p == 0.0 and query.device.type == "cpu" and _flash_applies(query, key, value):
        return tuple(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            grad_out, query, key, value, out, logsumexp, 0.0, is_causal, scale=scale
        ))
    philox = tuple(int(word) for word in philox_seed.reshape(-1)[:2].tolist())
    grads = _attention_math_backward(
        grad_out.float(), query.float(), key.float(), value.float(), out.float(),
        logsumexp.float(), dropout_p, is_causal, scale, philox,
    )
    return tuple(g.to(t.dtype) for g, t in zip(grads, (query, key, value)))


def _attention_math_backward(
    grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, scale, philox
) -> tuple[Tensor, Tensor, Tensor]:
    """Flash attention's backward: P from the saved logsumexp, D = rowsum(dO ∘ O)."""
    probabilities = _probabilities(_scores(query, key, None, is_causal, scale), logsumexp)
    grad_dropped = torch.matmul(grad_out, value.transpose(-2, -1))
    dropped = probabilities
    if dropout_p:
        kept = _kept(probabilities.shape, dropout_p, philox, probabilities.device)
        dropped = torch.where(kept, probabilities / (1 - dropout_p), 0.0)
        grad_dropped = torch.where(kept, grad_dropped / (1 - dropout_p), 0.0)
    grad_value = torch.matmul(dropped.transpose(-2, -1), grad_out)
    row_dot = (grad_out * out).sum(dim=-1, keepdim=True)
    grad_scores = probabilities * (grad_dropped - row_dot)
    grad_query = torch.matmul(grad_scores, key) * scale
    grad_key = torch.matmul(grad_scores.transpose(-2, -1), query) * scale
    return grad_query, grad_key, grad_value


# -- grouped matmul -----------------------------------------------------------------------------


def _grouped_mm(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    mat1, mat2, offsets = args[:3]
    options = given_options(expr, args)
    sizes = torch.diff(offsets.long(), prepend=offsets.new_zeros(1).long()).tolist()
    # How each operand divides into groups: [m, k] x [k, n] splits k; a 3-D operand is one
    # matrix per group, and the other splits along its own non-k dimension.
    if mat1.dim() == 2 and mat2.dim() == 2:
        cut1, cut2, join = _split(sizes, -1), _split(sizes, 0), torch.stack
    elif mat1.dim() == 3:
        cut1, cut2, join = _unbind, _split(sizes, -1), _joined(-1)
    else:
        cut1, cut2, join = _split(sizes, 0), _unbind, _joined(0)
    ones, twos = cut1(mat1), cut2(mat2)
    if "scale1" not in options:
        return (join([torch.matmul(a, b) for a, b in zip(ones, twos)]),)
    if mat1.is_cuda and hasattr(torch, "_scaled_grouped_mm"):
        return (_scaled_on_cuda(mat1, mat2, offsets, options).to(dt.to_torch(expr.output.dtype)),)
    # A scale of the rank of its matrix divides as the matrix does; one of higher rank (the
    # 2-D x 2-D form) holds one scale per group.
    scales1, scales2 = (
        (_unbind if scale.dim() > matrix.dim() else cut)(scale)
        for scale, matrix, cut in ((options["scale1"], mat1, cut1),
                                   (options["scale2"], mat2, cut2))
    )
    products = [
        torch.matmul(a.float() * s1.float(), b.float() * s2.float())
        for a, b, s1, s2 in zip(ones, twos, scales1, scales2)
    ]
    return (join(products).to(torch.bfloat16).to(dt.to_torch(expr.output.dtype)),)


def _scaled_on_cuda(mat1: Tensor, mat2: Tensor, offsets: Tensor, options: dict) -> Tensor:
    """torch._scaled_grouped_mm as nvFuser calls it: k the fastest dimension of both operands;
    the 2-D x 2-D form's scales ([g, m, 1], [g, 1, n]) flattened, group dimension slowest;
    the others' k dimension squeezed out. Its output is BFloat16."""
    scale1, scale2 = options["scale1"], options["scale2"]
    if mat1.dim() == 2 and mat2.dim() == 2:
        scale1, scale2 = scale1.reshape(-1), scale2.reshape(-1)
    else:
        scale1, scale2 = scale1.squeeze(-1), scale2.squeeze(-2)
    return torch._scaled_grouped_mm(
        mat1.contiguous(), mat2.transpose(-1, -2).contiguous().transpose(-1, -2),
        scale1, scale2, offsets, None, None, torch.bfloat16)


def _split(sizes: list[int], dim: int):
    return lambda tensor: tensor.split(sizes, dim)


def _unbind(tensor: Tensor) -> tuple[Tensor, ...]:
    return tensor.unbind(0)


def _joined(dim: int):
    return lambda tensors: torch.cat(tensors, dim)


ATTENTION_OPS: dict[OpType, AtenFn] = {
    OpType.grouped_mm: _grouped_mm,
    OpType.sdpfa_fwd: _sdpfa_fwd,
    OpType.sdpfa_bwd: _sdpfa_bwd,
}
