"""Localizing failures: segment bisection, op-level minimization, git regression hunting.

``run_bisect`` is what ``fusecli bisect`` calls; its parts:

- ``oracle``: the question every mode asks (does this still fail the same way?), answered in a
  process of its own with a timeout (``fresh``), or in this one; ``check`` evaluates one.
- ``segments``: which segment, run on the executor under test, makes the fusion fail.
- ``selection`` / ``rebuild`` / ``declare``: a part of a fusion as a fusion of its own, fed with
  recorded values; ``ddmin``, ``shrink`` and ``minimize`` make it as small as it can be.
- ``gitbisect`` / ``gitstep``: ``git bisect run`` over a checkout, each commit with its own code.
"""

from __future__ import annotations

import importlib
from typing import Any

# Exports load their module on first use: importing fusecli.bisect (as the oracle's child and
# the corpus workers do, before choosing a GPU) must not import torch.
_EXPORTS = {
    "BisectOptions": "driver", "GitRange": "driver", "bisect_path": "driver",
    "run_bisect": "driver", "Verdict": "check", "GitOptions": "gitbisect",
    "git_bisect": "gitbisect", "Oracle": "oracle", "Target": "oracle",
    "BisectReport": "results", "GitReport": "results", "Progress": "results",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fusecli.bisect' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fusecli.bisect.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)
