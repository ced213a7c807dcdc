"""The key of a compiled warm run (``runtime.warm``): what a replay assumes of a call.

``warm_key`` is exact for what the replay assumes: the rule profile, the executor, the device
asked for, ``FUSECLI_INJECT_FAULT`` as it reads now, and per input its dtype, shape, strides,
device, 16-byte alignment and negative and conjugate bits (a tensor: kernels are generated for
them), or a scalar input's type and value (its type alone where the value is read anew each
call: ``cache.value_free_scalars``).

Computing it is most of a warm call's own time, so ``key_function`` writes, once per fusion,
a function that computes the same tuple for the usual call: one value per input, a tensor
(of type ``torch.Tensor`` itself) where the fusion declares one, a Python number where it
declares a scalar. Unrolled, it makes one tuple instead of growing one per input. Any other
call (a count that differs, a subclass of Tensor, a 0-dim tensor for a scalar, nested lists)
takes ``warm_key`` itself, so both give one key for one call. A CUDA tensor's device is its
index (an int: made, hashed and compared in a third of the time a ``torch.device`` takes, and
never equal to the ``torch.device`` any other tensor's key holds).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from fusecli.ir.nodes import Fusion, TensorView
from fusecli.runtime.faults import ENV_VAR

Tensor = torch.Tensor
KeyFunction = Callable[[Sequence[Any], str, str, Any], "tuple | None"]

_environ = getattr(os.environ, "_data", None)
_ENCODED = os.environ.encodekey(ENV_VAR) if hasattr(os.environ, "encodekey") else ENV_VAR
_NUMBERS = (bool, int, float, complex)  # scalars whose key is their type (and repr)


# fault_setting() inlined into a written key (os.environ's store is one dict for the process)
_FAULT = "ENVIRON.get(ENCODED)" if _environ is not None else "FAULT()"


def fault_setting() -> object:
    """``FUSECLI_INJECT_FAULT`` as it reads now (os.environ's own store: a tenth the time of
    ``os.environ.get``, which encodes the name on every call)."""
    if _environ is not None:
        return _environ.get(_ENCODED)
    return os.environ.get(ENV_VAR)


def warm_key(flat: Sequence[Any], rules: str, executor: str, device: Any,
             free: frozenset[int] = frozenset()) -> tuple | None:
    """The key of ``flat`` (module docstring): per tensor its dtype, shape, strides, device,
    16-byte alignment and negative and conjugate bits, per scalar its type and value (its type
    alone at a position in ``free``); None where ``flat`` nests lists (flatten it first)."""
    key: tuple = (rules, executor, device, fault_setting())
    for position, value in enumerate(flat):
        if type(value) is Tensor or isinstance(value, Tensor):
            dtype = value.dtype
            key += (dtype, value.shape, value.stride(),
                    value.get_device() if value.is_cuda else value.device,
                    value.data_ptr() & 15, value.is_neg(), dtype.is_complex and value.is_conj())
        elif isinstance(value, (list, tuple)):
            return None
        elif position in free:
            key += (type(value),)
        else:
            key += (type(value), repr(value))
    return key


def key_function(fusion: Fusion, free: frozenset[int]) -> KeyFunction:
    """``warm_key`` for ``fusion``'s calls, written for its inputs (module docstring); made
    once per fusion and set of positions read anew."""
    memo = fusion.memo.setdefault("warm_key_function", {})
    function = memo.get(free)
    if function is None:
        function = memo[free] = _written(fusion, free)
    return function


def _written(fusion: Fusion, free: frozenset[int]) -> KeyFunction:
    lines, key = _prologue("key", fusion, free,
                           "        return GENERIC(flat, rules, executor, device, FREE)")
    lines.append(f"    return {key}")
    return _compiled(lines, "key", {"GENERIC": warm_key, "FREE": free})


def entry_function(fusion: Fusion, free: frozenset[int], runs: Mapping[tuple, Any],
                   general: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """A warm call of ``fusion`` as one function ``(flat, rules, executor, device)``: the
    written key, the compiled run it finds in ``runs``, the run; any call the written key does
    not take, a key without a compiled run, or a run that raises goes to ``general`` (the
    last with ``broken=True``), which takes it in full. One frame instead of the key's and
    the lookup's own: a warm call's host time is what the device waits for."""
    general_call = "        return GENERAL(flat, rules, executor, device)"
    lines, key = _prologue("call", fusion, free, general_call)
    lines += [f"    run = RUNS.get({key})",
              "    if run is None:", general_call,
              "    try:",
              "        return run(flat)",
              "    except Exception:  # the full run reports it, naming the segment and op",
              "        return GENERAL(flat, rules, executor, device, True)"]
    return _compiled(lines, "call", {"RUNS": runs, "GENERAL": general})


def _prologue(name: str, fusion: Fusion, free: frozenset[int],
              otherwise: str) -> tuple[list[str], str]:
    """The lines of a written function ``name(flat, rules, executor, device)`` up to its key:
    ``otherwise`` (a return) for a call it does not take; and the key's tuple expression."""
    checks, parts, unpacked = _key_source(fusion, free)
    lines = [f"def {name}(flat, rules, executor, device):",
             f"    if len(flat) != {len(fusion.inputs)}:", otherwise, f"    {unpacked}"]
    if checks:
        lines += [f"    if {' or '.join(checks)}:", otherwise]
    return lines, f"({', '.join(parts)},)"


def _key_source(fusion: Fusion, free: frozenset[int]) -> tuple[list[str], list[str], str]:
    """The written key's type checks, its parts and the line unpacking ``flat``."""
    names = [f"a{position}" for position in range(len(fusion.inputs))]
    checks, parts = [], ["rules", "executor", "device", _FAULT]
    for position, (name, value) in enumerate(zip(names, fusion.inputs)):
        if isinstance(value, TensorView):
            checks.append(f"type({name}) is not TENSOR")
            parts += [f"{name}.dtype", f"{name}.shape", f"{name}.stride()",
                      f"({name}.get_device() if {name}.is_cuda else {name}.device)",
                      f"{name}.data_ptr() & 15", f"{name}.is_neg()",
                      f"{name}.dtype.is_complex and {name}.is_conj()"]
        else:
            checks.append(f"type({name}) not in NUMBERS")
            parts += [f"type({name})"] + ([] if position in free else [f"repr({name})"])
    unpacked = f"({', '.join(names)},) = flat" if names else "pass"
    return checks, parts, unpacked


def _compiled(lines: list[str], name: str, names: dict[str, Any]) -> Any:
    namespace = {"TENSOR": Tensor, "NUMBERS": frozenset(_NUMBERS), "FAULT": fault_setting,
                 "ENVIRON": _environ, "ENCODED": _ENCODED, **names}
    exec(compile("\n".join(lines) + "\n", f"<fusecli warm {name}>", "exec"),  # noqa: S102
         namespace)
    return namespace[name]
