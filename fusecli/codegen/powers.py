"""``pow`` by a constant exponent, lowered to products and roots before its C is rendered.

nvFuser's code generator writes ``x ** 1``, ``x ** 2`` and ``x ** 3`` as products of ``x``
when the exponent is a constant integer, or a constant float without a fractional part
(``genPowerWithMul`` in NVIDIA/Fuser ``csrc/codegen.cpp``); any other exponent calls ``pow``.
Eager torch's ``pow(tensor, python_scalar)`` lowers more (ATen's ``pow_tensor_scalar``:
``aten/src/ATen/native/Pow.cpp``, ``cuda/PowKernel.cu``): 0, 1, 2, 3, -1, -2 as products and
quotients, 0.5 and -0.5 as ``sqrt`` and ``rsqrt``. fusecli lowers the same exponents, and 4 as
``(x * x) * (x * x)`` (torch calls ``pow`` there).

Every form is C's ``pow`` wherever ``pow``'s result is special (NaN, ±inf, ±0), which is what
the reference (eager torch with the exponent as a tensor: ``std::pow``) and nvFuser's ``powf``
give: the products and quotients are by construction, and the roots take IEEE ``pow``'s cases
that ``sqrt`` and ``rsqrt`` answer differently (``pow(-0, 0.5)`` is +0 and ``pow(-inf, 0.5)``
+inf, where ``sqrt`` gives -0 and NaN; ``pow(-0, -0.5)`` is +inf and ``pow(-inf, -0.5)`` +0).
Elsewhere each is within the op's error bound (``ULPS_PER_OP`` half-ulps of float32,
``fusecli.reference.roundings``): one rounding for ``x * x``, ``1 / x`` and ``sqrt``, two for
``x * x * x`` and ``1 / (x * x)``, three half-ulps at most for the fourth power, two ulps for
CUDA's ``rsqrtf``; an intermediate product overflows or underflows only where the power itself
does, but ``1 / (x * x)``, as torch's own -2, loses precision where ``x * x`` is subnormal.

Only floats and doubles are lowered: integer ``pow`` keeps the prelude's ``int_pow_``. An
exponent known only at run time (a scalar input) is rendered as ``pow``, as nvFuser does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from fusecli.codegen.render import CClass, c_class
from fusecli.ir.dtype import DataType


class CForms(NamedTuple):
    """The C spellings a lowering needs in one compute type."""

    one: str  # the literal 1: ``1.0f`` or ``1.0``
    zero: str
    f: str  # the math function suffix: ``"f"`` for floats (``sqrtf``), ``""`` for doubles


# exponent -> the power of the C name ``x``
Lowering = Callable[[str, CForms], str]

LOWERED_POWERS: dict[float, Lowering] = {
    0.0: lambda x, c: c.one,  # pow(NaN, 0) is 1 too
    1.0: lambda x, c: x,
    2.0: lambda x, c: f"({x} * {x})",
    3.0: lambda x, c: f"({x} * {x} * {x})",
    4.0: lambda x, c: f"(({x} * {x}) * ({x} * {x}))",
    -1.0: lambda x, c: f"({c.one} / {x})",
    -2.0: lambda x, c: f"({c.one} / ({x} * {x}))",
    # + 0 turns sqrt(-0) = -0 into pow's +0 (no fast math: the compiler keeps it)
    0.5: lambda x, c: f"(isinf({x}) ? fabs{c.f}({x}) : sqrt{c.f}({x}) + {c.zero})",
    -0.5: lambda x, c: f"rsqrt{c.f}(({x} == {c.zero} || isinf({x})) ? fabs{c.f}({x}) : {x})",
}

_FORMS = {CClass.FLOAT: CForms("1.0f", "0.0f", "f"), CClass.DOUBLE: CForms("1.0", "0.0", "")}


def lowered_power(base: str, exponent: object, dtype: DataType) -> str | None:
    """The C expression of ``base ** exponent`` computed in ``dtype`` without ``pow``, or
    None where it keeps ``pow``: an exponent not constant (None), not in
    ``LOWERED_POWERS``, or an integer or boolean ``dtype``."""
    form = _FORMS.get(c_class(dtype))
    if form is None or isinstance(exponent, bool) or not isinstance(exponent, int | float):
        return None
    lowering = LOWERED_POWERS.get(float(exponent))
    if lowering is None:
        return None
    return lowering(base, form)
