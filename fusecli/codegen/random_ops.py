"""Random ops in a kernel: nvFuser's Philox stream (``fusecli.ir.rng``, the definition the
reference and ATen use too; C helpers in ``prelude_rng``).

Element i of a random op is component i % 4 of Philox subsequence i / 4 (i % 2 of i / 2 in
double), i its row-major linear index in the op's output. Where the index arithmetic says both
(every loop term a multiple of 4, as a vectorized loop's lanes are), the kernel draws each
subsequence once per scope (``philox_draw``) and takes components by constant; elsewhere each
random op keeps its last draw in a ``PhiloxState`` declared at the top of the kernel and draws
again only for a new subsequence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.codegen import cdtypes
from fusecli.codegen.indexing import LANE, Index, contiguous_strides
from fusecli.codegen.kernel import UnsupportedError
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Scalar, TensorView
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.codegen.emitter import Emitter


_RANDOM_SUFFIX = {DataType.Float: "f", DataType.Double: "", DataType.Half: "_half",
                  DataType.BFloat16: "_bfloat"}


def random(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    """``rng_uniformf(state, seed, offset, index, from, to)`` and the like (prelude_rng)."""
    suffix = _RANDOM_SUFFIX.get(out.dtype)
    if suffix is None:
        raise UnsupportedError(f"no CUDA generator for {expr.op.value} ({out.dtype.name})")
    uniform = expr.op in (OpType.uniform, OpType.rand_like)
    compute = DataType.Double if out.dtype is DataType.Double else DataType.Float
    if expr.op in (OpType.uniform, OpType.normal):
        if not all(isinstance(value, Scalar) for value in expr.inputs[:2]):
            raise UnsupportedError(f"{expr.op.value} of tensor parameters")
        first, second = (emitter.scalar(value, compute) for value in expr.inputs[:2])
    else:
        first, second = cdtypes.literal(0.0, compute), cdtypes.literal(1.0, compute)
    seed, offset = emitter.ctx.rng_params(expr)
    linear = emitter.offset(contiguous_strides(emitter.ctx.shape(out)), index)
    kind = "uniform" if uniform else "normal"
    # Philox's subsequence and component, where the index says them (a multiple of the
    # components per call, plus a constant): drawn once per subsequence in this scope.
    per_call = 2 if out.dtype is DataType.Double else 4
    known = _subsequence(linear, emitter.lane, per_call)
    if known is not None:
        subsequence, component = known
        key = ("philox", expr.uid, subsequence.text())
        words = emitter.recall(key)
        if words is None:
            words = emitter.remember(key, emitter.bind(
                "PhiloxState", f"{emitter.ctx.name(out).lower()}_words",
                f"philox_draw({seed.name}, {offset.name}, "
                f"(unsigned long long)({subsequence.text()}))"))
        return emitter.result(out, f"{kind}{suffix}_of({words}, {component}u, {first}, {second})",
                              expr.op.value)
    state = emitter.philox.get(expr.uid)
    if state is None:  # declared at the top of the kernel: it lives across loop iterations
        state = emitter.philox[expr.uid] = emitter.fresh(f"{emitter.ctx.name(out).lower()}_rng")
        emitter.lines.insert(len(emitter.philox) - 1,
                             f"  PhiloxState {state} = {{~0ULL, {{0u, 0u, 0u, 0u}}}};")
    function = f"rng_{kind}{suffix}"
    return emitter.result(out, f"{function}({state}, {seed.name}, {offset.name}, "
                               f"{emitter.text(linear)}, {first}, {second})", expr.op.value)


def _subsequence(linear: Index, lane: int, per_call: int) -> tuple[Index, int] | None:
    """(subsequence, component) of the element at ``linear`` (lane ``lane`` substituted) when
    every term's coefficient is a multiple of ``per_call``; None where only run time knows."""
    constant = linear.const + linear.coefficient(LANE) * lane
    terms = linear.without(LANE).terms
    if any(LANE in term or coefficient % per_call for term, coefficient in terms):
        return None
    subsequence = Index(tuple((t, c // per_call) for t, c in terms), constant // per_call)
    return subsequence, constant % per_call
