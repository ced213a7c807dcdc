"""The warm path of ``fd.execute``: a run compiled per input signature, replayed without checks.

nvFuser's FusionExecutorCache keeps, per input signature, a runtime whose warm call binds the
new pointers and launches its kernels. This is fusecli's: the first call of a signature runs as
every run does (segmentation from the plan cache, ``SegmentRunner``, fallbacks, checks) and
records what it did, a ``Trace`` of steps; a ``WarmRun`` built from that trace replays it for
every later call of the signature:

- a generated kernel's step is its planned ``Launch`` (pointers written into the parameter
  buffer, outputs and workspaces allocated, the scalars the signature decides written as the
  first call had them, cuLaunchKernel on torch's current stream);
- an ATen step calls the op's torch function with the operands the first call found: tensors
  from the environment, every other operand (constants, scalar inputs, sizes) as it was then;
- scalar exprs the signature decides (sizes, arithmetic on scalar inputs and constants) are not
  steps: their values are the first call's;
- the outputs are the environment's values, where the first call returned them as they were
  (no alias written, no layout changed, none copied); any other fusion collects its outputs
  as the first call did, in the same buffers (``runtime.outputs``).

The key (``runtime.warm_keys``) is exact for what the replay assumes: the rule profile, the
executor, the device asked for, ``FUSECLI_INJECT_FAULT`` as it reads now, and per input its
dtype, shape, strides, device, conjugate and negative bits and 16-byte alignment (kernels are
generated for it), or a scalar input's type and value. What a torch call returns and whether
it aliases its operand follow from those, so a replay computes what a full run would. A fusion
with injected faults, a failed segmentation, or a step that cannot be replayed (a kernel
without a planned launch) is not compiled: each call takes the full run. Nothing of a call is
kept: the environment is the call's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr, Fusion, Scalar, TensorView, Vector
from fusecli.ir.optype import OpKind
from fusecli.runtime import aten_elementwise as aten
from fusecli.runtime import warm_numbers
from fusecli.runtime.bind import bind_scalar, unchanged_type
from fusecli.runtime.context import python_scalar, value_of
from fusecli.runtime.warm_kernels import allocate_ahead, kernel_reads_env, kernel_step
from fusecli.runtime.warm_views import direct_view, entry_of

CAPACITY = 32  # compiled signatures kept per fusion
Tensor = torch.Tensor

class Trace:
    """What one full run did, in order: kernel launches and ATen exprs."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []
        self.refusal: str | None = None  # why the run cannot be replayed, once a step cannot

    def kernel(self, segment: Any, launch: Any, executor: Any) -> None:
        if launch is None:
            self.refuse(f"segment {segment.id} ran a kernel without a planned launch")
        else:
            self.steps.append(("kernel", segment, launch, executor))

    def aten(self, exprs: Sequence[Expr], executor: Any) -> None:
        self.steps.extend(("aten", expr, executor) for expr in exprs)

    def refuse(self, reason: str) -> None:
        if self.refusal is None:
            self.refusal = reason


class WarmRun:
    """One signature's compiled run: ``__call__(flat)`` returns the outputs.

    The run is Python source generated from the trace (``source`` shows it): each tensor a
    local variable, each step one call, so that a replay costs the calls themselves."""

    __slots__ = ("source", "__call__")

    def __init__(self, source: str, namespace: dict) -> None:
        self.source = source
        exec(compile(source, "<fusecli warm run>", "exec"), namespace)  # noqa: S102
        self.__call__ = namespace["run"]


class _Program:
    """The generated run's source lines and the objects they name."""

    def __init__(self, base: dict, fixed: set[int], dynamic: set[int],
                 numbers: set[int]) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"BASE": base}
        self.fixed = fixed
        self.dynamic = set(dynamic)  # scalar inputs read anew each call, and numbers of theirs
        self.numbers = numbers  # scalars computed from those: ``warm_numbers.numbers``
        self.with_env = False  # keep every value in ``env`` too, for steps that read it

    def name(self, prefix: str, value: Any) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def assign(self, uid: int, expression: str, cast: Any = None) -> None:
        self.lines.append(f"v{uid} = {expression}")
        if cast is not None:
            dtype = self.name("C", cast)
            self.lines.append(f"if v{uid}.dtype is not {dtype}: v{uid} = v{uid}.to({dtype})")
        if self.with_env:
            self.lines.append(f"env[{uid}] = v{uid}")

    def operand(self, uid: int | None, value: Any) -> str:
        return f"v{uid}" if uid is not None else self.name("K", value)


def compile_run(fusion: Fusion, trace: Trace, env: dict, bindings: Any, ctx: Any,
                results: list[Any], allocations: Any = None,
                free: frozenset[int] = frozenset()) -> WarmRun | None:
    """The replay of the full run that ``trace`` recorded (``env``: its environment at the
    end, ``results``: what it returned, ``allocations``: the buffers it returned them in), or
    None where it cannot be replayed. The scalar inputs at positions in ``free`` are read
    from each call's inputs, as tensors are."""
    if trace.refusal is not None or ctx.faults:
        return None
    dynamic = {fusion.inputs[position].uid for position in free}
    fixed = _signature_scalars(fusion, dynamic)
    base = {uid: value for uid, value in bindings.values.items()
            if not isinstance(value, Tensor)}
    base.update((uid, env[uid]) for uid in fixed if uid in env)
    steps = [step for step in trace.steps
             if step[0] == "kernel" or not all(out.uid in fixed for out in step[1].outputs)]
    numbers = warm_numbers.numbers(steps, fixed, dynamic)
    program = _Program(base, fixed, dynamic, numbers)
    program.names.update(ctx=ctx, BIND=bind_scalar, PY=python_scalar,
                         FLOAT32=warm_numbers.to_float32,
                         INT64=warm_numbers.to_int64)
    program.with_env = any(_reads_env(step, fixed, dynamic | numbers, numbers) for step in steps)
    read = [v for v in fusion.inputs if isinstance(v, TensorView) or v.uid in dynamic]
    read_uids = {v.uid for v in read}
    names = [f"v{v.uid}" if v.uid in read_uids else "_" for v in fusion.inputs]
    program.lines.append(f"({', '.join(names)},) = flat" if names else "")
    for position in sorted(free):  # checked and converted as binding does (an int for a Double)
        scalar = fusion.inputs[position]
        value, local = program.name("D", scalar), f"v{scalar.uid}"
        bound = f"BIND({position}, {value}, {local})"
        kept = unchanged_type(scalar.dtype)
        if kept is not None:  # a value binding returns as it is: no call
            bound = f"{local} if type({local}) is {kept} else {bound}"
        program.lines.append(f"{local} = {bound}")
    if program.with_env:
        program.lines.append("env = BASE.copy()")
        program.lines.extend(f"env[{v.uid}] = v{v.uid}" for v in read)
    held = set(read_uids)  # the tensors the run holds as locals
    plains, last = [], None  # the plain launches; the last step's, where it is one
    for step in steps:
        if step[0] == "kernel":
            plain = kernel_step(program, *step[1:])
            held.update(uid for _, uid, *_ in step[2].outputs)
            plains += [plain] if plain is not None else []
            last = (plain, step[1]) if plain is not None else None
        else:
            _aten_step(program, step[1], step[2], env)
            held.update(out.uid for out in step[1].outputs if isinstance(out, TensorView))
            last = None
    allocate_ahead(program, plains, last, env)
    _collect(program, fusion, env, bindings, ctx, results, allocations, held)
    body = "\n    ".join(line for line in program.lines if line)
    return WarmRun(f"def run(flat):\n    {body}\n", program.names)


def _reads_env(step: tuple, fixed: set[int], dynamic: set[int], numbers: set[int]) -> bool:
    """Whether a step reads values the generated run does not hold as locals: scalars
    computed from tensor data, or a kernel parameter neither fixed nor read anew."""
    if step[0] == "aten":
        return step[1].outputs[0].uid not in numbers and _runs_on_env(step[1], fixed)
    return kernel_reads_env(step[1], step[2], fixed, dynamic)


def _runs_on_env(expr: Expr, fixed: set[int]) -> bool:
    """Whether an ATen expr is replayed as ATen runs it, on the environment: it computes
    scalars, or reads one the signature does not decide (a value out of a tensor's data)."""
    return any(not isinstance(out, TensorView) for out in expr.outputs) or not all(
        isinstance(value, TensorView) or _fixed(value, fixed, False) for value in expr.inputs)


def _signature_scalars(fusion: Fusion, dynamic: set[int] = frozenset()) -> set[int]:
    """Scalar values the input signature decides: scalar inputs (but the ``dynamic`` ones,
    new every call), sizes, and scalar exprs over those (a value read out of a tensor's data
    is not one)."""
    fixed = {v.uid for v in fusion.inputs if isinstance(v, Scalar) and v.uid not in dynamic}
    for expr in fusion.exprs:
        if any(isinstance(out, TensorView) for out in expr.outputs):
            continue
        reads_sizes = expr.op.kind is OpKind.SCALAR
        if all(_fixed(value, fixed, reads_sizes) for value in expr.inputs):
            fixed.update(out.uid for out in expr.outputs)
    return fixed


def _fixed(value: Any, fixed: set[int], reads_sizes: bool) -> bool:
    if isinstance(value, Vector):
        return all(_fixed(element, fixed, reads_sizes) for element in value.elements)
    if isinstance(value, TensorView):
        return reads_sizes
    return value.uid in fixed or (isinstance(value, Scalar) and value.is_constant)


def _aten_step(program: _Program, expr: Expr, executor: Any, env: dict) -> None:
    """An expr as its ATen entry on the tensor operands, the other operands as the first call
    had them; an elementwise op as its torch function itself, its scalar operands already the
    0-dim tensors the entry would make of them. An expr with scalar outputs runs as ATen runs
    it, on the environment."""
    if expr.outputs[0].uid in program.numbers:  # a number of each call's scalars: a local
        (out,) = expr.outputs
        operands = [f"v{v.uid}" if v.uid in program.dynamic
                    else program.name("K", value_of(v, program.names["BASE"]))
                    for v in expr.inputs]
        python = warm_numbers.arithmetic(expr, operands)
        program.lines.append(f"v{out.uid} = {python}" if python is not None else (
            f"v{out.uid} = PY({program.name('A', executor.ops[expr.op])}("
            f"{program.name('E', expr)}, [{', '.join(operands)}], ctx)[0], "
            f"{program.name('T', out.dtype)})"))
        if program.with_env:
            program.lines.append(f"env[{out.uid}] = v{out.uid}")
        program.dynamic.add(out.uid)  # a kernel's parameter reads it as a scalar read anew
        return
    if _runs_on_env(expr, program.fixed):
        program.lines.append(
            f"{program.name('X', executor)}.run_expr({program.name('E', expr)}, env, ctx)")
        program.lines.extend(f"v{out.uid} = env[{out.uid}]" for out in expr.outputs
                             if isinstance(out, TensorView))  # later steps read locals
        return
    entry = executor.ops[expr.op]
    elementwise = entry is aten.ELEMENTWISE_OPS.get(expr.op)
    compute = aten.ELEMENTWISE_COMPUTE.get(expr.op) if elementwise else None
    operands = [(value.uid, None) if isinstance(value, TensorView)
                else (None, value_of(value, env)) for value in expr.inputs]
    casts = [dt.to_torch(out.dtype) for out in expr.outputs]
    if entry is entry_of(expr.op) and operands[0][0] is not None and len(casts) == 1:
        view = direct_view(expr, [env[uid] if uid is not None else value
                                  for uid, value in operands], env.get(expr.outputs[0].uid))
        if view is not None:  # the method making the same view (runtime.warm_views)
            tensor, argument = f"v{operands[0][0]}", program.name("K", view[1])
            dtype = env[operands[0][0]].dtype  # a view's: no cast where it is the one asked
            made = (tensor if view[0] == "same" else f"{tensor}[{argument}]"
                    if view[0] == "index" else f"{tensor}.{view[0]}({argument})")
            program.assign(expr.outputs[0].uid, made, casts[0] if casts[0] is not dtype else None)
            return
    if entry is aten.aten_cast and operands[0][0] is not None:  # a tensor's cast: Tensor.to itself
        program.assign(expr.outputs[0].uid, f"v{operands[0][0]}.to({program.name('C', casts[0])})")
        return
    device = aten.operand_device([env[uid] for uid, _ in operands if uid is not None])
    if compute is not None and len(casts) == 1 and device is not None:
        arguments = [
            program.operand(uid, value if uid is not None or isinstance(value, Tensor)
                            else torch.full((), value, dtype=dt.to_torch(operand.dtype),
                                            device=device))
            for (uid, value), operand in zip(operands, expr.inputs)
        ]
        program.assign(expr.outputs[0].uid,
                       f"{program.name('F', compute)}({', '.join(arguments)})", casts[0])
        return
    arguments = [program.operand(uid, value) for uid, value in operands]
    call = (f"{program.name('A', entry)}({program.name('E', expr)}, "
            f"[{', '.join(arguments)}], ctx)")
    if len(casts) == 1:
        program.assign(expr.outputs[0].uid, f"{call}[0]", casts[0])
        return
    program.lines.append(f"out = {call}")
    for number, (out, cast) in enumerate(zip(expr.outputs, casts)):
        program.assign(out.uid, f"out[{number}]", cast)


def _collect(program: _Program, fusion: Fusion, env: dict, bindings: Any, ctx: Any,
             results: list[Any], allocations: Any, held: set[int]) -> None:
    """Return the outputs' locals where the full run returned its values as they were (no
    alias written, no layout changed, none copied; an expanded output re-viewed as the same
    view counts as it was); else make each as the full run made it, its decisions taken once
    (``outputs.collection_plan``: a layout, a copy, an input returned); else collect as the
    full run does, in the same buffers (views of the same tensors). ``held``: the uids the
    run holds as locals."""
    visible = [o for o in fusion.outputs if o.alias_input is None]
    plain = len(visible) == len(fusion.outputs) and len(results) == len(visible) and all(
        isinstance(o.value, TensorView) and o.value.uid in env
        and _same_view(env[o.value.uid], result)
        for o, result in zip(visible, results)
    ) and len({id(env[o.value.uid]) for o in visible}) == len(
        {id(result) for result in results})
    if plain:
        program.lines.append(f"return [{', '.join(f'v{o.value.uid}' for o in visible)}]")
        return
    made = _planned_collection(program, fusion, env, bindings, ctx, results, allocations, held)
    if made is not None:
        program.lines.extend(made)
        return
    from fusecli.runtime.bind import Bindings
    from fusecli.runtime.outputs import collect_outputs

    if not program.with_env:
        kept = {v.uid for v in fusion.inputs if isinstance(v, TensorView)}
        kept |= {o.value.uid for o in fusion.outputs if isinstance(o.value, TensorView)}
        kept |= allocations.roots() if allocations is not None else frozenset()
        program.lines.append(f"env = {{**BASE, {', '.join(f'{u}: v{u}' for u in kept)}}}")
    extents, device = bindings.extents, bindings.device  # not the first call's tensors
    bound = program.name("B", lambda env: Bindings(env, extents, device))
    program.lines.append(
        f"return {program.name('O', collect_outputs)}({program.name('U', fusion)}, env, "
        f"{bound}(env), ctx, {program.name('M', allocations)})")


def _planned_collection(program: _Program, fusion: Fusion, env: dict, bindings: Any,
                        ctx: Any, results: list[Any], allocations: Any, held: set[int],
                        ) -> list[str] | None:
    """The lines that make the outputs by ``collection_plan``'s recipes, or None where there
    is no plan or where its recipes, applied to the first call's values, do not give what
    that call returned (same dtype, shape, strides and offset; the same tensor where it
    returned one of its values, a tensor of its own where it copied)."""
    from fusecli.runtime.outputs import collection_plan, materializer

    recipes = collection_plan(fusion, env, bindings, ctx, allocations)
    if recipes is None or len(recipes) != len(results):
        return None
    lines, names, made = [], [], {}
    for output, recipe, result in zip(fusion.outputs, recipes, results):
        kind, uid = recipe[0], recipe[1]
        if uid not in held or not isinstance(env.get(uid), Tensor):
            return None
        if kind != "materialize":
            if env[uid] is not result:
                return None
            names.append(f"v{uid}")
            continue
        if id(result) in made:  # the same tensor handed out twice
            names.append(made[id(result)])
            continue
        make = materializer(output.value, env[uid], recipe[2], recipe[3])
        again = make(env[uid])
        if not _same_layout(again, result) or (
                _same_view(again, env[uid]) != _same_view(result, env[uid])):
            return None
        name = f"r{len(made)}"
        lines.append(f"{name} = {program.name('Z', make)}(v{uid})")
        made[id(result)] = name
        names.append(name)
    lines.append(f"return [{', '.join(names)}]")
    return lines


def _same_layout(a: Any, b: Any) -> bool:
    return (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype == b.dtype
            and a.device == b.device and a.shape == b.shape and a.stride() == b.stride())


def _same_view(value: Any, result: Any) -> bool:
    """Whether the full run returned ``value`` itself, or a view of it that is the same view
    (an expanded output narrowed and expanded again): same memory, dtype, shape and strides."""
    if value is result:
        return True
    return (isinstance(value, Tensor) and isinstance(result, Tensor)
            and value.dtype == result.dtype and value.device == result.device
            and value.shape == result.shape and value.stride() == result.stride()
            and value.storage_offset() == result.storage_offset()
            and value.untyped_storage().data_ptr() == result.untyped_storage().data_ptr())
