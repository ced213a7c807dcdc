"""The executor cache: a fusion's segmentation, kept per input signature, as nvFuser's
FusionExecutorCache keeps a FusionKernelRuntime per input signature.

A warm ``fd.execute`` (and each later fusion run of ``fusecli run``, ``bench`` and ``bisect``)
with inputs of a signature seen before skips segmentation: the scheduler proposals, the
heuristics and their checks. The key is exact: every tensor input's dtype, shape, strides and
device, every scalar input's type and value (heuristics and run-time checks read sizes, so sizes
are in it), the rule profile, and ``FUSECLI_INJECT_FAULT`` as it reads now. A new signature is a
new entry; the oldest of more than ``CAPACITY`` entries is dropped. Entries live on the fusion
(``Fusion.memo``): a definition that goes away takes its entries with it, and nothing else is
retained (no inputs, no outputs).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from fusecli.ir.nodes import Fusion
from fusecli.runtime.faults import ENV_VAR
from fusecli.segment.result import SegmentedFusion
from fusecli.segment.segmenter import segment_fusion

CAPACITY = 32  # signatures kept per fusion


def input_signature(inputs: Sequence[Any]) -> tuple:
    """What a segmentation may depend on, per input."""
    import torch

    signature = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            signature.append((
                value.dtype, tuple(value.shape), tuple(value.stride()), value.device,
                value.is_conj(), value.is_neg(),
            ))
        else:
            signature.append((type(value).__name__, repr(value)))
    return tuple(signature)


def cached_segmentation(fusion: Fusion, inputs: Sequence[Any], rules: str) -> SegmentedFusion:
    """``segment_fusion(fusion, inputs, profile=rules)``, computed once per signature."""
    entries: OrderedDict = fusion.memo.setdefault("segmentations", OrderedDict())
    key = (rules, os.environ.get(ENV_VAR, ""), input_signature(inputs))
    segmented = entries.get(key)
    if segmented is not None:
        entries.move_to_end(key)
        return segmented
    segmented = segment_fusion(fusion, inputs, profile=rules)
    entries[key] = segmented
    while len(entries) > CAPACITY:
        entries.popitem(last=False)
    return segmented


def cache_size(fusion: Fusion) -> int:
    """How many signatures ``fusion`` has a segmentation for."""
    return len(fusion.memo.get("segmentations", ()))
