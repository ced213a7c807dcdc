"""Where an execution runs."""

from __future__ import annotations

from typing import Any

import torch

from fusecli.runtime.bind import Bindings


def execution_device(bindings: Bindings, device: Any = None) -> torch.device:
    """The inputs' device; else ``device`` (an int is a CUDA ordinal); else cuda:0 or the CPU."""
    if bindings.device is not None:
        return torch.device(bindings.device)
    if device is not None:
        return torch.device(f"cuda:{device}" if isinstance(device, int) else device)
    return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
