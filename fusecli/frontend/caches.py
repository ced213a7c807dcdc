"""The caches and copies nvFuser's frontend offers besides ``FusionDefinition``.

- ``LRUCache`` (``nvfuser_direct``): ``cache_compile(fd.fusion)`` returns the cache's entry for
  that fusion, the one compiled before when an equal fusion was (equal: the same printed IR);
  ``num_fusions()`` counts the distinct ones. A definition whose ``fec`` is set to an entry
  executes that entry's fusion (nvFuser's tests then ``del fd._fusion``).
- ``clone(fd, into)`` (legacy ``nvfuser``): ``into`` becomes a copy of ``fd``'s definition.
- ``PythonProfiler``: nvFuser's CUPTI profiler, out of fusecli's scope; making one says so.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from fusecli.ir import nodes


@dataclass(frozen=True, slots=True)
class CompiledFusion:
    """An ``LRUCache`` entry: the fusion every definition printing the same way shares."""

    fusion: nodes.Fusion
    key: str


class LRUCache:
    def __init__(self, max_fusions: int = 16384) -> None:
        if max_fusions < 1:
            raise ValueError(f"LRUCache: max_fusions must be at least 1, got {max_fusions}")
        self.max_fusions = max_fusions
        self._entries: OrderedDict[str, CompiledFusion] = OrderedDict()

    def cache_compile(self, fusion: nodes.Fusion) -> CompiledFusion:
        from fusecli.ir.printer import print_fusion

        # The printed IR, and what it leaves out that makes a different fusion in nvFuser:
        # each input's contiguity, stride order and device, and the outputs' stride orders.
        layouts = [(t.contiguity, t.stride_order, t.is_cpu)
                   for t in fusion.inputs if isinstance(t, nodes.TensorView)]
        outputs = [(None if o.alias_input is None else fusion.inputs.index(o.alias_input),
                    o.stride_order) for o in fusion.outputs]
        key = f"{print_fusion(fusion)}\n{layouts}\n{outputs}"
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = CompiledFusion(fusion, key)
            while len(self._entries) > self.max_fusions:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return entry

    def num_fusions(self) -> int:
        return len(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


LruFusionCache = LRUCache  # nvfuser_direct's other name for it


def clone(fd: Any, into: Any) -> Any:
    """``into`` defined as ``fd`` is: the same records replayed (legacy ``nvfuser.clone``)."""
    into._copy_definition_of(fd)
    return into


class PythonProfiler:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "PythonProfiler (nvFuser's CUPTI kernel profiler) is out of fusecli's scope"
        )
