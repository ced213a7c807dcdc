"""Attention and grouped matmul ``fd.ops``: sdpfa_fwd, sdpfa_bwd, grouped_mm.

Their optional operands may be None, a handle, or (for scalars, as nvFuser's ``ScalarVariant``)
a Python number, which becomes a constant. A call is recorded with every argument positional,
None included, as nvFuser prints these ops.
"""

from __future__ import annotations

from typing import Any

from fusecli.frontend.binding import (
    OpsBase,
    bind_op,
    dtype_arg,
    incompatible,
    int_arg,
    python_number,
    tensor_arg,
)
from fusecli.frontend.records import Record
from fusecli.frontend.state import Scalar, Tensor
from fusecli.ir import ops_attention as attention
from fusecli.ir.builder import DefinitionError
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType

_SDPA_SCALARS = ("dropout_p", "is_causal", "scale")
_SCALED_MM = ("scale1", "scale2", "alpha", "bias", "beta", "dtype", "output_block_scale_size",
              "output_block_scale_dtype", "output_gamma")


class AttentionOps(OpsBase):
    """sdpfa_fwd, sdpfa_bwd and grouped_mm."""

    def sdpfa_fwd(self, *args: Any, **kwargs: Any) -> tuple[Tensor, ...]:
        names = OpType.sdpfa_fwd.definition.params
        bound = bind_op(OpType.sdpfa_fwd, args, kwargs)
        self._start("sdpfa_fwd")
        q, k, v = (tensor_arg("sdpfa_fwd", bound[n], n) for n in names[:3])
        for name in ("bias", "mask"):
            if bound[name] is not None:
                bound[name] = tensor_arg("sdpfa_fwd", bound[name], name)
        for name in _SDPA_SCALARS:
            bound[name] = self._optional_scalar("sdpfa_fwd", bound[name], name)
        options = {n: bound[n].val if bound[n] is not None else None for n in names[3:]}
        results = attention.sdpfa_fwd(self._b, q.val, k.val, v.val, options)
        return self._finish("sdpfa_fwd", results, [(None, bound[n]) for n in names])

    def sdpfa_bwd(self, *args: Any, **kwargs: Any) -> tuple[Tensor, ...]:
        names = OpType.sdpfa_bwd.definition.params
        bound = bind_op(OpType.sdpfa_bwd, args, kwargs)
        self._start("sdpfa_bwd")
        tensors = {}
        for name in ("grad_output", "query", "key", "value", "output", "logsumexp",
                     "philox_seed", "philox_offset"):
            bound[name] = tensor_arg("sdpfa_bwd", bound[name], name)
            tensors[name] = bound[name].val
        for name in _SDPA_SCALARS:
            bound[name] = self._optional_scalar("sdpfa_bwd", bound[name], name)
        scalars = {n: bound[n].val if bound[n] is not None else None for n in _SDPA_SCALARS}
        results = attention.sdpfa_bwd(self._b, tensors, scalars)
        return self._finish("sdpfa_bwd", results, [(None, bound[n]) for n in names])

    def grouped_mm(self, *args: Any, **kwargs: Any) -> Tensor | tuple[Tensor | None, ...]:
        """``grouped_mm(mat1, mat2, offsets)`` -> the product; with ``scale1`` and ``scale2``
        (nvFuser's second overload) -> (the product, None, None)."""
        bound = bind_op(OpType.grouped_mm, args, kwargs)
        self._start("grouped_mm")
        mat1, mat2, offsets = (
            tensor_arg("grouped_mm", bound[n], n) for n in ("mat1", "mat2", "offsets")
        )
        scaled = bound["scale1"] is not None or bound["scale2"] is not None
        defaults = OpType.grouped_mm.definition.defaults
        if not scaled and not all(_is_default(bound[n], defaults[n]) for n in _SCALED_MM):
            raise incompatible(
                "grouped_mm", "alpha, bias, beta, dtype and the output scale options belong "
                "to the scaled form: give scale1 and scale2 too",
            )
        options = {}
        for name in ("scale1", "scale2", "alpha", "bias", "beta"):
            if bound[name] is not None:
                bound[name] = tensor_arg("grouped_mm", bound[name], name)
            options[name] = bound[name].val if bound[name] is not None else None
        dtype = None
        if scaled:
            given = bound["dtype"]
            dtype = dtype_arg("grouped_mm", given if given is not None else DataType.BFloat16)
            self._check_no_output_scales(bound)
        result = attention.grouped_mm(self._b, mat1.val, mat2.val, offsets.val, options, dtype)
        if not scaled:
            return self._finish("grouped_mm", [result], [(None, mat1), (None, mat2),
                                                         (None, offsets)])
        # nvFuser returns (output, block scales, global scale): None where not asked for.
        handle = self._fd._wrap(result)
        record = [(None, bound[n]) for n in ("mat1", "mat2", "offsets", "scale1", "scale2")]
        record += [(n, bound[n]) for n in ("alpha", "bias", "beta") if bound[n] is not None]
        record.append(("dtype", dtype))
        self._fd._record(Record("fd.ops.grouped_mm", [handle], record, unused_outputs=2))
        return handle, None, None

    @staticmethod
    def _check_no_output_scales(bound: dict[str, Any]) -> None:
        """nvFuser defines the quantized outputs, and its ATen fallback never computes them."""
        if int_arg("grouped_mm", bound["output_block_scale_size"], "output_block_scale_size"):
            raise DefinitionError("grouped_mm", "output_block_scale_size > 0 (a quantized "
                                  "output) is not supported by nvFuser's ATen fallback")
        if bound["output_gamma"]:
            raise DefinitionError("grouped_mm", "output_gamma is not supported by nvFuser's ATen"
                                  " fallback")

    def _optional_scalar(self, op: str, value: object, name: str) -> Scalar | None:
        """None, a Scalar, or a Python number made a constant (nvFuser's ScalarVariant)."""
        if value is None or isinstance(value, Scalar):
            return value
        if python_number(value):
            return self._fd.define_scalar(value)
        raise incompatible(op, f"{name} must be a Scalar, a number or None, got {value!r}")


def _is_default(value: object, default: object) -> bool:
    """Whether an argument is its default (never ``==`` on a handle: that is fd.ops.eq)."""
    return value is default or (type(value) is type(default) and value == default)
