"""A kernel's step in a compiled warm run (``runtime.warm``): one call of ``Launch.plain``
where every parameter is a tensor, a workspace, a scalar the signature decides, a scalar
input read anew each call (``cache.value_free_scalars``: a dropout's Philox seed and offset, a
scale) or a 0-dim CPU tensor among the segment's inputs (its value read on the host each call),
else the launch's own call on the run's environment (a value computed from tensor data).

Scalars read anew are the compiled run's locals, bound at its start; a plain launch takes them
after the segment's tensors and writes them into their parameter slots: a random op's seed and
offset as the kernel's 64-bit unsigned values, any other packed as its register type.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from fusecli.codegen import ArgKind
from fusecli.ir import dtype as dt
from fusecli.ir.attrs import random_seed
from fusecli.ir.nodes import Scalar
from fusecli.ir.optype import OpType
from fusecli.runtime.context import MissingValueError, value_of
from fusecli.runtime.launch import nbytes_of, philox_word
from fusecli.runtime.spares import SPARES

_RNG = (ArgKind.RNG_SEED, ArgKind.RNG_OFFSET)


def kernel_step(program: Any, segment: Any, launch: Any, executor: Any) -> Any:
    """The planned launch, given the segment's inputs; its outputs become locals. Returns
    the plain launch it calls, or None where it calls the launch's own call."""
    tensors = [f"v{value.uid}" for value in segment.inputs]
    outputs = [uid for _, uid, *_ in launch.outputs]
    per_call: dict[int, tuple[int, str]] = {}  # slot -> (argument index, what it passes)
    positions = {value.uid: number for number, value in enumerate(segment.inputs)}
    for slot, param, _ in launch.others:
        if param.kind is ArgKind.HOST_SCALAR and param.value.uid in positions:
            per_call[slot] = (positions[param.value.uid], "tensor")  # a segment input's value
            continue
        uid = per_call_source(param, program.dynamic, segment)
        if uid is not None:
            per_call[slot] = (len(tensors), "random" if param.kind in _RNG else "number")
            tensors.append(f"v{uid}")
    plain = launch.plain(executor, fixed_numbers(program, launch), per_call)
    if plain is not None:
        program.lines.append(f"{', '.join(f'v{uid}' for uid in outputs)}, = "
                             f"{program.name('P', plain)}({', '.join(tensors)})")
        if program.with_env:
            program.lines.extend(f"env[{uid}] = v{uid}" for uid in outputs)
        return plain
    given = ", ".join(f"v{value.uid}" for value in segment.inputs)
    call = (f"{program.name('L', launch)}({program.name('S', segment)}, [{given}], "
            f"{'env' if program.with_env else 'BASE'}, ctx, {program.name('X', executor)})")
    if len(outputs) == 1:
        program.assign(outputs[0], f"{call}[{outputs[0]}]")
        return None
    program.lines.append(f"out = {call}")
    for uid in outputs:
        program.assign(uid, f"out[{uid}]")
    return None


def allocate_ahead(program: Any, plains: list[Any], last: tuple[Any, Any] | None,
                   env: dict) -> None:
    """After the run's last launch, each plain launch's ``ahead()``: the next call's buffers,
    made while the device runs this call's kernels, where the last kernel moves enough bytes
    to hide them (``Spares.hides``; ``env``: the first call's tensors). ``last``: (plain
    launch, segment) where the run ends with a plain launch; None where it ends otherwise
    (work after the launch would wait on the allocations)."""
    if last is None:
        return
    plain, segment = last
    moved = plain.nbytes + sum(
        nbytes_of(value.shape, value.stride(), value.dtype)
        for value in (env.get(v.uid) for v in segment.inputs) if isinstance(value, Tensor))
    chosen = [p for p in plains if SPARES.takes(p.nbytes)]
    if chosen and SPARES.hides(moved, sum(p.buffers for p in chosen)):
        program.lines.extend(f"{program.name('Q', p.ahead)}()" for p in chosen)


def source(param: Any) -> Any:
    """The scalar a scalar parameter or a random op's seed or offset passes as it is; None for
    any other parameter (and for a random op seeded by the execution)."""
    if param.kind is ArgKind.SCALAR:
        return param.value
    if param.kind in _RNG and param.expr is not None:
        given = random_seed(param.expr, param.expr.inputs)
        return None if given is None else given[0 if param.kind is ArgKind.RNG_SEED else 1]
    return None


def per_call_source(param: Any, dynamic: set[int], segment: Any) -> int | None:
    """The uid of the scalar input read anew each call that ``param`` passes, as it is or
    cast to the float or double the kernel computes in (``scale`` given as a Double to a
    float kernel: the packing converts as the cast does); else None."""
    value = source(param)
    if not isinstance(value, Scalar):
        return None
    if value.uid in dynamic:
        return value.uid
    cast = segment.candidate.definition(value) if param.kind is ArgKind.SCALAR else None
    if (cast is not None and cast.op is OpType.cast and param.ctype in ("float", "double")
            and isinstance(cast.inputs[0], Scalar) and cast.inputs[0].uid in dynamic
            and dt.is_floating(cast.inputs[0].dtype)):
        return cast.inputs[0].uid
    return None


def kernel_reads_env(segment: Any, launch: Any, fixed: set[int], dynamic: set[int]) -> bool:
    """Whether the launch's parameters read values the run does not hold as locals."""
    inputs = {value.uid for value in segment.inputs}
    for _, param, _ in launch.others:
        if (param.kind is ArgKind.WORKSPACE
                or (param.kind is ArgKind.HOST_SCALAR and param.value.uid in inputs)
                or per_call_source(param, dynamic, segment) is not None):  # uid 0 is one too
            continue
        value = source(param)
        if not isinstance(value, Scalar) or not (value.uid in fixed or value.is_constant):
            return True
    return False


def fixed_numbers(program: Any, launch: Any) -> dict[int, object]:
    """The value of each scalar parameter of ``launch`` that the signature decides (a size,
    a constant, a scalar input; a random op's seed or offset given so), by slot: a plain
    launch writes them as they are."""
    numbers = {}
    for slot, param, _ in launch.others:
        value = source(param)
        if isinstance(value, Scalar) and (value.uid in program.fixed or value.is_constant):
            try:
                number = value_of(value, program.names["BASE"])
            except MissingValueError:
                continue
            numbers[slot] = philox_word(number) if param.kind in _RNG else number
    return numbers
