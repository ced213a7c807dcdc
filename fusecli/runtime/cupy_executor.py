"""The CuPy executor: segments run as generated CUDA kernels (fusecli/codegen/), ATen otherwise.

Per segment: generate a kernel for the actual sizes, strides and alignment (or learn why there
is none), compile it with NVRTC (cached in memory and on disk by source hash, NVRTC version and
architecture), allocate the outputs with torch, and launch on torch's current stream with raw
device pointers. Generation and loading happen once per (segment, input layout), and so does
the launch's preparation (``_Launch``: where each argument comes from, a parameter buffer the
driver reads); a warm launch builds the layout key, allocates the outputs, writes the pointers
into that buffer and calls the driver's cuLaunchKernel directly.

``execute_segment_cupy`` returns the segment's outputs, or a ``FallbackReason`` (no generator,
a failed compile, CPU inputs, fault injection); ``CupyExecutor.run_segment`` applies the
fallback (ATen) unless ``strict``. Launch failures raise ``KernelLaunchError`` naming the
segment; with ``synchronize`` the executor waits for each kernel so that an asynchronous fault
(an illegal address) is reported against the segment that caused it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
import threading
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fusecli.codegen import ATEN_SCHEDULERS, ArgKind, Kernel, Unsupported, generate
from fusecli.codegen.nvrtc import CompileError, compile_source
from fusecli.codegen.nvrtc import version as nvrtc_version
from fusecli.errors import MissingEnvironmentError, PipelineError
from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Extent, Scalar, SymbolicExtent, evaluate_extent
from fusecli.runtime.aten import ATEN_OPS, AtenExecutor
from fusecli.runtime.context import ExecutionContext, MissingValueError, value_of

CACHE_DIR_VARIABLE = "FUSECLI_KERNEL_CACHE"

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


@dataclass(frozen=True, slots=True)
class FallbackReason:
    reason: str


@dataclass(frozen=True, slots=True)
class SegmentOutcome:
    """How a segment ran: ``executor`` is "cupy" or "aten"; ``fallback`` says why not cupy."""

    executor: str
    fallback: str | None = None
    kernel: Kernel | None = None


class KernelLaunchError(PipelineError):
    """A generated kernel failed to launch or to run (exit code 3)."""


def launch_error(segment: Any, kernel: Kernel, error: Exception) -> KernelLaunchError:
    """The error naming the segment and kernel whose launch raised ``error``."""
    return KernelLaunchError(
        f"segment {segment.id} ({segment.scheduler}): kernel {kernel.name} failed: "
        f"{type(error).__name__}: {error}"
    )


@dataclass(slots=True)
class _Prepared:
    kernel: Kernel
    function: Any
    launch: _Launch | None = None  # the warm path; None where _launch is replaced (tests)


def cupy_available() -> str | None:
    """None when CuPy and a CUDA device are usable; otherwise why not."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        import cupy  # noqa: F401
    except ImportError as error:
        return f"CuPy is not installed ({error}); pip install 'fusecli[cuda13]'"
    return None


class CupyExecutor:
    name = "cupy"

    def __init__(self, *, strict: bool = False, synchronize: bool = False, poison: bool = False,
                 cache_dir: str | Path | None = None) -> None:
        self._check_environment()
        self.strict = strict
        self.synchronize = synchronize
        self.poison = poison  # fill outputs before each launch: unwritten elements show
        self.modules = ModuleCache(cache_dir)
        self._prepared: dict[tuple, tuple[Any, _Prepared | FallbackReason]] = {}
        # (candidate id, layout key) -> (candidate, launch, kernel): what a warm launch needs
        self._warm: dict[tuple, tuple[Any, _Launch, Kernel]] = {}
        self._streams: dict[int, _Stream] = {}

    def kernels(self) -> list[Kernel]:
        """Every kernel generated so far."""
        return [entry.kernel for _, entry in self._prepared.values()
                if isinstance(entry, _Prepared)]

    def run_segment(self, segment: Any, env: MutableMapping[int, object],
                    ctx: ExecutionContext) -> SegmentOutcome:
        """Run ``segment``, on ATen when it has no kernel (PipelineError instead if strict).

        Segments whose scheduler runs ATen by design (expr_eval, as in nvFuser) are not
        fallbacks: ``strict`` lets them be.
        """
        result = self.execute_segment(segment, env, ctx)
        if isinstance(result, FallbackReason):
            if self.strict and segment.scheduler not in ATEN_SCHEDULERS:
                raise PipelineError(
                    f"segment {segment.id} ({segment.scheduler}) has no CUDA kernel: "
                    f"{result.reason}"
                )
            AtenExecutor().run_exprs(segment.exprs, env, ctx)
            return SegmentOutcome("aten", result.reason)
        outputs, kernel = result
        env.update(outputs)
        return SegmentOutcome("cupy", None, kernel)

    def execute_segment(self, segment: Any, env: MutableMapping[int, object],
                        ctx: ExecutionContext,
                        ) -> tuple[dict[int, torch.Tensor], Kernel] | FallbackReason:
        if ctx.faults:  # injected faults are computed wrongly by the ATen executor
            faulty = sorted({e.op.value for e in segment.exprs} & ctx.faults)
            if faulty:
                return FallbackReason(f"fault injection names {', '.join(faulty)}")
        try:
            inputs = [env[value.uid] for value in segment.inputs]
        except KeyError:
            return FallbackReason("an input of the segment has not been computed")
        key = (id(segment.candidate), *map(_layout_key, inputs))
        warm = self._warm.get(key)
        if warm is not None and warm[0] is segment.candidate:  # the warm path: launch it
            return warm[1](segment, inputs, env, ctx, self), warm[2]
        device = self._device(inputs, ctx)
        if device is None:
            return FallbackReason("the segment's tensors are not on a CUDA device")
        prepared = self._prepare(segment, env, ctx, inputs, device)
        if isinstance(prepared, FallbackReason):
            return prepared
        if prepared.launch is not None:
            if any(isinstance(value, torch.Tensor) and value.is_cuda for value in inputs):
                # The layout key names each tensor's device, so it names this device too.
                self._warm[key] = (segment.candidate, prepared.launch, prepared.kernel)
            outputs = prepared.launch(segment, inputs, env, ctx, self)
            return outputs, prepared.kernel
        values, outputs = kernel_arguments(prepared.kernel, env, ctx, device, self.poison)
        self._launch(segment, prepared, values, device)
        return outputs, prepared.kernel

    def _prepare(self, segment: Any, env: MutableMapping[int, object], ctx: ExecutionContext,
                 inputs: Sequence[Any], device: torch.device) -> _Prepared | FallbackReason:
        key = (id(segment.candidate), device.index, *map(_layout_key, inputs))
        cached = self._prepared.get(key)
        if cached is not None and cached[0] is segment.candidate:
            return cached[1]
        kernel = generate(segment, EnvironmentSizes(ctx, env), inputs)
        if isinstance(kernel, Unsupported):
            prepared: _Prepared | FallbackReason = FallbackReason(kernel.reason)
        else:
            try:
                prepared = _Prepared(kernel, self._load(kernel, device))
                if type(self)._launch is CupyExecutor._launch:  # the real device, not a stand-in
                    prepared.launch = _Launch.plan(segment, prepared, device)
            except CompileError as error:
                prepared = FallbackReason(f"the kernel failed to compile: {error}")
            except Exception as error:  # CuPy could not load the CUBIN on this device
                prepared = FallbackReason(
                    f"the kernel failed to load: {type(error).__name__}: {error}"
                )
        self._prepared[key] = (segment.candidate, prepared)
        return prepared

    # -- where kernels meet the device (a test replaces these four with the CPU emulator) ------

    def _check_environment(self) -> None:
        missing = cupy_available()
        if missing:
            raise MissingEnvironmentError(f"the cupy executor is not available: {missing}")

    def _device(self, inputs: Sequence[Any], ctx: ExecutionContext) -> torch.device | None:
        """The CUDA device the segment runs on; None when its tensors are elsewhere."""
        for value in inputs:
            if isinstance(value, torch.Tensor) and value.is_cuda:
                return value.device
        device = torch.device(ctx.device)
        dimensioned_elsewhere = any(isinstance(v, torch.Tensor) and v.dim() > 0 for v in inputs)
        return device if device.type == "cuda" and not dimensioned_elsewhere else None

    def _load(self, kernel: Kernel, device: torch.device) -> Any:
        return self.modules.function(kernel, device)

    def _launch(self, segment: Any, prepared: _Prepared, values: list[Any],
                device: torch.device) -> None:
        kernel = prepared.kernel
        arguments = tuple(v.data_ptr() if isinstance(v, torch.Tensor) else v for v in values)
        stream = self._stream(device)
        try:
            prepared.function(kernel.grid, kernel.block, arguments,
                              shared_mem=kernel.shared_mem, stream=stream)
        except Exception as error:  # CuPy's CUDADriverError
            raise launch_error(segment, kernel, error) from error
        if self.synchronize:
            self._wait(segment, kernel, device)

    def _wait(self, segment: Any, kernel: Kernel, device: torch.device) -> None:
        """Wait for the kernel: a fault while it ran is reported against its segment."""
        try:
            torch.cuda.synchronize(device)
        except Exception as error:  # torch's RuntimeError (an illegal address, say)
            raise launch_error(segment, kernel, error) from error

    def _stream(self, device: torch.device) -> _Stream:
        index = device.index if device.index is not None else torch.cuda.current_device()
        pointer = torch._C._cuda_getCurrentRawStream(index)
        stream = self._streams.get(pointer)
        if stream is None:
            stream = self._streams[pointer] = _Stream(pointer)
        return stream


# ctypes type of each scalar parameter's register type, for writing it into a launch buffer
_SLOT_TYPES: dict[str, Any] = {
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "long long": ctypes.c_longlong,
    "int": ctypes.c_int32,
    "unsigned long long": ctypes.c_uint64,
    "bool": ctypes.c_bool,
}


class _Launch:
    """One kernel's warm launch, planned once per (segment, input layout).

    The kernel's parameters live in one buffer of 8-byte slots, with the array of their
    addresses that cuLaunchKernel reads (it copies each parameter's size from its slot). Per
    launch: input pointers and scalars are written into their slots, outputs are allocated and
    theirs written too, and the driver is called on torch's current stream. A lock keeps two
    threads from filling one buffer at once.
    """

    __slots__ = ("kernel", "device", "index", "function", "address", "grid", "block", "shared",
                 "slots", "pointers", "params", "inputs", "outputs", "others", "lock", "direct")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.direct: str | None = None  # why the driver's launch failed, once it has

    @classmethod
    def plan(cls, segment: Any, prepared: _Prepared, device: torch.device) -> _Launch | None:
        """The plan, or None where the function is not a CuPy function (no driver pointer)."""
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
        for slot, param in enumerate(kernel.args):
            if param.kind is ArgKind.INPUT:
                if param.value.uid not in positions:
                    return None
                launch.inputs.append((slot, positions[param.value.uid]))
            elif param.kind is ArgKind.OUTPUT:
                launch.outputs.append((slot, param.value.uid, param.shape,
                                       dt.to_torch(param.dtype)))
            else:
                typed = (None if param.kind is ArgKind.HOST_VALUE
                         else _SLOT_TYPES[param.ctype].from_buffer(launch.slots, 8 * slot))
                launch.others.append((slot, param, typed))
        return launch

    def __call__(self, segment: Any, inputs: list[Any], env: MutableMapping[int, object],
                 ctx: ExecutionContext, executor: CupyExecutor) -> dict[int, torch.Tensor]:
        device, slots = self.device, self.slots
        outputs: dict[int, torch.Tensor] = {}
        keep = []  # host-drawn values: alive until the launch is queued
        with self.lock:
            for slot, position in self.inputs:
                slots[slot] = inputs[position].data_ptr()
            for slot, uid, shape, dtype in self.outputs:
                tensor = torch.empty(shape, dtype=dtype, device=device)
                if executor.poison:
                    poison_tensor(tensor)
                outputs[uid] = tensor
                slots[slot] = tensor.data_ptr()
            for slot, param, typed in self.others:
                if typed is None:
                    values = _host_values(param, env, ctx, device)
                    keep.append(values)
                    slots[slot] = values.data_ptr()
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

    def _enqueue(self, stream: int) -> None:
        grid, block = self.grid, self.block
        if self.direct is None:
            try:
                _driver().launchKernel(self.address, grid[0], grid[1], grid[2], block[0],
                                       block[1], block[2], self.shared, stream, self.params, 0)
                return
            except Exception as error:
                # No current CUDA context on this thread, say: CuPy's own launch makes one
                # current. A launch the kernel itself refuses fails there again, and says so.
                self.direct = f"{type(error).__name__}: {error}"
        # Each slot goes as 8 bytes, of which the driver copies the parameter's size.
        arguments = tuple(int(value) for value in self.slots)
        self.function(grid, block, arguments, shared_mem=self.shared, stream=_Stream(stream))


@cache
def _driver() -> Any:
    from cupy.cuda import driver

    return driver


class _Stream:
    """What CuPy's launch reads from a stream: its ``ptr`` (torch's current stream here)."""

    __slots__ = ("ptr",)

    def __init__(self, pointer: int) -> None:
        self.ptr = pointer


_DEFAULT: CupyExecutor | None = None


def execute_segment_cupy(segment: Any, env: MutableMapping[int, object], ctx: ExecutionContext,
                         ) -> dict[int, torch.Tensor] | FallbackReason:
    """The segment's outputs by value uid, from a shared executor; or why it cannot run."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = CupyExecutor()
    result = _DEFAULT.execute_segment(segment, env, ctx)
    return result if isinstance(result, FallbackReason) else result[0]


def kernel_arguments(kernel: Kernel, env: MutableMapping[int, object], ctx: ExecutionContext,
                     device: torch.device, poison: bool = False,
                     ) -> tuple[list[Any], dict[int, torch.Tensor]]:
    """The values of ``kernel``'s parameters (tensors, packed numbers) and its new outputs,
    filled with NaN (all ones for integers) when ``poison``."""
    values: list[Any] = []
    outputs: dict[int, torch.Tensor] = {}
    for param in kernel.args:
        if param.kind is ArgKind.INPUT:
            values.append(env[param.value.uid])
        elif param.kind is ArgKind.OUTPUT:
            tensor = torch.empty(param.shape, dtype=dt.to_torch(param.dtype), device=device)
            if poison:
                poison_tensor(tensor)
            outputs[param.value.uid] = tensor
            values.append(tensor)
        elif param.kind is ArgKind.HOST_VALUE:
            values.append(_host_values(param, env, ctx, device))
        else:
            source = env[param.value.uid] if param.kind is ArgKind.HOST_SCALAR else (
                value_of(param.value, env))
            number = source.item() if isinstance(source, torch.Tensor) else source
            values.append(_PACK[param.ctype](number))
    return values, outputs


def poison_tensor(tensor: torch.Tensor) -> None:
    """NaN for floating types, every bit set otherwise (True for bool, -1 for signed ints)."""
    if tensor.is_floating_point():
        tensor.fill_(float("nan"))
    else:
        tensor.view(-1).view(torch.uint8).fill_(1 if tensor.dtype is torch.bool else 0xFF)


def _host_values(param: Any, env: MutableMapping[int, object], ctx: ExecutionContext,
                 device: torch.device) -> torch.Tensor:
    """A random op's values from fusecli's stream (what ATen and the reference draw)."""
    expr = param.expr
    args = []
    for value in expr.inputs:
        try:
            args.append(value_of(value, env))
        except MissingValueError:  # rand_like of a value of this segment: only its shape counts
            args.append(torch.empty(param.shape, dtype=dt.to_torch(param.dtype), device=device))
    (values,) = ATEN_OPS[expr.op](expr, args, ctx)
    return values.to(device=device, dtype=dt.to_torch(param.dtype)).contiguous()


class EnvironmentSizes:
    """Concrete extents from the execution's bound sizes and the environment's scalars."""

    def __init__(self, ctx: ExecutionContext, env: MutableMapping[int, object]) -> None:
        self.ctx, self.env = ctx, env

    def extent(self, extent: Extent) -> int | None:
        lookup = _Lookup(self.ctx, self.env)
        try:
            return int(evaluate_extent(extent, lookup))
        except (KeyError, MissingValueError, TypeError, ZeroDivisionError):
            return None


class _Lookup(dict):
    def __init__(self, ctx: ExecutionContext, env: MutableMapping[int, object]) -> None:
        super().__init__()
        self.ctx, self.env = ctx, env

    def __getitem__(self, key: object) -> int:
        if isinstance(key, SymbolicExtent):
            return self.ctx.extents[key]
        if isinstance(key, Scalar):
            return int(value_of(key, self.env))
        raise KeyError(key)


class ModuleCache:
    """Compiled kernels: in memory by source, on disk as CUBIN by source, NVRTC and arch."""

    def __init__(self, directory: str | Path | None = None) -> None:
        default = os.environ.get(CACHE_DIR_VARIABLE) or Path.home() / ".cache/fusecli/kernels"
        self.directory = Path(directory or default)
        self._functions: dict[tuple[str, int], Any] = {}
        self.compiles = 0  # NVRTC runs, for tests and the benchmark

    def function(self, kernel: Kernel, device: torch.device) -> Any:
        key = (kernel.source, device.index or 0)
        found = self._functions.get(key)
        if found is None:
            found = self._functions[key] = self._load(kernel, device)
        return found

    def _load(self, kernel: Kernel, device: torch.device) -> Any:
        import cupy

        major, minor = torch.cuda.get_device_capability(device)
        arch = f"sm_{major}{minor}"
        path = self.directory / f"{cache_key(kernel.source, arch)}.cubin"
        if not path.exists():
            compiled = compile_source(kernel.source, kernel.name, arch)
            self.compiles += 1
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.directory, delete=False) as handle:
                handle.write(compiled.cubin)
            os.replace(handle.name, path)  # atomic: concurrent writers leave one whole file
        with cupy.cuda.Device(device.index or 0):
            raw = cupy.RawModule(path=str(path)).get_function(kernel.name)
            # The loaded function itself: calling it skips RawKernel's per-call lookups.
            return getattr(raw, "kernel", raw)


def cache_key(source: str, arch: str) -> str:
    major, minor = nvrtc_version()
    text = f"{source}\0nvrtc {major}.{minor}\0{arch}"
    return hashlib.sha256(text.encode()).hexdigest()


def _layout_key(value: Any) -> tuple:
    if not isinstance(value, torch.Tensor):
        return (type(value),)
    address = value.data_ptr()
    # get_device(): -1 on the CPU, else the CUDA device's index
    return (value.dtype, value.get_device(), value.shape, value.stride(), address % 16,
            address == 0)
