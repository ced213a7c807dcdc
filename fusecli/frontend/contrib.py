"""``nvfuser.contrib.nn.normalization``: instance norms whose forward and backward are fusions.

nvFuser shipped ``InstanceNorm{1,2,3}dNVFuser``, drop-in replacements for ``torch.nn``'s
instance norms whose two passes are nvFuser fusions. These are fusecli's, written against its own
frontend: the same constructor, train/eval and running-statistics behaviour as
``torch.nn.InstanceNorm3d``, with the forward and the backward each one ``FusionDefinition``
built from ordinary ``fd.ops`` (so a script that uses them is captured, segmented and checked
like any other fusion).

The math, per (batch, channel) instance over its spatial elements ``S`` (``M = |S|``):

- forward with the input's statistics: ``mean = Σx/M``, ``var = Σ(x-mean)²/M``,
  ``invstd = rsqrt(var + eps)``, ``y = (x-mean)·invstd·w + b``; running statistics (when tracked)
  move by ``momentum`` toward the batch average of ``mean`` and of the unbiased variance;
- forward in eval mode with tracked statistics: ``mean`` and ``var`` are the running ones;
- backward with the input's statistics: ``x̂ = (x-mean)·invstd``, ``g = dy·w``,
  ``dx = invstd·(g - mean_S(g) - x̂·mean_S(g·x̂))``; with running statistics ``dx = dy·w·invstd``;
  ``dw = Σ_{N,S} dy·x̂`` and ``db = Σ_{N,S} dy``.

Half and bfloat16 inputs are computed in float32 and cast back, as nvFuser does.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.modules.instancenorm import _InstanceNorm

from fusecli.frontend.definition import FusionDefinition
from fusecli.frontend.descriptors import compute_tensor_descriptor
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType


def _define(fd: FusionDefinition, tensor: torch.Tensor):
    """An input shaped like ``tensor``: symbolic sizes, its contiguity and stride order."""
    contiguity, stride_order = compute_tensor_descriptor(tensor.shape, tensor.stride())
    return fd.define_tensor(
        shape=[1 if size == 1 else -1 for size in tensor.shape], contiguity=contiguity,
        dtype=dt.from_torch(tensor.dtype), stride_order=stride_order,
    )


class _Layout:
    """Where the batch, channel and spatial dimensions of an input are: logically always
    ``[N, C, *S]``; a channels-last input differs only in its stride order, which its
    ``define_tensor`` carries."""

    channel = 1

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        self.spatial = list(range(2, ndim))
        self.batch_and_spatial = [0, *self.spatial]

    def instance_shape(self, fd, stat):
        """A ``[N, C]`` statistic broadcast to the input's rank."""
        return fd.ops.broadcast(stat, [d in self.spatial for d in range(self.ndim)])

    def channel_shape(self, fd, per_channel):
        """A ``[C]`` tensor (weight, bias, running statistic) broadcast to the input's rank."""
        return fd.ops.broadcast(per_channel, [d != self.channel for d in range(self.ndim)])


def _element_count(fd, tensor, dims):
    """The number of elements of ``tensor`` over ``dims``, a Double scalar."""
    count = fd.ops.size(tensor, dims[0])
    for d in dims[1:]:
        count = fd.ops.mul(count, fd.ops.size(tensor, d))
    return fd.ops.cast(count, DataType.Double)


def _compute_dtype(x: torch.Tensor) -> DataType:
    """Double for a double input; Float otherwise (half and bfloat16 are computed in float)."""
    return DataType.Double if x.dtype == torch.float64 else DataType.Float


def _compute(fd, tensor, compute_dtype):
    return tensor if tensor.dtype == compute_dtype else fd.ops.cast(tensor, compute_dtype)


def _forward_fusion(x, weight, bias, running_mean, running_var, use_input_stats):
    layout = _Layout(x.ndim)
    compute = _compute_dtype(x)
    fd = FusionDefinition()
    with fd:
        tx = _define(fd, x)
        tw = _define(fd, weight) if weight is not None else None
        tb = _define(fd, bias) if bias is not None else None
        trm = _define(fd, running_mean) if running_mean is not None else None
        trv = _define(fd, running_var) if running_var is not None else None
        momentum = fd.define_scalar(DataType.Double)
        eps = fd.define_scalar(DataType.Double)
        xc = _compute(fd, tx, compute)
        if use_input_stats or trm is None:
            var, mean = fd.ops.var_mean(xc, layout.spatial, correction=0, keepdim=False)
            if trm is not None:
                count = _element_count(fd, tx, layout.spatial)
                batch = fd.ops.cast(fd.ops.size(tx, 0), DataType.Double)
                unbiased = fd.ops.mul(var, fd.ops.div(count, fd.ops.sub(count, 1)))
                for stat, running in ((mean, trm), (unbiased, trv)):
                    batch_mean = fd.ops.div(fd.ops.sum(stat, [0]), batch)
                    moved = fd.ops.add(
                        fd.ops.mul(_compute(fd, running, compute), fd.ops.sub(1.0, momentum)),
                        fd.ops.mul(batch_mean, momentum),
                    )
                    fd.add_output(fd.ops.cast(moved, running.dtype), alias_input=running)
            invstd = fd.ops.rsqrt(fd.ops.add(var, eps))
            centered = fd.ops.sub(xc, layout.instance_shape(fd, mean))
            y = fd.ops.mul(centered, layout.instance_shape(fd, invstd))
        else:
            mean = _compute(fd, trm, compute)
            invstd = fd.ops.rsqrt(fd.ops.add(_compute(fd, trv, compute), eps))
            centered = fd.ops.sub(xc, layout.channel_shape(fd, mean))
            y = fd.ops.mul(centered, layout.channel_shape(fd, invstd))
        if tw is not None:
            y = fd.ops.mul(y, layout.channel_shape(fd, _compute(fd, tw, compute)))
        if tb is not None:
            y = fd.ops.add(y, layout.channel_shape(fd, _compute(fd, tb, compute)))
        fd.add_output(fd.ops.cast(y, tx.dtype))
        fd.add_output(mean)
        fd.add_output(invstd)
    return fd


def _backward_fusion(x, grad_out, weight, mean, invstd, use_input_stats, needs_weight_grad):
    layout = _Layout(x.ndim)
    compute = _compute_dtype(x)
    fd = FusionDefinition()
    with fd:
        tx, tg = _define(fd, x), _define(fd, grad_out)
        tw = _define(fd, weight) if weight is not None else None
        tmean, tinvstd = _define(fd, mean), _define(fd, invstd)
        xc, gc = _compute(fd, tx, compute), _compute(fd, tg, compute)
        broadcast = layout.instance_shape if use_input_stats else layout.channel_shape
        x_hat = fd.ops.mul(fd.ops.sub(xc, broadcast(fd, tmean)), broadcast(fd, tinvstd))
        g = gc
        if tw is not None:
            g = fd.ops.mul(gc, layout.channel_shape(fd, _compute(fd, tw, compute)))
        if use_input_stats:
            g_mean = fd.ops.sum(g, layout.spatial, keepdim=True)
            gx_mean = fd.ops.sum(fd.ops.mul(g, x_hat), layout.spatial, keepdim=True)
            count = _element_count(fd, tx, layout.spatial)
            g_mean, gx_mean = fd.ops.div(g_mean, count), fd.ops.div(gx_mean, count)
            inner = fd.ops.sub(fd.ops.sub(g, g_mean), fd.ops.mul(x_hat, gx_mean))
            dx = fd.ops.mul(inner, layout.instance_shape(fd, tinvstd))
        else:
            dx = fd.ops.mul(g, layout.channel_shape(fd, tinvstd))
        fd.add_output(fd.ops.cast(dx, tx.dtype))
        if needs_weight_grad:
            reduced = layout.batch_and_spatial
            dw = fd.ops.sum(fd.ops.mul(gc, x_hat), reduced)
            db = fd.ops.sum(gc, reduced)
            fd.add_output(fd.ops.cast(dw, tw.dtype))
            fd.add_output(fd.ops.cast(db, tw.dtype))
    return fd


def _signature(*tensors: Any) -> tuple:
    """What a fusion defined by ``_define`` depends on: dtype, which sizes are 1, layout."""
    described = []
    for t in tensors:
        if t is None:
            described.append(None)
            continue
        contiguity, stride_order = compute_tensor_descriptor(t.shape, t.stride())
        described.append((t.dtype, tuple(s == 1 for s in t.shape), tuple(contiguity),
                          tuple(stride_order)))
    return tuple(described)


_FUSIONS: dict[tuple, FusionDefinition] = {}


def _cached(builder, key: tuple, *args: Any) -> FusionDefinition:
    if key not in _FUSIONS:
        _FUSIONS[key] = builder(*args)
    return _FUSIONS[key]


class InstanceNormNVFuserFunction(torch.autograd.Function):
    """Instance norm whose forward and backward are each one fusion."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps):
        key = ("forward", use_input_stats, _signature(x, weight, bias, running_mean, running_var))
        fd = _cached(_forward_fusion, key, x, weight, bias, running_mean, running_var,
                     use_input_stats)
        inputs = [t for t in (x, weight, bias, running_mean, running_var) if t is not None]
        y, mean, invstd = fd.execute([*inputs, float(momentum), float(eps)])
        ctx.use_input_stats = use_input_stats
        ctx.save_for_backward(x, weight, mean, invstd)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, mean, invstd = ctx.saved_tensors
        needs_weight_grad = weight is not None and (ctx.needs_input_grad[1]
                                                    or ctx.needs_input_grad[2])
        key = ("backward", ctx.use_input_stats, needs_weight_grad,
               _signature(x, grad_out, weight, mean, invstd))
        fd = _cached(_backward_fusion, key, x, grad_out, weight, mean, invstd,
                     ctx.use_input_stats, needs_weight_grad)
        inputs = [t for t in (x, grad_out, weight, mean, invstd) if t is not None]
        results = fd.execute(inputs)
        grad_weight = results[1] if needs_weight_grad else None
        grad_bias = results[2] if needs_weight_grad else None
        return results[0], grad_weight, grad_bias, None, None, None, None, None


class _InstanceNormNVFuser(_InstanceNorm):
    """``torch.nn`` instance norm (same arguments and state) computed by two fusions; a
    subclass sets ``_rank``, the rank of a batched input."""

    _rank: int

    def _get_no_batch_dim(self) -> int:
        return self._rank - 1

    def _check_input_dim(self, x: torch.Tensor) -> None:
        if x.dim() != self._rank:
            raise ValueError(f"expected {self._rank}D input (got {x.dim()}D input)")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(x)
        use_input_stats = self.training or not self.track_running_stats
        return InstanceNormNVFuserFunction.apply(
            x, self.weight, self.bias, self.running_mean, self.running_var, use_input_stats,
            self.momentum if self.momentum is not None else 0.1, self.eps,
        )


class InstanceNorm1dNVFuser(_InstanceNormNVFuser):
    _rank = 3


class InstanceNorm2dNVFuser(_InstanceNormNVFuser):
    _rank = 4


class InstanceNorm3dNVFuser(_InstanceNormNVFuser):
    _rank = 5


__all__ = [
    "InstanceNorm1dNVFuser",
    "InstanceNorm2dNVFuser",
    "InstanceNorm3dNVFuser",
    "InstanceNormNVFuserFunction",
]
