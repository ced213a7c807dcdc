"""``fd.ops``: nvFuser's op catalogue, in positional and keyword forms.

Each method binds its arguments (accepting the old spellings found in issue repros: ``axes=``,
``output_shape=``, ``original_shape=``), builds IR through ``fusecli.ir``, wraps the results in
handles, and records the call in the canonical form nvFuser prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fusecli.frontend.records import Inline, Record
from fusecli.frontend.state import Scalar, State, Tensor, Vector
from fusecli.ir import ops_elementwise as ew
from fusecli.ir import ops_other as other
from fusecli.ir import ops_reduction as red
from fusecli.ir import ops_shape as shp
from fusecli.ir.builder import DefinitionError
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpKind, OpType

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition

_MISSING = object()


def _bind(
    op: str,
    params: Sequence[str],
    args: tuple,
    kwargs: dict,
    defaults: dict[str, Any] | None = None,
    aliases: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Bind positional and keyword arguments to ``params``; a friendly TypeError otherwise."""
    if len(args) > len(params):
        raise TypeError(f"fd.ops.{op}() takes {len(params)} arguments, got {len(args)}")
    bound = dict(zip(params, args))
    for key, value in kwargs.items():
        key = (aliases or {}).get(key, key)
        if key not in params:
            raise TypeError(f"fd.ops.{op}() got an unexpected keyword argument '{key}'")
        if key in bound:
            raise TypeError(f"fd.ops.{op}() got multiple values for argument '{key}'")
        bound[key] = value
    for key, value in (defaults or {}).items():
        bound.setdefault(key, value)
    missing = [p for p in params if p not in bound]
    if missing:
        raise TypeError(f"fd.ops.{op}() missing required argument(s): {', '.join(missing)}")
    return bound


def _tensor(op: str, value: object, name: str = "arg") -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"fd.ops.{op}: {name} must be a Tensor, got {value!r}")
    return value


def _operand(op: str, value: object) -> State:
    if isinstance(value, Tensor | Scalar):
        return value
    raise TypeError(
        f"fd.ops.{op}: expected a Tensor or Scalar, got {value!r}; "
        "define Python numbers with fd.define_scalar"
    )


def _int(op: str, value: object, name: str) -> int:
    if isinstance(value, Scalar) and value.val.is_constant:
        return int(value.val.value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"fd.ops.{op}: {name} must be an int, got {value!r}")
    return value


def _dims(op: str, value: object) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list | tuple):
        return [_int(op, v, "dims") for v in value]
    raise TypeError(f"fd.ops.{op}: dims must be an int or a list of ints, got {value!r}")


def _dtype(op: str, value: object) -> DataType:
    if not isinstance(value, DataType):
        raise TypeError(f"fd.ops.{op}: dtype must be a DataType, got {value!r}")
    return value


class Ops:
    """The ``fd.ops`` namespace of one FusionDefinition."""

    def __init__(self, fd: FusionDefinition) -> None:
        self._fd = fd

    @property
    def _b(self):
        return self._fd._builder

    def _finish(
        self, name: str, results: Sequence[object], args: list[tuple[str | None, object]]
    ) -> Any:
        """Wrap IR results in handles and record ``outputs = fd.ops.name(args)``."""
        states = [self._fd._wrap(r) for r in results]
        self._fd._record(Record(f"fd.ops.{name}", states, args))
        return states[0] if len(states) == 1 else tuple(states)

    def _start(self, name: str) -> None:
        self._fd._check_defining(f"fd.ops.{name}")

    # -- elementwise -----------------------------------------------------------------------

    def _elementwise(self, op: OpType, *operands: object) -> State:
        self._start(op.value)
        states = [_operand(op.value, v) for v in operands]
        if op is OpType.where:
            result = ew.where(self._b, *(s.val for s in states))
        else:
            result = ew.elementwise(self._b, op, [s.val for s in states])
        return self._finish(op.value, [result], [(None, s) for s in states])

    def cast(self, *args: Any, **kwargs: Any) -> State:
        bound = _bind("cast", ["arg", "dtype"], args, kwargs)
        self._start("cast")
        arg = _operand("cast", bound["arg"])
        result = ew.cast(self._b, arg.val, _dtype("cast", bound["dtype"]))
        if result is arg.val:  # nvFuser still makes a new value: a set
            result = shp.set_op(self._b, OpType.set, arg.val) if isinstance(arg, Tensor) else (
                result
            )
        return self._finish("cast", [result], [(None, arg), ("dtype", bound["dtype"])])

    def where(self, *args: Any, **kwargs: Any) -> State:
        bound = _bind("where", ["pred", "arg1", "arg2"], args, kwargs)
        return self._elementwise(OpType.where, bound["pred"], bound["arg1"], bound["arg2"])

    def set(self, arg: Tensor) -> Tensor:
        return self._copy(OpType.set, arg)

    def segment_set(self, arg: Tensor) -> Tensor:
        return self._copy(OpType.segment_set, arg)

    def _copy(self, op: OpType, arg: Tensor) -> Tensor:
        self._start(op.value)
        result = shp.set_op(self._b, op, _tensor(op.value, arg).val)
        return self._finish(op.value, [result], [(None, arg)])

    def stride_order(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("stride_order", ["arg", "stride_order"], args, kwargs)
        self._start("stride_order")
        arg = _tensor("stride_order", bound["arg"])
        order = [_int("stride_order", v, "stride_order") for v in bound["stride_order"]]
        result = shp.set_op(self._b, OpType.stride_order, arg.val, stride_order=order)
        return self._finish("stride_order", [result], [(None, arg), ("stride_order", order)])

    # -- reductions ------------------------------------------------------------------------

    def _reduction(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        bound = _bind(
            op.value, ["arg", "dims", "keepdim", "dtype"], args, kwargs,
            defaults={"dims": None, "keepdim": False, "dtype": DataType.Null},
            aliases={"axes": "dims", "dim": "dims"},
        )
        if isinstance(bound["dims"], DataType):  # sum(arg, dtype) positional overload
            bound["dtype"], bound["dims"] = bound["dims"], None
        self._start(op.value)
        arg = _tensor(op.value, bound["arg"])
        dims = None if bound["dims"] is None else _dims(op.value, bound["dims"])
        keepdim = bool(bound["keepdim"])
        dtype = _dtype(op.value, bound["dtype"])
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
        bound = _bind(
            "var", ["arg", "dims", "correction", "keepdim"], args, kwargs,
            defaults={"keepdim": False}, aliases={"axes": "dims"},
        )
        self._start("var")
        arg = _tensor("var", bound["arg"])
        dims = _dims("var", bound["dims"])
        correction = _int("var", bound["correction"], "correction")
        keepdim = bool(bound["keepdim"])
        (result,) = red.var_mean(self._b, arg.val, dims, correction, keepdim, with_mean=False)
        return self._finish(
            "var", [result],
            [(None, arg), ("dims", dims), ("correction", correction), ("keepdim", keepdim)],
        )

    def var_mean(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        bound = _bind(
            "var_mean", ["arg", "dims", "correction", "keepdim"], args, kwargs,
            defaults={"correction": 1, "keepdim": False}, aliases={"axes": "dims"},
        )
        self._start("var_mean")
        arg = _tensor("var_mean", bound["arg"])
        dims = _dims("var_mean", bound["dims"])
        correction = _int("var_mean", bound["correction"], "correction")
        keepdim = bool(bound["keepdim"])
        results = red.var_mean(self._b, arg.val, dims, correction, keepdim, with_mean=True)
        return self._finish(
            "var_mean", results,
            [(None, arg), ("dims", dims), ("correction", correction), ("keepdim", keepdim)],
        )

    def welford(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor, Tensor]:
        bound = _bind("welford", ["arg", "dims"], args, kwargs, aliases={"axes": "dims"})
        self._start("welford")
        arg = _tensor("welford", bound["arg"])
        dims = _dims("welford", bound["dims"])
        results = red.welford(self._b, arg.val, dims)
        return self._finish("welford", results, [(None, arg), ("dims", dims)])

    def cumsum(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("cumsum", ["arg", "dim"], args, kwargs)
        self._start("cumsum")
        arg = _tensor("cumsum", bound["arg"])
        dim = _int("cumsum", bound["dim"], "dim")
        return self._finish(
            "cumsum", [red.cumsum(self._b, arg.val, dim)], [(None, arg), ("dim", dim)]
        )

    def argsort(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind(
            "argsort", ["arg", "dim", "descending", "stable"], args, kwargs,
            defaults={"descending": False, "stable": False},
        )
        self._start("argsort")
        arg = _tensor("argsort", bound["arg"])
        dim = _int("argsort", bound["dim"], "dim")
        descending, stable = bool(bound["descending"]), bool(bound["stable"])
        result = red.argsort(self._b, arg.val, dim, descending, stable)
        return self._finish(
            "argsort", [result],
            [(None, arg), ("dim", dim), ("descending", descending), ("stable", stable)],
        )

    def topk(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        bound = _bind(
            "topk", ["arg", "k", "dim", "largest", "sorted"], args, kwargs,
            defaults={"dim": -1, "largest": True, "sorted": False},
        )
        self._start("topk")
        arg = _tensor("topk", bound["arg"])
        k = bound["k"]
        if not isinstance(k, Scalar):
            raise TypeError(f"fd.ops.topk: k must be a Scalar, got {k!r}")
        dim = _int("topk", bound["dim"], "dim")
        largest, sorted_ = bool(bound["largest"]), bool(bound["sorted"])
        results = red.topk(self._b, arg.val, k.val, dim, largest, sorted_)
        return self._finish(
            "topk", results,
            [(None, arg), (None, k), ("dim", dim), ("largest", largest), ("sorted", sorted_)],
        )

    # -- shape -----------------------------------------------------------------------------

    def broadcast_in_dim(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind(
            "broadcast_in_dim", ["arg", "shape", "broadcast_dims"], args, kwargs,
            aliases={"output_shape": "shape"},
        )
        self._start("broadcast_in_dim")
        arg = _tensor("broadcast_in_dim", bound["arg"])
        dims = _dims("broadcast_in_dim", bound["broadcast_dims"])
        shape, printed = self._fd._inline_vector(bound["shape"], "broadcast_in_dim")
        result = shp.broadcast_in_dim(self._b, arg.val, shape.val, dims)
        return self._finish(
            "broadcast_in_dim", [result],
            [(None, arg), ("shape", printed), ("broadcast_dims", dims)],
        )

    def broadcast(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("broadcast", ["arg", "is_broadcast_dim"], args, kwargs)
        self._start("broadcast")
        arg = _tensor("broadcast", bound["arg"])
        flags = [bool(f) for f in bound["is_broadcast_dim"]]
        result = shp.broadcast(self._b, arg.val, flags)
        if result is arg.val:
            result = shp.set_op(self._b, OpType.set, arg.val)
        return self._finish(
            "broadcast", [result], [(None, arg), ("is_broadcast_dim", flags)]
        )

    def expand(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("expand", ["arg", "shape"], args, kwargs)
        self._start("expand")
        arg = _tensor("expand", bound["arg"])
        shape, printed = self._fd._inline_vector(bound["shape"], "expand")
        result = shp.expand(self._b, arg.val, shape.val)
        if result is arg.val:
            result = shp.set_op(self._b, OpType.set, arg.val)
        return self._finish("expand", [result], [(None, arg), ("shape", printed)])

    def reshape(self, *args: Any, **kwargs: Any) -> Tensor:
        kwargs = dict(kwargs)
        kwargs.pop("original_shape", None)  # 2023 spelling: reshape(T, original_shape, new_shape)
        if len(args) == 3:
            args = (args[0], args[2])
        bound = _bind("reshape", ["arg", "new_shape"], args, kwargs)
        self._start("reshape")
        arg = _tensor("reshape", bound["arg"])
        shape, printed = self._fd._inline_vector(bound["new_shape"], "reshape")
        result = shp.reshape(self._b, arg.val, shape.val)
        return self._finish("reshape", [result], [(None, arg), ("new_shape", printed)])

    view = reshape

    def permute(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("permute", ["arg", "dims"], args, kwargs)
        self._start("permute")
        arg = _tensor("permute", bound["arg"])
        dims = _dims("permute", bound["dims"])
        result = shp.permute(self._b, arg.val, dims)
        return self._finish("permute", [result], [(None, arg), ("dims", dims)])

    def squeeze(self, *args: Any, **kwargs: Any) -> Tensor:
        kwargs = dict(kwargs)
        kwargs.pop("original_shape", None)
        if len(args) == 3 and isinstance(args[2], list | tuple):  # squeeze(T, shape, dims)
            args = (args[0], args[2])
        bound = _bind(
            "squeeze", ["arg", "dims", "squeeze_expanded"], args, kwargs,
            defaults={"squeeze_expanded": False},
        )
        self._start("squeeze")
        arg = _tensor("squeeze", bound["arg"])
        dims = _dims("squeeze", bound["dims"])
        squeeze_expanded = bool(bound["squeeze_expanded"])
        result = shp.squeeze(self._b, arg.val, dims, squeeze_expanded)
        return self._finish(
            "squeeze", [result],
            [(None, arg), ("dims", dims), ("squeeze_expanded", squeeze_expanded)],
        )

    def slice(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind(
            "slice",
            ["arg", "start_indices", "end_indices", "strides", "manual_normalization"],
            args, kwargs, defaults={"strides": None, "manual_normalization": False},
        )
        self._start("slice")
        arg = _tensor("slice", bound["arg"])
        starts, printed_starts = self._fd._inline_vector(
            bound["start_indices"], "slice", is_shape=False
        )
        ends, printed_ends = self._fd._inline_vector(
            bound["end_indices"], "slice", is_shape=False
        )
        stride_list = bound["strides"] if bound["strides"] is not None else [1] * arg.ndim
        strides, printed_strides = self._fd._inline_vector(stride_list, "slice")
        manual = bool(bound["manual_normalization"])
        result = shp.slice_(
            self._b, arg.val, starts.val.elements, ends.val.elements, strides.val.elements,
            manual,
        )
        return self._finish(
            "slice", [result],
            [
                (None, arg), ("start_indices", printed_starts), ("end_indices", printed_ends),
                ("strides", printed_strides), ("manual_normalization", int(manual)),
            ],
        )

    def pad(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("pad", ["arg", "pad_widths", "value"], args, kwargs, defaults={"value": None})
        self._start("pad")
        arg = _tensor("pad", bound["arg"])
        widths, printed = self._fd._inline_vector(bound["pad_widths"], "pad", is_shape=False)
        value = bound["value"]
        if value is not None and not isinstance(value, Scalar):
            raise TypeError(f"fd.ops.pad: value must be a Scalar, got {value!r}")
        result = shp.pad(
            self._b, arg.val, widths.val.elements, value.val if value is not None else None
        )
        record = [(None, arg), (None, printed)]
        if value is not None:
            record.append((None, value))
        return self._finish("pad", [result], record)

    def cat(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind(
            "cat", ["tensors", "dim", "manual_padding"], args, kwargs,
            defaults={"dim": 0, "manual_padding": False},
        )
        self._start("cat")
        tensors = [_tensor("cat", t, "tensors") for t in bound["tensors"]]
        dim = _int("cat", bound["dim"], "dim")
        manual = bool(bound["manual_padding"])
        result = shp.cat(self._b, [t.val for t in tensors], dim, manual)
        return self._finish(
            "cat", [result],
            [(None, tensors), ("dim", dim), ("manual_padding", int(manual))],
        )

    # -- indexing --------------------------------------------------------------------------

    def index_select(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("index_select", ["arg", "index", "dim"], args, kwargs)
        self._start("index_select")
        arg, index = _tensor("index_select", bound["arg"]), _tensor(
            "index_select", bound["index"], "index"
        )
        dim = _int("index_select", bound["dim"], "dim")
        result = other.index_select(self._b, arg.val, index.val, dim)
        return self._finish("index_select", [result], [(None, arg), (None, index), ("dim", dim)])

    def select(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("select", ["arg", "index", "dim"], args, kwargs)
        self._start("select")
        arg = _tensor("select", bound["arg"])
        index = bound["index"]
        if not isinstance(index, Scalar):
            raise TypeError(f"fd.ops.select: index must be a Scalar, got {index!r}")
        dim = _int("select", bound["dim"], "dim")
        result = other.select(self._b, arg.val, index.val, dim)
        return self._finish("select", [result], [(None, arg), (None, index), ("dim", dim)])

    def _gather(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        bound = _bind(op.value, ["arg1", "index", "dim"], args, kwargs)
        self._start(op.value)
        arg, index = _tensor(op.value, bound["arg1"]), _tensor(op.value, bound["index"], "index")
        dim = _int(op.value, bound["dim"], "dim")
        result = other.gather(self._b, op, arg.val, index.val, dim)
        return self._finish(op.value, [result], [(None, arg), (None, index), ("dim", dim)])

    def gather(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._gather(OpType.gather, args, kwargs)

    def take_along_axis(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._gather(OpType.take_along_axis, args, kwargs)

    def scatter(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("scatter", ["arg1", "index", "src", "dim"], args, kwargs)
        self._start("scatter")
        arg, index = _tensor("scatter", bound["arg1"]), _tensor("scatter", bound["index"], "index")
        src = _operand("scatter", bound["src"])
        dim = _int("scatter", bound["dim"], "dim")
        result = other.scatter(self._b, arg.val, index.val, src.val, dim)
        return self._finish(
            "scatter", [result], [(None, arg), (None, index), (None, src), ("dim", dim)]
        )

    def embedding_fwd(self, *args: Any, **kwargs: Any) -> Tensor:
        names = ["input", "weight", "padding_idx", "max_norm", "norm_type",
                 "scale_grad_by_freq", "sparse"]
        bound = _bind(
            "embedding_fwd", names, args, kwargs, defaults={n: None for n in names[2:]}
        )
        self._start("embedding_fwd")
        indices = _tensor("embedding_fwd", bound["input"], "input")
        weight = _tensor("embedding_fwd", bound["weight"], "weight")
        options = {}
        for name in names[2:]:
            value = bound[name]
            if value is not None and not isinstance(value, Scalar):
                raise TypeError(f"fd.ops.embedding_fwd: {name} must be a Scalar or None")
            options[name] = value.val if value is not None else None
        result = other.embedding_fwd(self._b, indices.val, weight.val, options)
        return self._finish("embedding_fwd", [result], [(None, bound[n]) for n in names])

    # -- creation --------------------------------------------------------------------------

    def full(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("full", ["shape", "fill_value", "dtype"], args, kwargs)
        self._start("full")
        fill = _operand("full", bound["fill_value"])
        dtype = _dtype("full", bound["dtype"])
        shape, printed = self._fd._inline_vector(bound["shape"], "full")
        result = other.full(self._b, shape.val, fill.val, dtype)
        return self._finish(
            "full", [result], [("shape", printed), ("fill_value", fill), ("dtype", dtype)]
        )

    def iota(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind(
            "iota", ["length", "start", "step", "dtype"], args, kwargs,
            defaults={"start": None, "step": None, "dtype": DataType.Int},
        )
        self._start("iota")
        length = bound["length"]
        if not isinstance(length, Scalar):
            raise TypeError(f"fd.ops.iota: length must be a Scalar, got {length!r}")
        start, step = bound["start"], bound["step"]
        dtype = _dtype("iota", bound["dtype"])
        result = other.iota(
            self._b, length.val, start.val if start is not None else None,
            step.val if step is not None else None, dtype,
        )
        return self._finish(
            "iota", [result], [(None, length), (None, start), (None, step), ("dtype", dtype)]
        )

    def _random(self, op: OpType, args: tuple, kwargs: dict) -> Tensor:
        first, second = ("minval", "maxval") if op is OpType.uniform else ("mean", "std")
        bound = _bind(
            op.value, [first, second, "shape", "rng_seed", "rng_offset", "dtype"], args, kwargs,
            defaults={"rng_seed": None, "rng_offset": None, "dtype": DataType.Float},
        )
        self._start(op.value)
        low, high = _operand(op.value, bound[first]), _operand(op.value, bound[second])
        shape, printed = self._fd._inline_vector(bound["shape"], op.value)
        seed, offset = bound["rng_seed"], bound["rng_offset"]
        dtype = _dtype(op.value, bound["dtype"])
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
        bound = _bind(
            op.value, ["arg", "rng_seed", "rng_offset"], args, kwargs,
            defaults={"rng_seed": None, "rng_offset": None},
        )
        self._start(op.value)
        arg = _tensor(op.value, bound["arg"])
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

    # -- matmul and attention --------------------------------------------------------------

    def matmul(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("matmul", ["arg1", "arg2"], args, kwargs)
        self._start("matmul")
        a, w = _tensor("matmul", bound["arg1"], "arg1"), _tensor("matmul", bound["arg2"], "arg2")
        return self._finish("matmul", [other.matmul(self._b, a.val, w.val)], [(None, a), (None, w)])

    def linear(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("linear", ["arg1", "arg2", "bias"], args, kwargs, defaults={"bias": None})
        self._start("linear")
        a, w = _tensor("linear", bound["arg1"], "arg1"), _tensor("linear", bound["arg2"], "arg2")
        bias = bound["bias"]
        if bias is not None:
            bias = _tensor("linear", bias, "bias")
        result = other.linear(self._b, a.val, w.val, bias.val if bias is not None else None)
        record = [(None, a), (None, w)] + ([(None, bias)] if bias is not None else [])
        return self._finish("linear", [result], record)

    def sdpfa_fwd(self, *args: Any, **kwargs: Any) -> tuple[Tensor, ...]:
        names = ["query", "key", "value", "bias", "mask", "dropout_p", "is_causal", "scale"]
        bound = _bind("sdpfa_fwd", names, args, kwargs, defaults={n: None for n in names[3:]})
        self._start("sdpfa_fwd")
        q, k, v = (_tensor("sdpfa_fwd", bound[n], n) for n in names[:3])
        if bound["bias"] is not None or bound["mask"] is not None:
            raise DefinitionError("sdpfa_fwd", "bias and mask are not supported by fusecli yet")
        scalars = {}
        for name in ("dropout_p", "is_causal", "scale"):
            value = bound[name]
            if value is not None and not isinstance(value, Scalar):
                raise TypeError(f"fd.ops.sdpfa_fwd: {name} must be a Scalar or None")
            scalars[name] = value.val if value is not None else None
        results = other.sdpfa_fwd(self._b, q.val, k.val, v.val, **scalars)
        return self._finish("sdpfa_fwd", results, [(None, bound[n]) for n in names])

    def triu(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = _bind("triu", ["input", "diagonal"], args, kwargs, defaults={"diagonal": None})
        self._start("triu")
        arg = _tensor("triu", bound["input"], "input")
        diagonal = bound["diagonal"]
        if isinstance(diagonal, int) and not isinstance(diagonal, bool):
            diagonal = self._fd.define_scalar(diagonal, DataType.Int)
        result = other.triu(self._b, arg.val, diagonal.val if diagonal is not None else None)
        record = [(None, arg)] + ([(None, diagonal)] if diagonal is not None else [])
        return self._finish("triu", [result], record)

    # -- shape queries ---------------------------------------------------------------------

    def size(self, *args: Any, **kwargs: Any) -> Scalar:
        bound = _bind("size", ["arg", "dim"], args, kwargs)
        self._start("size")
        arg = _tensor("size", bound["arg"])
        dim = _int("size", bound["dim"], "dim")
        result = other.size(self._b, arg.val, dim)
        return self._finish("size", [result], [(None, arg), ("dim", dim)])

    def shape(self, *args: Any, **kwargs: Any) -> Vector:
        bound = _bind("shape", ["arg"], args, kwargs)
        self._start("shape")
        arg = _tensor("shape", bound["arg"])
        vector = other.shape(self._b, arg.val)
        elements = [self._fd._scalar(e) for e in vector.elements]
        state = self._fd._vector(elements)
        self._fd._record(Record("fd.ops.shape", [state], [(None, arg)]))
        return state

    def tensor_sizes(self, *args: Any, **kwargs: Any) -> list[Scalar]:
        bound = _bind("tensor_sizes", ["arg"], args, kwargs)
        self._start("tensor_sizes")
        arg = _tensor("tensor_sizes", bound["arg"])
        states = [self._fd._scalar(other.size(self._b, arg.val, d)) for d in range(arg.ndim)]
        self._fd._record(
            Record("fd.ops.tensor_sizes", states, [(None, arg)], trailing_comma=True)
        )
        return states

    def at(self, *args: Any, **kwargs: Any) -> Scalar:
        bound = _bind("at", ["arg", "index"], args, kwargs)
        self._start("at")
        vector = bound["arg"]
        if not isinstance(vector, Vector):
            raise TypeError(f"fd.ops.at: arg must be a Vector, got {vector!r}")
        index = _int("at", bound["index"], "index")
        element = other.at(vector.val, index)
        return self._finish("at", [element], [(None, vector), ("index", index)])


def _make_elementwise(op: OpType, arity: int) -> Callable[..., State]:
    def method(self: Ops, *args: Any, **kwargs: Any) -> State:
        if kwargs:
            names = ["arg", "arg1", "arg2", "arg3", "other", "input"]
            args = args + tuple(kwargs.pop(n) for n in names if n in kwargs)
            if kwargs:
                raise TypeError(f"fd.ops.{op.value}() got unexpected arguments {sorted(kwargs)}")
        if len(args) != arity:
            raise TypeError(f"fd.ops.{op.value}() takes {arity} arguments, got {len(args)}")
        return self._elementwise(op, *args)

    method.__name__ = op.value
    method.__doc__ = f"nvFuser's fd.ops.{op.value} ({arity} operands)."
    return method


_ARITY = {OpKind.UNARY: 1, OpKind.BINARY: 2}
_TERNARY_ARITY = {
    OpType.lerp: 3, OpType.clamp: 3, OpType.threshold: 3, OpType.addcmul: 4,
    OpType.add_alpha: 3, OpType.sub_alpha: 3,
}

for _op in OpType:
    if _op.kind in _ARITY:
        setattr(Ops, _op.value, _make_elementwise(_op, _ARITY[_op.kind]))
    elif _op in _TERNARY_ARITY:
        setattr(Ops, _op.value, _make_elementwise(_op, _TERNARY_ARITY[_op]))
del _op

__all__ = ["Inline", "Ops"]
