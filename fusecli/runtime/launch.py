"""Launching a generated kernel: its arguments, and the planned warm launch.

``kernel_arguments`` gathers a kernel's parameter values (input tensors, packed scalars, random
ops' seeds and offsets: ``rng_argument``) and allocates its outputs with torch. ``Launch`` is one
kernel's warm launch, planned once per (segment, input layout): a parameter buffer the driver
reads, filled per call, and cuLaunchKernel on torch's current stream.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fusecli.codegen import ArgKind, Kernel, KernelArg
from fusecli.errors import PipelineError
from fusecli.ir import dtype as dt
from fusecli.ir.attrs import random_seed
from fusecli.runtime import plain_launch
from fusecli.runtime.context import ExecutionContext, value_of

if TYPE_CHECKING:
    from fusecli.segment.result import Segment

# How a kernel parameter of each register type is passed: CuPy copies exactly the size of the
# Python or numpy value, so single floats must be float32 (a Python float is a double).
_PACK: dict[str, Any] = {
    "float": np.float32,
    "double": float,
    "long long": int,
    "int": np.int32,
    "unsigned long long": np.uint64,
    "bool": np.bool_,
}


class KernelLaunchError(PipelineError):
    """A generated kernel failed to launch or to run (exit code 3)."""


def launch_error(segment: Segment, kernel: Kernel, error: Exception) -> KernelLaunchError:
    """The error naming the segment and kernel whose launch raised ``error``."""
    return KernelLaunchError(
        f"segment {segment.id} ({segment.scheduler}): kernel {kernel.name} failed: "
        f"{type(error).__name__}: {error}"
    )


@dataclass(slots=True)
class Prepared:
    kernel: Kernel
    function: Any
    launch: Launch | None = None  # the warm path; None where _launch is replaced (tests)


# ctypes type of each scalar parameter's register type, for writing it into a launch buffer
_SLOT_TYPES: dict[str, Any] = {
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "long long": ctypes.c_longlong,
    "int": ctypes.c_int32,
    "unsigned long long": ctypes.c_uint64,
    "bool": ctypes.c_bool,
}


class Launch:
    """One kernel's warm launch, planned once per (segment, input layout).

    The kernel's parameters live in one buffer of 8-byte slots, with the array of their
    addresses that cuLaunchKernel reads (it copies each parameter's size from its slot). Per
    launch: input pointers and scalars are written into their slots, outputs are allocated and
    theirs written too, and the driver is called on torch's current stream. A lock keeps two
    threads from filling one buffer at once.
    """

    __slots__ = ("kernel", "device", "index", "function", "address", "grid", "block", "shared",
                 "slots", "pointers", "params", "inputs", "outputs", "others", "lock", "direct",
                 "like")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.direct: str | None = None  # why the driver's launch failed, once it has
        self.like: dict[torch.dtype, int] = {}  # dtype -> position of an input (plan's doc)

    @classmethod
    def plan(cls, segment: Segment, prepared: Prepared, device: torch.device,
             tensors: Sequence[Any] = ()) -> Launch | None:
        """The plan, or None where the function is not a CuPy function (no driver pointer).
        ``tensors``: the segment's inputs of the call it is planned for; ``like`` keeps, per
        dtype, the position of one on ``device`` (the key of a warm run fixes each input's
        dtype and device), whose ``new_empty_strided`` makes an output of that dtype in less
        host time than ``torch.empty_strided`` with its keywords."""
        kernel = prepared.kernel
        address = getattr(prepared.function, "ptr", None)
        if not isinstance(address, int):
            return None
        positions = {value.uid: number for number, value in enumerate(segment.inputs)}
        launch = cls()
        launch.kernel = kernel
        launch.device = device
        launch.index = device.index if device.index is not None else torch.cuda.current_device()
        launch.function = prepared.function
        launch.address = address
        launch.grid, launch.block, launch.shared = kernel.grid, kernel.block, kernel.shared_mem
        count = max(1, len(kernel.args))
        launch.slots = (ctypes.c_uint64 * count)()
        base = ctypes.addressof(launch.slots)
        launch.pointers = (ctypes.c_void_p * count)(*(base + 8 * n for n in range(count)))
        launch.params = ctypes.addressof(launch.pointers)
        launch.inputs, launch.outputs, launch.others = [], [], []
        for position, tensor in enumerate(tensors):
            if isinstance(tensor, torch.Tensor) and tensor.device == device:
                launch.like.setdefault(tensor.dtype, position)
        for slot, param in enumerate(kernel.args):
            if param.kind is ArgKind.INPUT:
                if param.value.uid not in positions:
                    return None
                launch.inputs.append((slot, positions[param.value.uid]))
            elif param.kind is ArgKind.OUTPUT:
                launch.outputs.append((slot, param.value.uid, param.shape,
                                       dt.to_torch(param.dtype), param.logical_shape,
                                       param.strides))
            elif param.kind is ArgKind.WORKSPACE:
                launch.others.append((slot, param, {}))  # its zeroed memory, made once
            else:
                typed = _SLOT_TYPES[param.ctype].from_buffer(launch.slots, 8 * slot)
                launch.others.append((slot, param, typed))
        return launch

    def __call__(self, segment: Segment, inputs: list[Any], env: MutableMapping[int, object],
                 ctx: ExecutionContext, executor: Any) -> dict[int, torch.Tensor]:
        device, slots = self.device, self.slots
        outputs: dict[int, torch.Tensor] = {}
        with self.lock:
            for slot, position in self.inputs:
                slots[slot] = inputs[position].data_ptr()
            for slot, uid, shape, dtype, logical, strides in self.outputs:
                tensor = empty_output(shape, strides, dtype, device)
                if executor.poison:
                    poison_tensor(tensor)
                outputs[uid] = tensor.expand(logical) if logical else tensor
                slots[slot] = tensor.data_ptr()
            held = []  # workspaces made for this call: alive until it is queued
            for slot, param, typed in self.others:
                if param.kind is ArgKind.WORKSPACE:
                    held.append(workspace(param, device, typed))
                    slots[slot] = held[-1].data_ptr()
                elif param.kind in _RNG_KINDS:
                    typed.value = rng_argument(param, env, ctx)
                else:
                    source = env[param.value.uid] if param.kind is ArgKind.HOST_SCALAR else (
                        value_of(param.value, env))
                    number = source.item() if isinstance(source, torch.Tensor) else source
                    typed.value = _PACK[param.ctype](number)
            stream = torch._C._cuda_getCurrentRawStream(self.index)
            try:
                self._enqueue(stream)
            except Exception as error:  # CuPy's CUDADriverError
                raise launch_error(segment, self.kernel, error) from error
        if executor.synchronize:
            executor._wait(segment, self.kernel, device)
        return outputs

    def plain(self, executor: Any, numbers: dict[int, object] | None = None,
              per_call: dict[int, tuple[int, str]] | None = None) -> Any:
        """The launch as one function of the segment's input tensors returning its outputs (in
        ``self.outputs`` order), on an executor that neither poisons nor waits; None otherwise.
        The warm run (``runtime.warm``) calls it. Workspaces are made once (zeroed ones, and
        others up to ``KEPT_WORKSPACE_BYTES``), larger ones per call; a scalar parameter takes
        its value from ``numbers`` (slot -> number: the caller's own, fixed for it, as a warm
        run's sizes and constants are) or, for a slot in ``per_call`` (slot -> (argument
        index, what it is: ``"number"``, ``"random"`` for a random op's seed or offset,
        ``"tensor"`` for a 0-dim CPU tensor read on the host)), from the function's argument
        at that index: a value of each call's own; a launch with any other has none. Its
        ``ahead()`` makes the next call's outputs and workspaces (``runtime.plain_launch``)."""
        if executor.poison or executor.synchronize or self.direct is not None:
            return None
        numbers, per_call = numbers or {}, per_call or {}
        called = {}  # slot -> (typed slot, argument index, packing)
        pointers: dict[int, int] = {}  # slot -> address: zeroed workspaces, made once
        fixed: dict[int, tuple[Any, object]] = {}  # slot -> (typed slot, packed number)
        fresh: list[tuple[int, int]] = []  # (slot, bytes): workspaces made per call
        for slot, param, typed in self.others:
            if param.kind is ArgKind.WORKSPACE:
                if param.zeroed or param.nbytes <= KEPT_WORKSPACE_BYTES:  # see the constant
                    pointers[slot] = workspace(param, self.device, typed, once=True).data_ptr()
                else:
                    fresh.append((slot, param.nbytes))
            elif slot in per_call:
                index, kind = per_call[slot]
                called[slot] = (typed, index, _packing(kind, param.ctype))
            elif slot in numbers and (param.kind is ArgKind.SCALAR or param.kind in _RNG_KINDS):
                number = numbers[slot]
                number = number.item() if isinstance(number, torch.Tensor) else number
                fixed[slot] = (typed, _PACK[param.ctype](number))
            else:
                return None
        return plain_launch.build(self, pointers, fixed, called, fresh)

    def _enqueue(self, stream: int) -> None:
        grid, block = self.grid, self.block
        if self.direct is None:
            try:
                cuda_driver().launchKernel(self.address, grid[0], grid[1], grid[2], block[0],
                                           block[1], block[2], self.shared, stream,
                                           self.params, 0)
                return
            except Exception as error:
                # No current CUDA context on this thread, say: CuPy's own launch makes one
                # current. A launch the kernel itself refuses fails there again, and says so.
                self.direct = f"{type(error).__name__}: {error}"
        # Each slot goes as 8 bytes, of which the driver copies the parameter's size.
        arguments = tuple(int(value) for value in self.slots)
        self.function(grid, block, arguments, shared_mem=self.shared, stream=Stream(stream))


@cache
def cuda_driver() -> Any:
    from cupy.cuda import driver

    return driver


class Stream:
    """What CuPy's launch reads from a stream: its ``ptr`` (torch's current stream here)."""

    __slots__ = ("ptr",)

    def __init__(self, pointer: int) -> None:
        self.ptr = pointer


def kernel_arguments(kernel: Kernel, env: MutableMapping[int, object], ctx: ExecutionContext,
                     device: torch.device, poison: bool = False,
                     ) -> tuple[list[Any], dict[int, torch.Tensor]]:
    """The values of ``kernel``'s parameters (tensors, packed numbers) and its new outputs,
    filled with NaN (all ones for integers) when ``poison``. An output's buffer is 1 along its
    expanded broadcast dims; the output is that buffer expanded (stride 0 there)."""
    values: list[Any] = []
    outputs: dict[int, torch.Tensor] = {}
    for param in kernel.args:
        if param.kind is ArgKind.INPUT:
            values.append(env[param.value.uid])
        elif param.kind is ArgKind.OUTPUT:
            tensor = empty_output(param.shape, param.strides, dt.to_torch(param.dtype), device)
            if poison:
                poison_tensor(tensor)
            outputs[param.value.uid] = (
                tensor.expand(param.logical_shape) if param.logical_shape else tensor)
            values.append(tensor)
        elif param.kind is ArgKind.WORKSPACE:
            values.append(workspace(param, device))
        elif param.kind in _RNG_KINDS:
            values.append(_PACK[param.ctype](rng_argument(param, env, ctx)))
        else:
            source = env[param.value.uid] if param.kind is ArgKind.HOST_SCALAR else (
                value_of(param.value, env))
            number = source.item() if isinstance(source, torch.Tensor) else source
            values.append(_PACK[param.ctype](number))
    return values, outputs


# Register types whose ctypes slot takes a Python number of its kind (a float for float and
# double, an int for long long, a bool) and stores what the numpy type above would: a float
# rounded to nearest, as float32's conversion does. A plain launch writes a scalar read anew
# into such a slot as it is (0.08 us against 0.59 through np.float32 on this project's CPU).
_AS_IS = frozenset({"float", "double", "long long", "bool"})

# A workspace the kernel writes before it reads (a grid reduction's partials) up to this size is
# made once per plain launch, as a zeroed one is: calls on one stream run one after the other,
# so the next call's kernel writes it only after the last one read it (calls on two streams at
# once would share the zeroed counters already). That is one allocation less per call, 1.5-2.5
# us of host time on the GPU machine before the launch; larger ones are made per call.
KEPT_WORKSPACE_BYTES = 4 << 20


def _packing(kind: str, ctype: str) -> Any:
    """How a plain launch writes a value read anew into its slot (``plain_launch.build``):
    a random op's seed or offset as its 64-bit word; else as it is (None) or a 0-dim CPU
    tensor's ``item()`` (``"item"``) where the slot takes the Python number; else through the
    numpy type of ``_PACK``."""
    if kind == "random":
        return philox_word
    if ctype in _AS_IS:
        return "item" if kind == "tensor" else None
    pack = _PACK[ctype]
    return (lambda tensor: pack(tensor.item())) if kind == "tensor" else pack


def workspace(param: KernelArg, device: torch.device,
              kept: dict[str, torch.Tensor] | None = None, once: bool = False) -> torch.Tensor:
    """A WORKSPACE parameter's memory: ``param.nbytes`` bytes, zero where ``param.zeroed``.
    Zeroed memory (the kernel leaves it zero) is made once per ``kept``, a planned launch's,
    and returned again after, and so is the rest where ``once`` says so (a plain launch's, up
    to ``KEPT_WORKSPACE_BYTES``); else it is new per call (the kernel writes it before
    reading)."""
    make = torch.zeros if param.zeroed else torch.empty
    if kept is None or not (param.zeroed or once):
        return make(max(1, param.nbytes), dtype=torch.uint8, device=device)
    if param.name not in kept:
        kept[param.name] = make(max(1, param.nbytes), dtype=torch.uint8, device=device)
    return kept[param.name]


def empty_output(shape: tuple[int, ...], strides: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device) -> torch.Tensor:
    """An output buffer: dense in its stride order where it has ``strides``, else row-major.
    (``Launch.plain`` inlines this, on the warm path.)"""
    if strides:
        return torch.empty_strided(shape, strides, dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def nbytes_of(shape: tuple[int, ...], strides: tuple[int, ...], dtype: torch.dtype) -> int:
    """The bytes of ``torch.empty_strided(shape, strides, dtype=dtype)``."""
    if any(size == 0 for size in shape):
        return 0
    span = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))
    return span * dtype.itemsize


def allocated_layout(shape: tuple[int, ...], strides: tuple[int, ...], logical: tuple[int, ...],
                     ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides of ``empty_output(shape, strides, ...).expand(logical)`` (the
    buffer's strides, 0 along its expanded dims), for one ``torch.empty_strided`` call to make
    (a third less host time than ``torch.empty``'s, row-major buffers too)."""
    if not strides:
        strides = torch.empty(shape, device="meta").stride()
    if not logical:
        return tuple(shape), tuple(strides)
    return tuple(logical), tuple(0 if size == 1 and wide != 1 else stride
                                 for size, wide, stride in zip(shape, logical, strides))


def poison_tensor(tensor: torch.Tensor) -> None:
    """NaN for floating types, every bit set otherwise (True for bool, -1 for signed ints)."""
    if tensor.is_floating_point():
        tensor.fill_(float("nan"))
    else:  # a buffer in a stride order is dense in that order: viewed so, it is contiguous
        order = sorted(range(tensor.dim()), key=lambda axis: -tensor.stride(axis))
        memory = tensor.permute(order).reshape(-1) if order else tensor.reshape(-1)
        memory.view(torch.uint8).fill_(1 if tensor.dtype is torch.bool else 0xFF)


_RNG_KINDS = (ArgKind.RNG_SEED, ArgKind.RNG_OFFSET)


def philox_word(number: Any) -> int:
    """A random op's seed or offset as the kernel's 64-bit unsigned parameter."""
    return int(number) % 2**64


def rng_argument(param: Any, env: MutableMapping[int, object], ctx: ExecutionContext) -> int:
    """A random expr's Philox seed or offset (``param.kind``) as the kernel's 64-bit unsigned
    parameter: the expr's ``rng_seed``/``rng_offset`` scalar where it has them, else the
    execution's seed and the expr's offset among the fusion's random exprs (fusecli.ir.rng)."""
    expr = param.expr
    given = random_seed(expr, expr.inputs)
    seed_kind = param.kind is ArgKind.RNG_SEED
    if given is None:
        number = ctx.seed if seed_kind else ctx.random_offsets[expr.uid]
    else:
        source = value_of(given[0] if seed_kind else given[1], env)
        number = source.item() if isinstance(source, torch.Tensor) else source
    return philox_word(number)


