"""Indexing, creation, random, matmul and linear ``fd.ops`` (attention: ``ops_attention``)."""

from __future__ import annotations

from typing import Any

from fusecli.frontend.binding import (
    OpsBase,
    bind_op,
    dtype_arg,
    incompatible,
    int_arg,
    tensor_arg,
)
from fusecli.frontend.state import Scalar, Tensor
from fusecli.ir import ops_other as other
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType


class MiscOps(OpsBase):
    """Indexing, creation and random numbers, matmul, linear, triu."""

    # -- indexing --------------------------------------------------------------------------

    def index_select(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.index_select, args, kwargs)
        self._start("index_select")
        arg, index = tensor_arg("index_select", bound["arg"]), tensor_arg(
            "index_select", bound["index"], "index"
        )
        dim = int_arg("index_select", bound["dim"], "dim")
        result = other.index_select(self._b, arg.val, index.val, dim)
        return self._finish("index_select", [result], [(None, arg), (None, index), ("dim", dim)])

    def select(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.select, args, kwargs)
        self._start("select")
        arg = tensor_arg("select", bound["arg"])
        index = bound["index"]
        if not isinstance(index, Scalar):
            raise incompatible("select", f"index must be a Scalar, got {index!r}")
        dim = int_arg("select", bound["dim"], "dim")
        result = other.select(self._b, arg.val, index.val, dim)
        return self._finish("select", [result], [(None, arg), (None, index), ("dim", dim)])

    def _gather(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        bound = bind_op(op, args, kwargs)
        self._start(op.value)
        arg = tensor_arg(op.value, bound["arg1"])
        index = tensor_arg(op.value, bound["index"], "index")
        dim = int_arg(op.value, bound["dim"], "dim")
        result = other.gather(self._b, op, arg.val, index.val, dim)
        return self._finish(op.value, [result], [(None, arg), (None, index), ("dim", dim)])

    def gather(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._gather(OpType.gather, args, kwargs)

    def take_along_axis(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._gather(OpType.take_along_axis, args, kwargs)

    def scatter(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.scatter, args, kwargs)
        self._start("scatter")
        arg = tensor_arg("scatter", bound["arg1"])
        index = tensor_arg("scatter", bound["index"], "index")
        src = self._operand("scatter", bound["src"])
        dim = int_arg("scatter", bound["dim"], "dim")
        result = other.scatter(self._b, arg.val, index.val, src.val, dim)
        return self._finish(
            "scatter", [result], [(None, arg), (None, index), (None, src), ("dim", dim)]
        )

    def index_put_accumulate(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.index_put_accumulate, args, kwargs)
        self._start("index_put_accumulate")
        acc, index, value = (
            tensor_arg("index_put_accumulate", bound[name], name)
            for name in ("acc", "index", "value")
        )
        result = other.index_put_accumulate(self._b, acc.val, index.val, value.val)
        return self._finish(
            "index_put_accumulate", [result], [(None, acc), (None, index), (None, value)]
        )

    def embedding_fwd(self, *args: Any, **kwargs: Any) -> Tensor:
        names = OpType.embedding_fwd.definition.params
        bound = bind_op(OpType.embedding_fwd, args, kwargs)
        self._start("embedding_fwd")
        indices = tensor_arg("embedding_fwd", bound["input"], "input")
        weight = tensor_arg("embedding_fwd", bound["weight"], "weight")
        options = {}
        for name in names[2:]:
            value = bound[name]
            if value is not None and not isinstance(value, Scalar):
                raise incompatible("embedding_fwd", f"{name} must be a Scalar or None")
            options[name] = value.val if value is not None else None
        result = other.embedding_fwd(self._b, indices.val, weight.val, options)
        return self._finish("embedding_fwd", [result], [(None, bound[n]) for n in names])


    # -- creation --------------------------------------------------------------------------

    def full(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.full, args, kwargs)
        self._start("full")
        fill = self._operand("full", bound["fill_value"])
        dtype = dtype_arg("full", bound["dtype"])
        shape, printed = self._fd._inline_vector(bound["shape"], "full")
        result = other.full(self._b, shape.val, fill.val, dtype)
        return self._finish(
            "full", [result], [("shape", printed), ("fill_value", fill), ("dtype", dtype)]
        )

    def iota(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.iota, args, kwargs)
        self._start("iota")
        # Scalars or Python numbers (nvfuser_direct's ScalarVariant, as its repr writes them)
        length, start, step = (
            None if bound[n] is None else self._operand("iota", bound[n])
            for n in ("length", "start", "step")
        )
        if not isinstance(length, Scalar):
            raise incompatible("iota", f"length must be a Scalar, got {length!r}")
        dtype = dtype_arg("iota", bound["dtype"])
        result = other.iota(
            self._b, length.val, start.val if start is not None else None,
            step.val if step is not None else None, dtype,
        )
        return self._finish(
            "iota", [result], [(None, length), (None, start), (None, step), ("dtype", dtype)]
        )

    def _random(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        first, second = op.definition.params[:2]
        bound = bind_op(op, args, kwargs)
        self._start(op.value)
        low, high = self._operand(op.value, bound[first]), self._operand(op.value, bound[second])
        shape, printed = self._fd._inline_vector(bound["shape"], op.value)
        seed, offset = bound["rng_seed"], bound["rng_offset"]
        dtype = dtype_arg(op.value, bound["dtype"])
        result = other.random(
            self._b, op, low.val, high.val, shape.val,
            seed.val if seed is not None else None,
            offset.val if offset is not None else None, dtype,
        )
        record: list[tuple[str | None, object]] = [(None, low), (None, high), ("shape", printed)]
        if seed is not None:
            record += [("rng_seed", seed), ("rng_offset", offset)]
        record.append(("dtype", dtype))
        return self._finish(op.value, [result], record)

    def uniform(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._random(OpType.uniform, args, kwargs)

    def normal(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._random(OpType.normal, args, kwargs)

    def _random_like(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        bound = bind_op(op, args, kwargs)
        self._start(op.value)
        arg = tensor_arg(op.value, bound["arg"])
        seed, offset = bound["rng_seed"], bound["rng_offset"]
        result = other.random_like(
            self._b, op, arg.val, seed.val if seed is not None else None,
            offset.val if offset is not None else None,
        )
        record: list[tuple[str | None, object]] = [(None, arg)]
        if seed is not None:
            record += [("rng_seed", seed), ("rng_offset", offset)]
        return self._finish(op.value, [result], record)

    def rand_like(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._random_like(OpType.rand_like, args, kwargs)

    def randn_like(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._random_like(OpType.randn_like, args, kwargs)


    # -- matmul and linear -----------------------------------------------------------------

    def matmul(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.matmul, args, kwargs)
        self._start("matmul")
        a = tensor_arg("matmul", bound["arg1"], "arg1")
        w = tensor_arg("matmul", bound["arg2"], "arg2")
        return self._finish("matmul", [other.matmul(self._b, a.val, w.val)], [(None, a), (None, w)])

    def linear(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.linear, args, kwargs)
        self._start("linear")
        a = tensor_arg("linear", bound["arg1"], "arg1")
        w = tensor_arg("linear", bound["arg2"], "arg2")
        bias = bound["bias"]
        if bias is not None:
            bias = tensor_arg("linear", bias, "bias")
        result = other.linear(self._b, a.val, w.val, bias.val if bias is not None else None)
        record = [(None, a), (None, w)] + ([(None, bias)] if bias is not None else [])
        return self._finish("linear", [result], record)

    def triu(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.triu, args, kwargs)
        self._start("triu")
        arg = tensor_arg("triu", bound["input"], "input")
        diagonal = bound["diagonal"]
        if isinstance(diagonal, int) and not isinstance(diagonal, bool):
            diagonal = self._fd.define_scalar(diagonal, DataType.Int)
        result = other.triu(self._b, arg.val, diagonal.val if diagonal is not None else None)
        record = [(None, arg)] + ([(None, diagonal)] if diagonal is not None else [])
        return self._finish("triu", [result], record)
