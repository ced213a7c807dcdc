"""Reduction ``fd.ops``: sum, prod, max, min, var, var_mean, welford, scans (cumsum, cumprod,
cummin, cummax), sorts."""

from __future__ import annotations

from typing import Any

from fusecli.frontend.binding import (
    OpsBase,
    bind_op,
    dims_arg,
    dtype_arg,
    incompatible,
    int_arg,
    tensor_arg,
)
from fusecli.frontend.state import Scalar, Tensor
from fusecli.ir import ops_reduction as red
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType


class ReductionOps(OpsBase):
    """Reductions and their relatives."""

    def _reduction(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        bound = bind_op(op, args, kwargs)
        if isinstance(bound["dims"], DataType):  # sum(arg, dtype) positional overload
            bound["dtype"], bound["dims"] = bound["dims"], None
        self._start(op.value)
        arg = tensor_arg(op.value, bound["arg"])
        dims = None if bound["dims"] is None else dims_arg(op.value, bound["dims"])
        keepdim = bool(bound["keepdim"])
        dtype = dtype_arg(op.value, bound["dtype"])
        result = red.reduction(self._b, op, arg.val, dims, keepdim, dtype)
        printed_dims = list(range(arg.ndim)) if dims is None else dims
        return self._finish(
            op.value,
            [result],
            [(None, arg), ("dims", printed_dims), ("keepdim", keepdim), ("dtype", dtype)],
        )

    def sum(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._reduction(OpType.sum, args, kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._reduction(OpType.prod, args, kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._reduction(OpType.max, args, kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._reduction(OpType.min, args, kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.var, args, kwargs)
        self._start("var")
        arg = tensor_arg("var", bound["arg"])
        dims = dims_arg("var", bound["dims"])
        correction = int_arg("var", bound["correction"], "correction")
        keepdim = bool(bound["keepdim"])
        (result,) = red.var_mean(self._b, arg.val, dims, correction, keepdim, with_mean=False)
        return self._finish(
            "var", [result],
            [(None, arg), ("dims", dims), ("correction", correction), ("keepdim", keepdim)],
        )

    def var_mean(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        bound = bind_op(OpType.var_mean, args, kwargs)
        self._start("var_mean")
        arg = tensor_arg("var_mean", bound["arg"])
        dims = dims_arg("var_mean", bound["dims"])
        correction = int_arg("var_mean", bound["correction"], "correction")
        keepdim = bool(bound["keepdim"])
        results = red.var_mean(self._b, arg.val, dims, correction, keepdim, with_mean=True)
        return self._finish(
            "var_mean", results,
            [(None, arg), ("dims", dims), ("correction", correction), ("keepdim", keepdim)],
        )

    def welford(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor, Tensor]:
        bound = bind_op(OpType.welford, args, kwargs)
        self._start("welford")
        arg = tensor_arg("welford", bound["arg"])
        dims = dims_arg("welford", bound["dims"])
        results = red.welford(self._b, arg.val, dims)
        return self._finish("welford", results, [(None, arg), ("dims", dims)])

    def cumsum(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._scan(OpType.cumsum, args, kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._scan(OpType.cumprod, args, kwargs)

    def cummin(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._scan(OpType.cummin, args, kwargs)

    def cummax(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._scan(OpType.cummax, args, kwargs)

    def _scan(self, op: OpType, args: Any, kwargs: Any) -> Tensor:
        name = op.value
        bound = bind_op(op, args, kwargs)
        self._start(name)
        arg = tensor_arg(name, bound["arg"])
        dim = int_arg(name, bound["dim"], "dim")
        return self._finish(
            name, [red.scan(self._b, op, arg.val, dim)], [(None, arg), ("dim", dim)]
        )

    def argsort(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.argsort, args, kwargs)
        self._start("argsort")
        arg = tensor_arg("argsort", bound["arg"])
        dim = int_arg("argsort", bound["dim"], "dim")
        descending, stable = bool(bound["descending"]), bool(bound["stable"])
        result = red.argsort(self._b, arg.val, dim, descending, stable)
        return self._finish(
            "argsort", [result],
            [(None, arg), ("dim", dim), ("descending", descending), ("stable", stable)],
        )

    def topk(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        bound = bind_op(OpType.topk, args, kwargs)
        self._start("topk")
        arg = tensor_arg("topk", bound["arg"])
        k = bound["k"]
        if not isinstance(k, Scalar):
            raise incompatible("topk", f"k must be a Scalar, got {k!r}")
        dim = int_arg("topk", bound["dim"], "dim")
        largest, sorted_ = bool(bound["largest"]), bool(bound["sorted"])
        results = red.topk(self._b, arg.val, k.val, dim, largest, sorted_)
        return self._finish(
            "topk", results,
            [(None, arg), (None, k), ("dim", dim), ("largest", largest), ("sorted", sorted_)],
        )
