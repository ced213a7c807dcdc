"""Rebuilding a FusionDefinition from IR exprs: how bisect makes a smaller fusion that runs alone.

``rebuild`` replays some of a fusion's exprs through the public frontend API, one table entry
per op (a group one call made, as that call: ``bisect.joined``): a definition like any user's,
validated as it is built, with records, so it prints as an nvFuser repro and converts to YAML.
Values the replayed exprs read but do not compute become inputs (``bisect.declare``).
``extents`` substitutes static sizes (512 -> 64) in input declarations and shape arguments
(``expand``, ``reshape``, ``full``, random shapes): how shrinking makes inputs smaller without
touching the ops. Slice bounds, pad widths and iota lengths are left alone; a fusion that no
longer fits them fails to rebuild, and shrinking tries something else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fusecli.bisect.declare import declare_input
from fusecli.bisect.joined import joins, replay_call
from fusecli.frontend import FusionDefinition
from fusecli.frontend.state import Scalar as ScalarState
from fusecli.frontend.state import State
from fusecli.ir.attrs import embedding_options, given_options, pad_widths, random_seed, slice_bounds
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, FusionOutput, Scalar, TensorView, Val, Vector
from fusecli.ir.optype import OpKind, OpType


class RebuildError(ValueError):
    """The exprs cannot be replayed as given: an op without a frontend form, or a result that
    differs from the IR (another dtype or rank), which would make the rebuilt fusion lie."""


ShapeArg = list[int | ScalarState]


class _Replay:
    """The definition being built and the handle of every IR value replayed so far."""

    def __init__(
        self, fd: FusionDefinition, extents: Mapping[int, int], aliases: Mapping[int, Val]
    ) -> None:
        self.fd = fd
        self.ops = fd.ops
        self.extents = extents
        self.aliases = aliases
        self.states: dict[int, State] = {}

    def val(self, value: Val) -> State:
        value = self.aliases.get(value.uid, value)
        if isinstance(value, Scalar) and value.is_constant:
            if value.uid not in self.states:
                self.states[value.uid] = self.fd.define_scalar(value.value, dtype=value.dtype)
            return self.states[value.uid]
        if value.uid not in self.states:
            raise RebuildError(f"{value!r} is read before it is defined or made an input")
        return self.states[value.uid]

    def optional(self, value: Val | None) -> State | None:
        return None if value is None else self.val(value)

    def ints(self, values: Sequence[Scalar], sizes: bool = False) -> ShapeArg:
        """Scalars as a frontend list: constants as ints (sizes substituted), others as handles."""
        items: ShapeArg = []
        for scalar in values:
            if scalar.is_constant:
                number = int(scalar.value)
                items.append(self.extents.get(number, number) if sizes else number)
            else:
                items.append(self.val(scalar))
        return items

    def shape(self, vector: Val) -> ShapeArg:
        if not isinstance(vector, Vector):
            raise RebuildError(f"expected a shape vector, got {vector!r}")
        return self.ints(vector.elements, sizes=True)


Rule = Callable[[_Replay, Expr], Any]


def _elementwise(r: _Replay, e: Expr) -> Any:
    return getattr(r.ops, e.op.value)(*(r.val(v) for v in e.inputs))


def _cast(r: _Replay, e: Expr) -> Any:
    return r.ops.cast(r.val(e.inputs[0]), dtype=e.attr("dtype"))


def _copy(r: _Replay, e: Expr) -> Any:
    return getattr(r.ops, e.op.value)(r.val(e.inputs[0]))


def _stride_order(r: _Replay, e: Expr) -> Any:
    return r.ops.stride_order(r.val(e.inputs[0]), list(e.attr("stride_order")))


def _reduction(r: _Replay, e: Expr) -> Any:
    # The IR reduction's operand already has the accumulation dtype, and keepdim is a
    # separate broadcast expr: replay without either.
    return getattr(r.ops, e.op.value)(
        r.val(e.inputs[0]), dims=list(e.attr("dims")), keepdim=False, dtype=DataType.Null)


def _variance(r: _Replay, e: Expr) -> Any:
    return getattr(r.ops, e.op.value)(r.val(e.inputs[0]), dims=list(e.attr("dims")),
                                      correction=e.attr("correction"), keepdim=False)


def _welford(r: _Replay, e: Expr) -> Any:
    return r.ops.welford(r.val(e.inputs[0]), dims=list(e.attr("dims")))


def _scan(r: _Replay, e: Expr) -> Any:
    return getattr(r.ops, e.op.value)(r.val(e.inputs[0]), dim=e.attr("dim"))


def _argsort(r: _Replay, e: Expr) -> Any:
    return r.ops.argsort(
        r.val(e.inputs[0]), dim=e.attr("dim"), descending=e.attr("descending"),
        stable=e.attr("stable"),
    )


def _topk(r: _Replay, e: Expr) -> Any:
    return r.ops.topk(
        r.val(e.inputs[0]), r.val(e.inputs[1]), dim=e.attr("dim"), largest=e.attr("largest"),
        sorted=e.attr("sorted"),
    )


def _broadcast(r: _Replay, e: Expr) -> Any:
    return r.ops.broadcast(r.val(e.inputs[0]), list(e.attr("is_broadcast_dim")))


def _expand(r: _Replay, e: Expr) -> Any:
    return r.ops.expand(r.val(e.inputs[0]), shape=r.shape(e.inputs[1]))


def _reshape(r: _Replay, e: Expr) -> Any:
    return r.ops.reshape(r.val(e.inputs[0]), new_shape=r.shape(e.inputs[1]))


def _permute(r: _Replay, e: Expr) -> Any:
    return r.ops.permute(r.val(e.inputs[0]), dims=list(e.attr("dims")))


def _squeeze(r: _Replay, e: Expr) -> Any:
    return r.ops.squeeze(
        r.val(e.inputs[0]), dims=list(e.attr("dims")),
        squeeze_expanded=e.attr("squeeze_expanded", False),
    )


def _slice(r: _Replay, e: Expr) -> Any:
    starts, ends = slice_bounds(e, e.inputs)
    source = e.inputs[0]
    end_indices = r.ints(ends)
    if r.extents and isinstance(source, TensorView):
        # an end at the dimension's whole (static) extent follows the size when it shrinks
        for axis, (scalar, domain) in enumerate(zip(ends, source.logical)):
            whole = domain.logical_extent
            whole = whole if isinstance(whole, int) else None
            if scalar.is_constant and whole is not None and int(scalar.value) == whole:
                end_indices[axis] = r.extents.get(whole, whole)
    return r.ops.slice(
        r.val(source), start_indices=r.ints(starts), end_indices=end_indices,
        manual_normalization=bool(e.attr("manual_normalization", False)),
    )


def _pad(r: _Replay, e: Expr) -> Any:
    arg, value = e.inputs[:2]
    return r.ops.pad(r.val(arg), r.ints(pad_widths(e.inputs)), r.val(value))


def _cat(r: _Replay, e: Expr) -> Any:
    return r.ops.cat(
        [r.val(t) for t in e.inputs], dim=e.attr("dim"),
        manual_padding=bool(e.attr("manual_padding", False)),
    )


def _indexed(r: _Replay, e: Expr) -> Any:
    """index_select, select, gather, take_along_axis: (arg, index, dim=)."""
    return getattr(r.ops, e.op.value)(r.val(e.inputs[0]), r.val(e.inputs[1]), dim=e.attr("dim"))


def _scatter(r: _Replay, e: Expr) -> Any:
    arg, index, src = (r.val(v) for v in e.inputs)
    return r.ops.scatter(arg, index, src, dim=e.attr("dim"))


def _index_put_accumulate(r: _Replay, e: Expr) -> Any:
    return r.ops.index_put_accumulate(*(r.val(v) for v in e.inputs))


def _embedding(r: _Replay, e: Expr) -> Any:
    indices, weight = e.inputs[:2]
    options = {name: r.val(v) for name, v in embedding_options(e, e.inputs).items()}
    return r.ops.embedding_fwd(r.val(indices), r.val(weight), **options)


def _full(r: _Replay, e: Expr) -> Any:
    return r.ops.full(
        shape=r.shape(e.inputs[0]), fill_value=r.val(e.inputs[1]), dtype=e.attr("dtype")
    )


def _iota(r: _Replay, e: Expr) -> Any:
    length, start, step = (r.val(v) for v in e.inputs)
    return r.ops.iota(length, start, step, dtype=e.attr("dtype"))


def _replayed_seed(r: _Replay, e: Expr) -> tuple[State | None, State | None]:
    seed = random_seed(e, e.inputs)
    return (None, None) if seed is None else (r.val(seed[0]), r.val(seed[1]))


def _random(r: _Replay, e: Expr) -> Any:
    first, second, shape = e.inputs[:3]
    seed, offset = _replayed_seed(r, e)
    return getattr(r.ops, e.op.value)(
        r.val(first), r.val(second), r.shape(shape), rng_seed=seed, rng_offset=offset,
        dtype=e.attr("dtype"),
    )


def _random_like(r: _Replay, e: Expr) -> Any:
    seed, offset = _replayed_seed(r, e)
    return getattr(r.ops, e.op.value)(r.val(e.inputs[0]), rng_seed=seed, rng_offset=offset)


def _matmul(r: _Replay, e: Expr) -> Any:
    return r.ops.matmul(r.val(e.inputs[0]), r.val(e.inputs[1]))


def _linear(r: _Replay, e: Expr) -> Any:
    bias = e.inputs[2] if e.attr("has_bias", False) else None
    return r.ops.linear(r.val(e.inputs[0]), r.val(e.inputs[1]), r.optional(bias))


def _attention(r: _Replay, e: Expr) -> Any:
    """sdpfa_fwd, sdpfa_bwd, grouped_mm: every operand by its keyword, the options given."""
    options = given_options(e, e.inputs)
    kwargs: dict[str, Any] = (  # sdpfa_bwd's scalars have no defaults
        dict.fromkeys(("dropout_p", "is_causal", "scale")) if e.op is OpType.sdpfa_bwd else {}
    )
    definition = e.op.definition
    required = [p for p in definition.params if p not in {*definition.defaults, *kwargs}]
    kwargs.update(zip(required, (r.val(v) for v in e.inputs), strict=False))
    kwargs.update((name, r.val(v)) for name, v in options.items())
    if e.op is not OpType.grouped_mm or "scale1" not in options:
        return getattr(r.ops, e.op.value)(**kwargs)
    return r.ops.grouped_mm(**kwargs, dtype=e.output.dtype)[0]  # (out, None, None)


def _triu(r: _Replay, e: Expr) -> Any:
    diagonal = e.inputs[1] if len(e.inputs) > 1 else None
    return r.ops.triu(r.val(e.inputs[0]), r.optional(diagonal))


def _size(r: _Replay, e: Expr) -> Any:
    return r.ops.size(r.val(e.inputs[0]), dim=e.attr("dim"))


_BY_KIND: dict[OpKind, Rule] = {
    OpKind.UNARY: _elementwise,
    OpKind.BINARY: _elementwise,
    OpKind.TERNARY: _elementwise,
    OpKind.CAST: _cast,
    OpKind.REDUCTION: _reduction,
}

RULES: dict[OpType, Rule] = {
    **{op: _BY_KIND[op.kind] for op in OpType if op.kind in _BY_KIND},
    OpType.set: _copy,
    OpType.segment_set: _copy,
    OpType.stride_order: _stride_order,
    OpType.var: _variance,
    OpType.var_mean: _variance,
    OpType.welford: _welford,
    OpType.cumsum: _scan,
    OpType.cumprod: _scan,
    OpType.cummin: _scan,
    OpType.cummax: _scan,
    OpType.argsort: _argsort,
    OpType.topk: _topk,
    OpType.broadcast: _broadcast,
    OpType.expand: _expand,
    OpType.reshape: _reshape,
    OpType.permute: _permute,
    OpType.squeeze: _squeeze,
    OpType.slice: _slice,
    OpType.pad: _pad,
    OpType.cat: _cat,
    OpType.index_select: _indexed,
    OpType.select: _indexed,
    OpType.gather: _indexed,
    OpType.take_along_axis: _indexed,
    OpType.scatter: _scatter,
    OpType.index_put_accumulate: _index_put_accumulate,
    OpType.embedding_fwd: _embedding,
    OpType.full: _full,
    OpType.iota: _iota,
    OpType.uniform: _random,
    OpType.normal: _random,
    OpType.rand_like: _random_like,
    OpType.randn_like: _random_like,
    OpType.matmul: _matmul,
    OpType.linear: _linear,
    OpType.grouped_mm: _attention,
    OpType.sdpfa_fwd: _attention,
    OpType.sdpfa_bwd: _attention,
    OpType.triu: _triu,
    OpType.size: _size,
}
# Not replayable: mma (only in the nvfuser-2024 lowering of matmul); shape/at (no expr built)
NOT_REPLAYABLE = frozenset(OpType) - frozenset(RULES)


# -- the whole replay ----------------------------------------------------------------------------


def rebuild(
    exprs: Sequence[Expr],
    inputs: Sequence[Val],
    outputs: Sequence[FusionOutput],
    examples: Mapping[int, object],
    *,
    declared: frozenset[int] = frozenset(),
    extents: Mapping[int, int] | None = None,
    aliases: Mapping[int, Val] | None = None,
    reshaped: Mapping[int, list[int]] | None = None,
    padded: Mapping[int, Sequence[int]] | None = None,
) -> FusionDefinition:
    """A new definition: ``inputs`` (in order), ``exprs`` replayed in order, ``outputs``.

    ``examples`` gives an example value per input uid (how intermediates are declared);
    ``declared`` names the inputs that keep their original declaration; ``aliases`` maps a
    bypassed value's uid to the value read in its place (its results may then have other
    dtypes than the IR's, as ``mul(cast(a), b)`` does without the cast); ``reshaped``/``padded``:
    permutes written as a reshape to that shape, resizes as a pad of their first operand by
    those widths (``bisect.views``, ``bisect.resize``). Raises RebuildError,
    or the frontend's DefinitionError / TypeError when the replayed definition is invalid.
    """
    extents = dict(extents or {})
    fd = FusionDefinition()
    with fd:
        replay = _Replay(fd, extents, aliases or {})
        for value in inputs:
            replay.states[value.uid] = declare_input(
                fd, value, examples.get(value.uid), extents, value.uid in declared and not extents
            )
        grouped = joins(exprs, outputs, replay.aliases)
        for expr in exprs:  # a group's first exprs go with its last, as one call (``joined``)
            call = grouped.calls.get(expr.uid)
            if expr.uid in (reshaped or {}):  # a permute of size-1 dims (``views``)
                call = ("reshape", expr, [extents.get(n, n) for n in reshaped[expr.uid]])
            elif expr.uid in (padded or {}):  # a resize of slices as one pad (``resize``)
                call = ("pad", expr, list(padded[expr.uid]))
            if call is not None or expr.uid not in grouped.skipped:
                _check_replay(replay, expr, replay_call(replay, *call) if call else _rule(expr)(
                    replay, expr))
        for output in outputs:
            alias = output.alias_input
            if alias is not None and alias.uid in replay.states:
                fd.add_output(replay.val(output.value), replay.val(alias))
            elif output.stride_order:
                fd.add_output(replay.val(output.value), stride_order=list(output.stride_order))
            else:
                fd.add_output(replay.val(output.value))
    return fd


def _rule(expr: Expr) -> Rule:
    if expr.op not in RULES:
        raise RebuildError(f"fd.ops.{expr.op.value} has no frontend form to replay")
    return RULES[expr.op]


def _check_replay(replay: _Replay, expr: Expr, results: Any) -> None:
    states = list(results) if isinstance(results, tuple | list) else [results]
    if len(states) != len(expr.outputs):
        raise RebuildError(
            f"fd.ops.{expr.op.value} gave {len(states)} results for {len(expr.outputs)} outputs"
        )
    for out, state in zip(expr.outputs, states):
        got = state.val
        same_rank = not isinstance(out, TensorView) or (
            isinstance(got, TensorView) and got.ndim == out.ndim
        )
        if not same_rank or (got.dtype is not out.dtype and not replay.aliases):
            raise RebuildError(
                f"fd.ops.{expr.op.value} replayed as {got!r}, the fusion has {out!r}"
            )
        replay.states[out.uid] = state
