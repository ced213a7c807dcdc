"""The operations of the IR, named as in nvFuser's ``fd.ops``, each with its kind.

The kind is what segmenters and executors dispatch on first (is it elementwise, a reduction, a
resize...); the op itself selects the exact computation.
"""

from __future__ import annotations

import enum


class OpKind(enum.Enum):
    UNARY = "unary"
    BINARY = "binary"
    TERNARY = "ternary"
    CAST = "cast"
    SET = "set"  # set, segment_set, stride_order: a copy
    REDUCTION = "reduction"  # sum, prod, max, min
    NORMALIZATION = "normalization"  # var, var_mean, welford: reductions with several outputs
    SCAN = "scan"  # cumsum
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
    MATMUL = "matmul"  # matmul, linear, (nvfuser-2024) mma
    ATTENTION = "attention"  # sdpfa_fwd
    TRIANGULAR = "triangular"  # triu
    SCALAR = "scalar"  # size, shape, at: scalars read off tensors and vectors


class OpType(enum.Enum):
    # unary, computed in float for ints (float_op_config)
    acos = "acos"
    acosh = "acosh"
    asin = "asin"
    asinh = "asinh"
    atan = "atan"
    atanh = "atanh"
    cos = "cos"
    cosh = "cosh"
    exp = "exp"
    exp2 = "exp2"
    expm1 = "expm1"
    erf = "erf"
    erfc = "erfc"
    erfinv = "erfinv"
    erfcinv = "erfcinv"
    lgamma = "lgamma"
    log = "log"
    log10 = "log10"
    log1p = "log1p"
    log2 = "log2"
    reciprocal = "reciprocal"
    rsqrt = "rsqrt"
    sigmoid = "sigmoid"
    sin = "sin"
    sinh = "sinh"
    sqrt = "sqrt"
    tan = "tan"
    tanh = "tanh"
    # unary, default promotion
    neg = "neg"
    sign = "sign"
    # unary, output keeps the input dtype
    abs = "abs"
    ceil = "ceil"
    floor = "floor"
    frac = "frac"
    relu = "relu"
    round = "round"
    silu = "silu"
    trunc = "trunc"
    bitwise_not = "bitwise_not"
    real = "real"
    imag = "imag"
    # unary predicates: Bool output
    logical_not = "logical_not"
    isfinite = "isfinite"
    isinf = "isinf"
    isnan = "isnan"
    isneginf = "isneginf"
    isposinf = "isposinf"
    isreal = "isreal"
    signbit = "signbit"
    # binary
    add = "add"
    sub = "sub"
    mul = "mul"
    div = "div"
    truediv = "truediv"
    mod = "mod"
    fmod = "fmod"
    remainder = "remainder"
    pow = "pow"
    atan2 = "atan2"
    nextafter = "nextafter"
    minimum = "minimum"
    maximum = "maximum"
    eq = "eq"
    ne = "ne"
    lt = "lt"
    le = "le"
    gt = "gt"
    ge = "ge"
    logical_and = "logical_and"
    logical_or = "logical_or"
    bitwise_and = "bitwise_and"
    bitwise_or = "bitwise_or"
    bitwise_xor = "bitwise_xor"
    bitwise_left_shift = "bitwise_left_shift"
    bitwise_right_shift = "bitwise_right_shift"
    logical_right_shift = "logical_right_shift"
    gcd = "gcd"
    # ternary
    where = "where"
    lerp = "lerp"
    clamp = "clamp"
    threshold = "threshold"
    addcmul = "addcmul"
    add_alpha = "add_alpha"
    sub_alpha = "sub_alpha"
    # casts and copies
    cast = "cast"
    set = "set"
    segment_set = "segment_set"
    stride_order = "stride_order"
    # reductions and friends
    sum = "sum"
    prod = "prod"
    max = "max"
    min = "min"
    var = "var"
    var_mean = "var_mean"
    welford = "welford"
    cumsum = "cumsum"
    argsort = "argsort"
    topk = "topk"
    # shape
    broadcast = "broadcast"
    expand = "expand"
    reshape = "reshape"
    permute = "permute"
    squeeze = "squeeze"
    slice = "slice"
    pad = "pad"
    cat = "cat"
    # indexing
    index_select = "index_select"
    select = "select"
    gather = "gather"
    take_along_axis = "take_along_axis"
    scatter = "scatter"
    embedding_fwd = "embedding_fwd"
    # creation and random numbers
    full = "full"
    iota = "iota"
    uniform = "uniform"
    normal = "normal"
    rand_like = "rand_like"
    randn_like = "randn_like"
    # matmul and attention
    matmul = "matmul"
    linear = "linear"
    mma = "mma"  # nvfuser-2024 lowering of matmul: broadcast operands, multiply, sum over K
    sdpfa_fwd = "sdpfa_fwd"
    triu = "triu"
    # scalars read off tensors and vectors
    size = "size"
    shape = "shape"
    at = "at"

    @property
    def kind(self) -> OpKind:
        return _KIND[self]


def _kinds(kind: OpKind, names: str) -> dict[OpType, OpKind]:
    return {OpType(name): kind for name in names.split()}


_KIND: dict[OpType, OpKind] = {
    **_kinds(
        OpKind.UNARY,
        "acos acosh asin asinh atan atanh cos cosh exp exp2 expm1 erf erfc erfinv erfcinv lgamma"
        " log log10 log1p log2 reciprocal rsqrt sigmoid sin sinh sqrt tan tanh neg sign abs ceil"
        " floor frac relu round silu trunc bitwise_not real imag logical_not isfinite isinf isnan"
        " isneginf isposinf isreal signbit",
    ),
    **_kinds(
        OpKind.BINARY,
        "add sub mul div truediv mod fmod remainder pow atan2 nextafter minimum maximum eq ne lt"
        " le gt ge logical_and logical_or bitwise_and bitwise_or bitwise_xor bitwise_left_shift"
        " bitwise_right_shift logical_right_shift gcd",
    ),
    **_kinds(OpKind.TERNARY, "where lerp clamp threshold addcmul add_alpha sub_alpha"),
    **_kinds(OpKind.CAST, "cast"),
    **_kinds(OpKind.SET, "set segment_set stride_order"),
    **_kinds(OpKind.REDUCTION, "sum prod max min"),
    **_kinds(OpKind.NORMALIZATION, "var var_mean welford"),
    **_kinds(OpKind.SCAN, "cumsum"),
    **_kinds(OpKind.SORT, "argsort topk"),
    **_kinds(OpKind.BROADCAST, "broadcast"),
    **_kinds(OpKind.EXPAND, "expand"),
    **_kinds(OpKind.RESHAPE, "reshape"),
    **_kinds(OpKind.PERMUTE, "permute"),
    **_kinds(OpKind.SQUEEZE, "squeeze"),
    **_kinds(OpKind.RESIZE, "slice pad cat"),
    **_kinds(
        OpKind.INDEX, "index_select select gather take_along_axis scatter embedding_fwd"
    ),
    **_kinds(OpKind.CREATE, "full iota"),
    **_kinds(OpKind.RANDOM, "uniform normal rand_like randn_like"),
    **_kinds(OpKind.MATMUL, "matmul linear mma"),
    **_kinds(OpKind.ATTENTION, "sdpfa_fwd"),
    **_kinds(OpKind.TRIANGULAR, "triu"),
    **_kinds(OpKind.SCALAR, "size shape at"),
}

missing = set(OpType) - set(_KIND)
assert not missing, f"ops without a kind: {missing}"
del missing
