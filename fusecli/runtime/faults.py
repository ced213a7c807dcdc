"""Fault injection: ``FUSECLI_INJECT_FAULT=op[,op...]`` makes executors compute those ops wrongly.

It exists to test ``fusecli bisect`` and the comparison: with ``FUSECLI_INJECT_FAULT=exp`` every
executor except the reference corrupts the outputs of every ``exp`` expr, far beyond any
tolerance, so the run must report a mismatch and bisect must localize it to an ``exp``.

The variable is read at each execution, not at import, so tests and the bisect oracle can set it
per run. Library users get one ``FaultInjectionWarning`` per process; the CLI prints its own
notice on stderr.
"""

from __future__ import annotations

import functools
import os
import warnings

from fusecli.errors import InputError
from fusecli.ir.optype import OpType

ENV_VAR = "FUSECLI_INJECT_FAULT"

# Far beyond any tolerance: bfloat16's rtol is 1.6e-2 and reductions grow it only by log2(n).
_FLOAT_OFFSET = 1000.0
_INT_OFFSET = 1000


class FaultInjectionWarning(UserWarning):
    """Results are deliberately wrong: FUSECLI_INJECT_FAULT is set."""


_warned = False


def injected_faults() -> frozenset[str]:
    """The op names in ``FUSECLI_INJECT_FAULT`` now (empty when unset); warns once when set.

    Raises InputError for a name that is not an op (``fd.ops`` spelling), listing the choices.
    """
    faults = _parse(os.environ.get(ENV_VAR, ""))
    if faults:
        _warn_once(faults)
    return faults


@functools.lru_cache(maxsize=16)
def _parse(text: str) -> frozenset[str]:
    """The op names of one value of the variable (read each call, parsed once per value)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    valid = {op.value for op in OpType}
    for name in names:
        if name not in valid:
            raise InputError(
                f"{ENV_VAR}: unknown op {name!r}; choose among: {', '.join(sorted(valid))}"
            )
    return frozenset(names)


def _warn_once(faults: frozenset[str]) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(
        f"{ENV_VAR} is set: executors deliberately compute {', '.join(sorted(faults))} wrongly",
        FaultInjectionWarning,
        stacklevel=3,
    )


def corrupt(value: object) -> object:
    """A wrong version of ``value`` (a tensor or a Python number), far from the right one.

    Floats: ``x + 1000 * (1 + |x|)``, and non-finite values become 0 (NaN and inf would survive
    the offset); integers: ``x + 1000``; booleans: ``not x``.
    """
    import torch

    if isinstance(value, torch.Tensor):
        return _corrupt_tensor(value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + _INT_OFFSET
    if isinstance(value, float | complex):
        if value != value or abs(value) == float("inf"):
            return 0.0
        return value + _FLOAT_OFFSET * (1 + abs(value))
    raise TypeError(f"cannot corrupt a {type(value).__name__}")


def _corrupt_tensor(tensor):
    import torch

    if tensor.dtype is torch.bool:
        return torch.logical_not(tensor)
    if tensor.is_floating_point() or tensor.is_complex():
        # Reduced floats (float8 in particular) lack arithmetic: compute wide, cast back.
        wide = torch.complex128 if tensor.is_complex() else torch.float64
        values = tensor.to(wide)
        shifted = values + _FLOAT_OFFSET * (1 + values.abs())
        return torch.where(torch.isfinite(values), shifted, 0).to(tensor.dtype)
    return tensor + _INT_OFFSET
