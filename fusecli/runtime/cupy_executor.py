"""The CuPy executor: segments run as generated CUDA kernels (fusecli/codegen/).

Per segment: generate a kernel for the actual sizes, strides and alignment (or learn why there
is none), compile it with NVRTC (``kernel_modules``: cached in memory and on disk by source
hash, NVRTC version and architecture), allocate the outputs with torch, and launch on torch's
current stream with raw device pointers. Generation and loading happen once per (segment,
input layout), and so does the launch's preparation (``launch.Launch``); a warm launch builds
the layout key, allocates the outputs, writes the pointers into a parameter buffer and calls
the driver's cuLaunchKernel directly.

It implements ``runtime.executor.Executor``: ``attempt`` runs a segment or says why it cannot
(no generator, a failed compile, tensors not on a CUDA device); ``execute_segment`` returns the
outputs or a ``FallbackReason`` without writing them. ``run_segment`` is the shared fallback
(``runtime.executor.run_segment``) with this executor asked first. Launch failures raise
``KernelLaunchError`` naming the segment; with ``synchronize`` the executor waits for each
kernel so that an asynchronous fault (an illegal address) is reported against its segment.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fusecli.codegen import Kernel, Unsupported, generate
from fusecli.codegen.nvrtc import CompileError
from fusecli.errors import MissingEnvironmentError
from fusecli.ir.nodes import Extent, Scalar, SymbolicExtent, evaluate_extent
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.context import ExecutionContext, MissingValueError, value_of
from fusecli.runtime.executor import SegmentOutcome, run_segment
from fusecli.runtime.kernel_modules import CACHE_DIR_VARIABLE, ModuleCache, cache_key
from fusecli.runtime.launch import (
    KernelLaunchError,
    Launch,
    Prepared,
    Stream,
    kernel_arguments,
    launch_error,
    poison_tensor,
)
from fusecli.segment.result import Segment

__all__ = [
    "CACHE_DIR_VARIABLE", "CupyExecutor", "EnvironmentSizes", "FallbackReason",
    "KernelLaunchError", "ModuleCache", "SegmentOutcome", "cache_key", "cupy_available",
    "execute_segment_cupy", "kernel_arguments", "launch_error", "poison_tensor",
]


@dataclass(frozen=True, slots=True)
class FallbackReason:
    reason: str
    splittable: bool = False  # no kernel for the segment whole; parts may have (runtime.parts)


def cupy_available() -> str | None:
    """None when CuPy and a CUDA device are usable; otherwise why not."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        import cupy  # noqa: F401
    except ImportError as error:
        return f"CuPy is not installed ({error}); pip install 'fusecli[cuda13]'"
    return None


# A generated kernel NVRTC rejected or CuPy could not load: a fusecli bug. The segment runs on
# ATen, visibly; a run that asked for the CuPy executor by name reports it as an error (exit 3).
KERNEL_FAILED = "the kernel failed"


class CupyExecutor:
    name = "cupy"
    injects_faults = True  # renders FUSECLI_INJECT_FAULT's ops wrong in the kernel (codegen)

    def __init__(self, *, strict: bool = False, synchronize: bool = False, poison: bool = False,
                 cache_dir: str | Path | None = None) -> None:
        self._check_environment()
        self.strict = strict
        self.synchronize = synchronize
        self.poison = poison  # fill outputs before each launch: unwritten elements show
        self.modules = ModuleCache(cache_dir)
        self._prepared: dict[tuple, tuple[Any, Prepared | FallbackReason]] = {}
        # (candidate id, layout key) -> (candidate, launch, kernel): what a warm launch needs
        self._warm: dict[tuple, tuple[Any, Launch, Kernel]] = {}
        self._streams: dict[int, Stream] = {}
        self._fallback = AtenExecutor()
        self.last_kernel: Kernel | None = None
        self.last_splittable = False  # the last refusal was a segment parts may run
        self.last_launch: Launch | None = None  # the planned launch that ran last_kernel

    def kernels(self) -> list[Kernel]:
        """Every kernel generated so far."""
        return [entry.kernel for _, entry in self._prepared.values()
                if isinstance(entry, Prepared)]

    def run_segment(self, segment: Segment, env: MutableMapping[int, object],
                    ctx: ExecutionContext) -> SegmentOutcome:
        """Run ``segment``, on ATen when it has no kernel (PipelineError instead if strict).

        Segments whose scheduler runs ATen by design (expr_eval, as in nvFuser) are not
        fallbacks: ``strict`` lets them be.
        """
        return run_segment(self, segment, env, ctx, fallback=self._fallback, strict=self.strict)

    def attempt(self, segment: Segment, env: MutableMapping[int, object],
                ctx: ExecutionContext) -> str | None:
        """The protocol's step: run ``segment`` into ``env``, or say why there is no kernel."""
        result = self.execute_segment(segment, env, ctx)
        self.last_splittable = isinstance(result, FallbackReason) and result.splittable
        if isinstance(result, FallbackReason):
            return result.reason
        outputs, self.last_kernel = result
        env.update(outputs)
        return None

    def execute_segment(self, segment: Segment, env: MutableMapping[int, object],
                        ctx: ExecutionContext,
                        ) -> tuple[dict[int, torch.Tensor], Kernel] | FallbackReason:
        try:
            inputs = [env[value.uid] for value in segment.inputs]
        except KeyError:
            return FallbackReason("an input of the segment has not been computed")
        key = (id(segment.candidate), ctx.faults, ctx.views, *map(_layout_key, inputs))
        warm = self._warm.get(key)
        self.last_launch = None
        if warm is not None and warm[0] is segment.candidate:  # the warm path: launch it
            self.last_launch = warm[1]
            outputs = warm[1](segment, inputs, env, ctx, self)
            return self._with_views(outputs, warm[2], env, ctx), warm[2]
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
            self.last_launch = prepared.launch
            return self._with_views(outputs, prepared.kernel, env, ctx), prepared.kernel
        values, outputs = kernel_arguments(prepared.kernel, env, ctx, device, self.poison)
        self._launch(segment, prepared, values, device)
        return self._with_views(outputs, prepared.kernel, env, ctx), prepared.kernel

    def _with_views(self, outputs: dict[int, torch.Tensor], kernel: Kernel,
                    env: MutableMapping[int, object], ctx: ExecutionContext,
                    ) -> dict[int, torch.Tensor]:
        """``outputs`` and the segment outputs the kernel left to the runtime: views of its
        inputs or outputs, evaluated with ATen as nvFuser's ExprEvalExecutor does."""
        if kernel.views:
            self._fallback.run_exprs(kernel.views, ChainMap(outputs, env), ctx)
        return outputs

    def _prepare(self, segment: Segment, env: MutableMapping[int, object], ctx: ExecutionContext,
                 inputs: Sequence[Any], device: torch.device) -> Prepared | FallbackReason:
        key = (id(segment.candidate), device.index, ctx.faults, ctx.views,
               *map(_layout_key, inputs))
        cached = self._prepared.get(key)
        if cached is not None and cached[0] is segment.candidate:
            return cached[1]
        kernel = generate(segment, EnvironmentSizes(ctx, env), inputs, ctx.faults, ctx.views)
        if isinstance(kernel, Unsupported):
            prepared: Prepared | FallbackReason = FallbackReason(kernel.reason,
                                                                 kernel.splittable)
        else:
            try:
                prepared = Prepared(kernel, self._load(kernel, device))
                if type(self)._launch is CupyExecutor._launch:  # the real device, not a stand-in
                    prepared.launch = Launch.plan(segment, prepared, device, inputs)
            except CompileError as error:
                prepared = FallbackReason(f"{KERNEL_FAILED} to compile: {error}")
            except Exception as error:  # CuPy could not load the CUBIN on this device
                prepared = FallbackReason(
                    f"{KERNEL_FAILED} to load: {type(error).__name__}: {error}"
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

    def _launch(self, segment: Segment, prepared: Prepared, values: list[Any],
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

    def _wait(self, segment: Segment, kernel: Kernel, device: torch.device) -> None:
        """Wait for the kernel: a fault while it ran is reported against its segment."""
        try:
            torch.cuda.synchronize(device)
        except Exception as error:  # torch's RuntimeError (an illegal address, say)
            raise launch_error(segment, kernel, error) from error

    def _stream(self, device: torch.device) -> Stream:
        index = device.index if device.index is not None else torch.cuda.current_device()
        pointer = torch._C._cuda_getCurrentRawStream(index)
        stream = self._streams.get(pointer)
        if stream is None:
            stream = self._streams[pointer] = Stream(pointer)
        return stream


_DEFAULT: CupyExecutor | None = None


def execute_segment_cupy(segment: Segment, env: MutableMapping[int, object], ctx: ExecutionContext,
                         ) -> dict[int, torch.Tensor] | FallbackReason:
    """The segment's outputs by value uid, from a shared executor; or why it cannot run."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = CupyExecutor()
    result = _DEFAULT.execute_segment(segment, env, ctx)
    return result if isinstance(result, FallbackReason) else result[0]


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


def _layout_key(value: Any) -> tuple:
    if not isinstance(value, torch.Tensor):
        return (type(value),)
    address = value.data_ptr()
    # get_device(): -1 on the CPU, else the CUDA device's index
    return (value.dtype, value.get_device(), value.shape, value.stride(), address % 16,
            address == 0)
