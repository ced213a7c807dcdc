"""Every op of the IR, declared once: one ``OpDef`` record per ``fd.ops`` name.

A record says what the op is (its kind), how a script calls it (the frontend signature, with
defaults and the old spellings it accepts), what its expr holds (inputs and attrs), its dtype
rule, how nvFuser prints it, its CUDA math function when it is one, and what it means when that
is not "the torch function of the same name". From these records derive:

- ``OpType`` and ``OpType.kind`` (``fusecli.ir.optype``);
- the promotion of every elementwise op and its operand checks (``fusecli.ir.ops_elementwise``);
- the ``fd.ops`` methods of plain elementwise ops and the argument binding of every op
  (``fusecli.frontend``), hence YAML definitions, which call ``fd.ops``;
- the nvFuser-format printing of elementwise exprs (``fusecli.ir.printer_exprs``);
- the CUDA rendering of ops that are one math function (``fusecli.codegen.render``);
- the op table of ``docs/ir.md`` (``fusecli.ir.catalogue_docs``).

The backends (reference, ATen, CUDA) keep one table each keyed by ``OpType``; each has a
coverage test that fails on a missing entry unless the op is in that backend's ``UNSUPPORTED``.
A new elementwise op is one record here plus one entry per backend table.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fusecli.ir.dtype import DataType, Promotion


class OpKind(enum.Enum):
    UNARY = "unary"
    BINARY = "binary"
    TERNARY = "ternary"
    CAST = "cast"
    SET = "set"  # set, segment_set, stride_order: a copy
    REDUCTION = "reduction"  # sum, prod, max, min
    NORMALIZATION = "normalization"  # var, var_mean, welford: reductions with several outputs
    SCAN = "scan"  # cumsum, cumprod, cummin, cummax
    SORT = "sort"  # argsort, topk
    BROADCAST = "broadcast"
    EXPAND = "expand"
    RESHAPE = "reshape"
    PERMUTE = "permute"
    SQUEEZE = "squeeze"
    RESIZE = "resize"  # slice, pad, cat
    INDEX = "index"  # gather, take_along_axis, index_select, select, scatter, embedding
    CREATE = "create"  # full, iota
    RANDOM = "random"  # uniform, normal, rand_like, randn_like
    MATMUL = "matmul"  # matmul, linear, grouped_mm, (nvfuser-2024) mma
    ATTENTION = "attention"  # sdpfa_fwd, sdpfa_bwd
    TRIANGULAR = "triangular"  # triu
    SCALAR = "scalar"  # size, shape, at: scalars read off tensors and vectors


ELEMENTWISE_KINDS = frozenset({OpKind.UNARY, OpKind.BINARY, OpKind.TERNARY})


def _frozen(mapping: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class OpDef:
    """One op: its call, its expr, its dtype rule, its printing and its CUDA function."""

    name: str
    kind: OpKind
    # The frontend: ``fd.ops.<name>(*params)``; ``defaults`` for the optional ones, ``aliases``
    # for the old keyword spellings of issue repros (``axes=`` for ``dims=``).
    params: tuple[str, ...]
    defaults: Mapping[str, object] = field(default_factory=_frozen)
    aliases: Mapping[str, str] = field(default_factory=_frozen)
    # The expr: what its inputs are and which attrs it carries (docs/ir.md).
    inputs: str = "[x]"
    attrs: tuple[str, ...] = ()
    # Elementwise dtype rule (nvFuser's op configs, csrc/ops/arith.cpp).
    promotion: Promotion | None = None
    integer_only: bool = False  # operands must be integers or booleans
    casts_operands: bool = True  # False: a predicate tests the operand in its own dtype
    operand_dtype: DataType | None = None  # operands cast to this (logical_and: Bool)
    real_output: bool = False  # complex operands give their real dtype (abs, real, imag)
    # nvFuser's printing: an inline operator, or a function name other than the op's own,
    # and whether Float outputs add the ``f`` suffix (type.cpp needFloatSuffix).
    symbol: str | None = None
    printed: str | None = None
    float_suffix: bool = False
    # The CUDA math function computing it (``expf`` for floats, ``exp`` for doubles), when the
    # op is exactly that; other ops have a hand-written entry in ``codegen.render.C_OPS``.
    cuda: str | None = None
    # What it means, where that is not the torch function of the same name.
    doc: str = ""

    @property
    def arity(self) -> int:
        return len(self.params) - len(self.defaults)

    @property
    def is_elementwise(self) -> bool:
        return self.kind in ELEMENTWISE_KINDS


P = Promotion
K = OpKind


def _op(name: str, kind: OpKind, params: str = "arg", **fields: object) -> OpDef:
    defaults = fields.pop("defaults", None)
    aliases = fields.pop("aliases", None)
    return OpDef(name, kind, tuple(params.split()), _frozen(defaults), _frozen(aliases),
                 **fields)  # type: ignore[arg-type]


def _unary(names: str, promotion: Promotion, math: bool = False, **fields: object) -> list[OpDef]:
    """Unary ops; ``math``: each is the CUDA math function of its own name."""
    fields.setdefault("float_suffix", True)
    return [_op(n, K.UNARY, "arg", promotion=promotion, **({"cuda": n} if math else {}),
                **fields) for n in names.split()]


def _binary(names: str, promotion: Promotion, **fields: object) -> list[OpDef]:
    return [_op(n, K.BINARY, "arg1 arg2", inputs="[a, b]", promotion=promotion, **fields)
            for n in names.split()]


def _predicate(names: str) -> list[OpDef]:
    return _unary(names, P.BOOL, casts_operands=False, float_suffix=False)


_REDUCTION = dict(
    defaults={"dims": None, "keepdim": False, "dtype": DataType.Null},
    aliases={"axes": "dims", "dim": "dims"}, attrs=("dims",),
    doc="dims sorted and normalized; the output dtype already decided (ints accumulate in Int"
    " through an explicit cast)",
)
_RNG = dict(defaults={"rng_seed": None, "rng_offset": None, "dtype": DataType.Float},
            attrs=("dtype", "seeded"))
_EMBEDDING_OPTIONS = "padding_idx max_norm norm_type scale_grad_by_freq sparse"
_SDPA_OPTIONS = "bias mask dropout_p is_causal scale"
_GROUPED_MM_OPTIONS = ("scale1 scale2 alpha bias beta dtype output_block_scale_size"
                       " output_block_scale_dtype output_gamma")

OPS: tuple[OpDef, ...] = (
    # unary, computed in float for ints (float_op_config); each one CUDA math function
    *_unary("acos acosh asin asinh atan atanh cos cosh exp exp2 expm1 erf erfc erfinv", P.FLOAT,
            math=True),
    *_unary("erfcinv", P.FLOAT, math=True, doc="erfinv(1 - x)"),
    *_unary("lgamma log log10 log1p log2", P.FLOAT, math=True),
    *_unary("reciprocal", P.FLOAT, float_suffix=False),
    *_unary("rsqrt", P.FLOAT, math=True),
    *_unary("sigmoid", P.FLOAT, float_suffix=False),
    *_unary("sin sinh sqrt tan tanh", P.FLOAT, math=True),
    # unary, default promotion
    *_unary("neg", P.DEFAULT, symbol="-", float_suffix=False),
    # unary, the output keeps the input dtype (sign: where(x > 0, 1, where(x < 0, -1, 0)) cast
    # back to x's dtype, csrc/ops/composite.cpp)
    *_unary("sign", P.SAME, float_suffix=False),
    *_unary("abs", P.SAME, real_output=True, float_suffix=False),
    *_unary("ceil floor", P.SAME, math=True),
    *_unary("frac", P.SAME, float_suffix=False, doc="x - trunc(x)"),
    *_unary("relu", P.SAME, float_suffix=False),
    *_unary("round", P.SAME, printed="nearbyint", cuda="rint", doc="half to even"),
    *_unary("silu", P.SAME, float_suffix=False),
    *_unary("trunc", P.SAME, math=True),
    *_unary("bitwise_not", P.SAME, integer_only=True, symbol="~", float_suffix=False),
    *_unary("real", P.SAME, real_output=True, printed="std::real", float_suffix=False),
    *_unary("imag", P.SAME, real_output=True, printed="std::imag", float_suffix=False),
    # unary predicates: a Bool output, the operand tested in its own dtype
    *_unary("logical_not", P.BOOL, casts_operands=False, symbol="!", float_suffix=False),
    *_predicate("isfinite isinf isnan isneginf isposinf isreal signbit"),
    # binary
    *_binary("add", P.DEFAULT, symbol="+"),
    *_binary("sub", P.DEFAULT, symbol="-"),
    *_binary("mul", P.DEFAULT, symbol="*"),
    *_binary("div", P.DEFAULT, symbol="/",
             doc="C-style: truncating for ints, true division for floats"),
    *_binary("truediv", P.FLOAT, symbol="/", doc="true division (ints give Float)"),
    *_binary("mod", P.DEFAULT, symbol="%", doc="C fmod: the sign of the dividend"),
    *_binary("fmod", P.DEFAULT, float_suffix=True, doc="C fmod: the sign of the dividend"),
    *_binary("remainder", P.DEFAULT, doc="Python/torch remainder: the sign of the divisor"),
    *_binary("pow", P.DEFAULT),
    *_binary("atan2", P.FLOAT, float_suffix=True, cuda="atan2"),
    *_binary("nextafter", P.FLOAT_ONLY, cuda="nextafter", doc="Float or Double operands only"),
    *_binary("minimum", P.DEFAULT, printed="fmin", doc="NaN-propagating"),
    *_binary("maximum", P.DEFAULT, printed="fmax", doc="NaN-propagating"),
    *[_binary(n, P.BOOL, symbol=s)[0] for n, s in (
        ("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))],
    *_binary("logical_and", P.BOOL, symbol="&&", operand_dtype=DataType.Bool),
    *_binary("logical_or", P.BOOL, symbol="||", operand_dtype=DataType.Bool),
    *_binary("bitwise_and", P.DEFAULT, integer_only=True, symbol="&"),
    *_binary("bitwise_or", P.DEFAULT, integer_only=True, symbol="|"),
    *_binary("bitwise_xor", P.DEFAULT, integer_only=True, symbol="^"),
    *_binary("bitwise_left_shift", P.DEFAULT, integer_only=True, symbol="<<"),
    *_binary("bitwise_right_shift", P.DEFAULT, integer_only=True, symbol=">>"),
    *_binary("logical_right_shift", P.DEFAULT, integer_only=True,
             doc="unsigned shift of the bit pattern"),
    *_binary("gcd", P.DEFAULT, integer_only=True),
    # ternary
    _op("where", K.TERNARY, "pred arg1 arg2", inputs="[cond, a, b]",
        promotion=P.NO_HALF_TO_FLOAT, doc="cond Bool; a and b promote without the Float upcast"),
    _op("lerp", K.TERNARY, "arg1 arg2 arg3", inputs="[start, end, weight]", promotion=P.DEFAULT,
        doc="start + weight * (end - start)"),
    _op("clamp", K.TERNARY, "arg1 arg2 arg3", inputs="[x, lo, hi]", promotion=P.SAME,
        doc="min(max(x, lo), hi); x's dtype, lo and hi cast to it (csrc/ops/arith.cpp clamp)"),
    _op("threshold", K.TERNARY, "arg1 arg2 arg3", inputs="[x, threshold, value]",
        promotion=P.SAME, doc="where(x <= threshold, value, x); x's dtype, as clamp"),
    _op("addcmul", K.TERNARY, "arg1 arg2 arg3 arg4", inputs="[a, b, c, value]",
        promotion=P.DEFAULT, doc="a + value * b * c"),
    _op("add_alpha", K.TERNARY, "arg1 arg2 arg3", inputs="[a, b, alpha]", promotion=P.DEFAULT,
        doc="a + alpha * b"),
    _op("sub_alpha", K.TERNARY, "arg1 arg2 arg3", inputs="[a, b, alpha]", promotion=P.DEFAULT,
        doc="a - alpha * b"),
    # casts and copies
    _op("cast", K.CAST, "arg dtype", attrs=("dtype",)),
    _op("set", K.SET, doc="copy"),
    _op("segment_set", K.SET, doc="copy; a segment boundary"),
    _op("stride_order", K.SET, "arg stride_order", attrs=("stride_order",),
        doc="copy whose memory layout has that stride order (stride_order[i] = rank of dim i by"
        " stride, 0 innermost)"),
    # reductions and friends
    *[_op(n, K.REDUCTION, "arg dims keepdim dtype", **_REDUCTION)
      for n in "sum prod max min".split()],
    _op("var", K.NORMALIZATION, "arg dims correction keepdim", defaults={"keepdim": False},
        aliases={"axes": "dims"}, attrs=("dims", "correction"), doc="one output: the variance"),
    _op("var_mean", K.NORMALIZATION, "arg dims correction keepdim",
        defaults={"correction": 1, "keepdim": False}, aliases={"axes": "dims"},
        attrs=("dims", "correction"), doc="outputs (variance, mean)"),
    _op("welford", K.NORMALIZATION, "arg dims", aliases={"axes": "dims"}, attrs=("dims",),
        doc="outputs (mean, sum of squared deviations (M2), count as Int with the reduced"
        " shape)"),
    _op("cumsum", K.SCAN, "arg dim", attrs=("dim",)),
    _op("cumprod", K.SCAN, "arg dim", attrs=("dim",)),
    _op("cummin", K.SCAN, "arg dim", attrs=("dim",), doc="the running minimum's values"),
    _op("cummax", K.SCAN, "arg dim", attrs=("dim",), doc="the running maximum's values"),
    _op("argsort", K.SORT, "arg dim descending stable",
        defaults={"descending": False, "stable": False},
        attrs=("dim", "descending", "stable"), doc="Int indices"),
    _op("topk", K.SORT, "arg k dim largest sorted",
        defaults={"dim": -1, "largest": True, "sorted": False}, inputs="[x, k]",
        attrs=("dim", "largest", "sorted"), doc="outputs (values, Int indices)"),
    # shape
    _op("broadcast", K.BROADCAST, "arg is_broadcast_dim", attrs=("is_broadcast_dim",),
        doc="insert size-1 dims where is_broadcast_dim is True"),
    _op("expand", K.EXPAND, "arg shape", inputs="[x, shape Vector]",
        doc="shape entries -1 keep the size"),
    _op("reshape", K.RESHAPE, "arg new_shape", inputs="[x, new_shape Vector]",
        doc="at most one -1 entry: inferred"),
    _op("permute", K.PERMUTE, "arg dims", attrs=("dims",), doc="output dim i = input dim dims[i]"),
    _op("squeeze", K.SQUEEZE, "arg dims squeeze_expanded", defaults={"squeeze_expanded": False},
        attrs=("dims", "squeeze_expanded")),
    _op("slice", K.RESIZE, "arg start_indices end_indices strides manual_normalization",
        defaults={"strides": None, "manual_normalization": False},
        inputs="[x, *starts (rank Scalars), *ends (rank Scalars)]",
        attrs=("manual_normalization", "static_bounds"),
        doc="stride 1; without manual_normalization, torch semantics: negative indices wrap,"
        " then clamp to [0, size], stop >= start; static_bounds: (start, stop) per dim when all"
        " are known"),
    _op("pad", K.RESIZE, "arg pad_widths value", defaults={"value": None},
        inputs="[x, value Scalar, *widths Scalars]", attrs=("width_count",),
        doc="torch.nn.functional.pad order (innermost dim first, (left, right) pairs), a"
        " constant value; negative widths crop"),
    _op("cat", K.RESIZE, "tensors dim manual_padding",
        defaults={"dim": 0, "manual_padding": False}, inputs="tensors",
        attrs=("dim", "manual_padding")),
    # indexing
    _op("index_select", K.INDEX, "arg index dim", inputs="[x, index]", attrs=("dim",)),
    _op("select", K.INDEX, "arg index dim", inputs="[x, index Scalar]", attrs=("dim",),
        doc="removes dim"),
    _op("gather", K.INDEX, "arg1 index dim", inputs="[x, index]", attrs=("dim",)),
    _op("take_along_axis", K.INDEX, "arg1 index dim", inputs="[x, index]", attrs=("dim",),
        doc="torch.take_along_dim"),
    _op("scatter", K.INDEX, "arg1 index src dim", inputs="[x, index, src (tensor or scalar)]",
        attrs=("dim",), doc="torch.scatter, out of place"),
    _op("index_put_accumulate", K.INDEX, "acc index value", inputs="[acc, index, value]",
        doc="torch.index_put(acc, [index], value, accumulate=True): acc [N, ...], index 1-D"
        " [M], value [M, ...]; out of place"),
    _op("embedding_fwd", K.INDEX, "input weight " + _EMBEDDING_OPTIONS,
        defaults={n: None for n in _EMBEDDING_OPTIONS.split()},
        inputs="[indices, weight, *option scalars]", attrs=("options",),
        doc="F.embedding; options: the names of the given options, in signature order"),
    # creation and random numbers
    _op("full", K.CREATE, "shape fill_value dtype", inputs="[shape Vector, fill Scalar]",
        attrs=("dtype",)),
    _op("iota", K.CREATE, "length start step dtype",
        defaults={"start": None, "step": None, "dtype": DataType.Int},
        inputs="[length, start, step]", attrs=("dtype",), doc="start + step * arange(length)"),
    _op("uniform", K.RANDOM, "minval maxval shape rng_seed rng_offset dtype", **_RNG,
        inputs="[low, high, shape Vector, (seed, offset)?]"),
    _op("normal", K.RANDOM, "mean std shape rng_seed rng_offset dtype", **_RNG,
        inputs="[mean, std, shape Vector, (seed, offset)?]"),
    _op("rand_like", K.RANDOM, "arg rng_seed rng_offset",
        defaults={"rng_seed": None, "rng_offset": None}, inputs="[x, (seed, offset)?]",
        attrs=("seeded",)),
    _op("randn_like", K.RANDOM, "arg rng_seed rng_offset",
        defaults={"rng_seed": None, "rng_offset": None}, inputs="[x, (seed, offset)?]",
        attrs=("seeded",)),
    # matmul and attention
    _op("matmul", K.MATMUL, "arg1 arg2", inputs="[a, b]", doc="the output has the input dtype"),
    _op("linear", K.MATMUL, "arg1 arg2 bias", defaults={"bias": None},
        inputs="[a, weight, bias?]", attrs=("has_bias",), doc="F.linear"),
    _op("mma", K.MATMUL, "", inputs="[a, b]", attrs=("reduction_axis",),
        doc="only from the nvfuser-2024 lowering (fusecli/segment/lowering.py): a [M, K, 1] and"
        " b [1, K, N], multiplied and summed over K in Float"),
    _op("grouped_mm", K.MATMUL, "mat1 mat2 offsets " + _GROUPED_MM_OPTIONS,
        defaults={"scale1": None, "scale2": None, "alpha": None, "bias": None, "beta": None,
                  "dtype": None, "output_block_scale_size": 0,
                  "output_block_scale_dtype": DataType.BFloat16, "output_gamma": False},
        inputs="[mat1, mat2, offsets, *given options]", attrs=("options",),
        doc="one matmul per group of offsets (Int32 group ends): [m, k] x [k, n] -> [g, m, n]"
        " (groups split k), [g, m, k] x [k, n] -> [m, n] (split n), [m, k] x [g, k, n] ->"
        " [m, n] (split m); the output has mat1's dtype, or with scale1 and scale2 (which"
        " scale rows and columns) BFloat16 unless dtype says otherwise; options: the names of"
        " the given ones"),
    _op("sdpfa_fwd", K.ATTENTION, "query key value " + _SDPA_OPTIONS,
        defaults={n: None for n in _SDPA_OPTIONS.split()}, inputs="[q, k, v, *given options]",
        attrs=("options",),
        doc="q [N*, H, L, E], k [N*, H, S, E], v [N*, H, S, Ev]; bias and mask (Bool) add to"
        " the scores; outputs (out laid out as q, logsumexp Float [N*, H, L], philox_seed"
        " UInt64 [2], philox_offset UInt64 0-d); options: the names of the given ones"),
    _op("sdpfa_bwd", K.ATTENTION, "grad_output query key value output logsumexp dropout_p"
        " is_causal philox_seed philox_offset scale",
        inputs="[grad_out, q, k, v, out, logsumexp, philox_seed, philox_offset, *given scalars]",
        attrs=("options",),
        doc="flash attention's backward from out and logsumexp; outputs (grad_query, grad_key,"
        " grad_value), each laid out as its input; options: the names of the scalars given"),
    _op("triu", K.TRIANGULAR, "input diagonal", defaults={"diagonal": None},
        inputs="[x, diagonal Scalar]"),
    # scalars read off tensors and vectors
    _op("size", K.SCALAR, "arg dim", attrs=("dim",)),
    _op("shape", K.SCALAR, doc="a Vector of the sizes; never an expr of its own"),
    _op("at", K.SCALAR, "arg index", inputs="[Vector]", doc="one element; never an expr"),
)

DEFS: Mapping[str, OpDef] = MappingProxyType({d.name: d for d in OPS})
assert len(DEFS) == len(OPS), "an op is declared twice"
