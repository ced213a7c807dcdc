"""Compiling generated kernels with NVRTC, without a GPU.

CuPy's own compile path asks the driver for the device's architecture and fails without one,
so fusecli calls NVRTC through CuPy's low-level binding (``cupy_backends.cuda.libs.nvrtc``)
with an explicit architecture: a CUBIN for ``sm_90`` (the H200) by default. Kernels include no
header, so no include path is needed. Errors come back with NVRTC's log.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from fusecli.errors import MissingEnvironmentError, PipelineError

DEFAULT_ARCH = "sm_90"
OPTIONS = ("-std=c++17",)


@dataclass(frozen=True, slots=True)
class Compiled:
    cubin: bytes
    log: str
    arch: str


class CompileError(PipelineError):
    """NVRTC rejected a generated kernel; ``log`` is its output."""

    def __init__(self, kernel_name: str, log: str) -> None:
        first = next((line for line in log.splitlines() if "error" in line), log.strip())
        super().__init__(f"NVRTC failed to compile {kernel_name}: {first}")
        self.log = log


@cache
def _binding() -> Any:
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError as error:
        raise MissingEnvironmentError(
            "NVRTC is not available: install CuPy (pip install 'fusecli[cuda13]') and "
            f"nvidia-cuda-nvrtc ({error})"
        ) from None
    return nvrtc


def available() -> bool:
    try:
        version()
    except MissingEnvironmentError:
        return False
    return True


@cache
def version() -> tuple[int, int]:
    try:
        return tuple(_binding().getVersion())
    except Exception as error:  # the binding imports, but the NVRTC library is missing
        raise MissingEnvironmentError(f"NVRTC is not available: {error}") from None


def compile_source(source: str, kernel_name: str, arch: str = DEFAULT_ARCH) -> Compiled:
    """CUBIN for ``arch`` (``sm_90``); CompileError with NVRTC's log when it fails."""
    nvrtc = _binding()
    program = nvrtc.createProgram(source, f"{kernel_name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, [f"--gpu-architecture={arch}", *OPTIONS])
        except nvrtc.NVRTCError:
            raise CompileError(kernel_name, nvrtc.getProgramLog(program)) from None
        return Compiled(nvrtc.getCUBIN(program), nvrtc.getProgramLog(program), arch)
    finally:
        nvrtc.destroyProgram(program)
