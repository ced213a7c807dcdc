"""Compiled kernels: in memory by source, on disk as CUBIN by source hash, NVRTC and arch."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from fusecli.codegen import Kernel
from fusecli.codegen.nvrtc import compile_source
from fusecli.codegen.nvrtc import version as nvrtc_version

CACHE_DIR_VARIABLE = "FUSECLI_KERNEL_CACHE"


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


