"""The caches and copies nvFuser's frontend offers besides ``FusionDefinition``.

- ``FusionCache`` (legacy ``nvfuser``): every definition finished in this process, by its
  printed form; equal definitions share an id, and ``FusionDefinition(id)`` attaches to it.
- ``LRUCache`` (``nvfuser_direct``): ``cache_compile(fd.fusion)`` returns the cache's entry for
  that fusion, the one compiled before when an equal fusion was (equal as nvFuser's
  ``Fusion::sameDefinition``: the same inputs, exprs with the same attributes and operands,
  and outputs; ``fusion_key``); ``num_fusions()`` counts the distinct ones and ``stats()``
  reports lookups and hits in nvFuser's words. A definition whose ``fec`` is set to an entry
  executes that entry's fusion (nvFuser's tests then ``del fd._fusion``).
- ``LruFusionCache(max_fusions)``: nvfuser_direct's decorator over an ``LRUCache``: the
  function it wraps makes a definition, which comes back with its ``fec`` set.
- ``clone(fd, into)`` (legacy ``nvfuser``): ``into`` becomes a copy of ``fd``'s definition.
- ``PythonProfiler``: nvFuser's CUPTI profiler, out of fusecli's scope; making one says so.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fusecli.ir import nodes

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition


# nvFuser's scheduled IR and generated CUDA are the text of its own scheduling and lowering
LOWERED_TEXT_SCOPE = nodes.LOWERED_TEXT_SCOPE


@dataclass(slots=True, eq=False)
class CompiledFusion:
    """A FusionExecutorCache: an ``LRUCache`` entry, the fusion every equal definition shares,
    or the one a definition makes at its first execute. ``visits``: the lookups it answered;
    ``signatures``: the inputs (shapes, strides, dtypes) it ran. Its scheduled IR and CUDA
    kernel (``get_scheduled_ir``, ``get_cuda_kernel``) are nvFuser's: asked, they say that they
    are out of fusecli's scope."""

    fusion: nodes.Fusion
    key: tuple | None = None
    visits: int = 0
    signatures: set[tuple] = field(default_factory=set, repr=False)

    def ran(self, inputs: Sequence[Any]) -> None:
        self.signatures.add(input_signature(inputs))

    def is_compiled(self, inputs: Sequence[Any]) -> bool:
        """Whether inputs like these have run through this entry."""
        return input_signature(inputs) in self.signatures

    def get_scheduled_ir(self, *args: Any, **kwargs: Any) -> str:
        raise NotImplementedError(f"get_scheduled_ir: {LOWERED_TEXT_SCOPE}")

    def get_most_recent_scheduled_ir(self, *args: Any, **kwargs: Any) -> str:
        raise NotImplementedError(f"get_most_recent_scheduled_ir: {LOWERED_TEXT_SCOPE}")

    def get_cuda_kernel(self, *args: Any, **kwargs: Any) -> str:
        raise NotImplementedError(f"get_cuda_kernel: {LOWERED_TEXT_SCOPE}")


def input_signature(inputs: Sequence[Any]) -> tuple:
    signature = []
    for value in nodes.flatten_inputs(list(inputs)):
        if hasattr(value, "stride") and hasattr(value, "dtype"):
            signature.append((tuple(value.shape), tuple(value.stride()), value.dtype))
        else:
            signature.append(type(value))
    return tuple(signature)


def fusion_key(fusion: nodes.Fusion) -> tuple:
    """What makes two fusions the same definition for nvFuser: each input's dtype, domain,
    contiguity, stride order and device; each expr's op, attributes and operands; the
    outputs, their aliases and stride orders. Values are named by where they first appear,
    so equal definitions built apart have equal keys."""
    names: dict[int, int] = {}

    def ref(value: nodes.Val) -> object:
        if isinstance(value, nodes.Scalar) and value.is_constant:
            return ("constant", value.dtype.name, repr(value.value))
        if isinstance(value, nodes.Vector):
            return ("vector", tuple(ref(element) for element in value.elements))
        return names.setdefault(value.uid, len(names))

    def domain(tensor: nodes.TensorView) -> tuple:
        return tuple((d.iter_type.value, d.extent if isinstance(d.extent, int) else "?",
                      d.expanded is not None) for d in tensor.domain)

    key: list[object] = []
    for value in fusion.inputs:
        if isinstance(value, nodes.TensorView):
            key.append((ref(value), value.dtype.name, domain(value), value.contiguity,
                        value.stride_order, value.is_cpu))
        else:
            key.append((ref(value), value.dtype.name))
    for expr in fusion.exprs:
        attrs = tuple(sorted((name, repr(attr)) for name, attr in expr.attrs.items()))
        key.append((expr.op.value, attrs, tuple(ref(v) for v in expr.inputs),
                    tuple(ref(v) for v in expr.outputs)))
    key += [(ref(out.value), None if out.alias_input is None else ref(out.alias_input),
             out.stride_order) for out in fusion.outputs]
    return tuple(key)


class FusionCache:
    """Definitions seen in this process, keyed by their printed form: the id of a definition,
    and the definition an id stands for (``FusionDefinition(id)`` attaches to it)."""

    _ids: dict[str, int] = {}
    _definitions: dict[int, FusionDefinition] = {}

    @classmethod
    def get(cls) -> type[FusionCache]:
        return cls

    @classmethod
    def reset(cls) -> None:
        cls._ids.clear()
        cls._definitions.clear()

    @classmethod
    def num_fusions(cls) -> int:
        return len(cls._ids)

    @classmethod
    def lookup(cls, text: str, fd: FusionDefinition) -> int:
        fusion_id = cls._ids.setdefault(text, len(cls._ids))
        cls._definitions.setdefault(fusion_id, fd)
        return fusion_id

    @classmethod
    def definition(cls, fusion_id: int) -> FusionDefinition:
        if fusion_id not in cls._definitions:
            raise RuntimeError(f"Fusion id {fusion_id} is not in the FusionCache: no definition "
                               f"has it ({len(cls._ids)} fusions cached)")
        return cls._definitions[fusion_id]


class LRUCache:
    def __init__(self, max_fusions: int = 16384) -> None:
        if max_fusions < 1:
            raise ValueError(f"LRUCache: max_fusions must be at least 1, got {max_fusions}")
        self.max_fusions = max_fusions
        self._entries: OrderedDict[tuple, CompiledFusion] = OrderedDict()
        self._lookups = 0
        self._hits = 0

    def cache_compile(self, fusion: nodes.Fusion) -> CompiledFusion:
        key = fusion_key(fusion)
        self._lookups += 1
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = CompiledFusion(fusion, key)
            while len(self._entries) > self.max_fusions:
                self._entries.popitem(last=False)
        else:
            self._hits += 1
            entry.visits += 1
        self._entries.move_to_end(key)
        return entry

    def num_fusions(self) -> int:
        return len(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> str:
        """nvFuser's report: capacity, fusions, lookups, hits per entry (most recent first)."""
        lines = [f"Max Fusions Allowed: {self.max_fusions}"]
        if not self._entries:
            return "\n".join([*lines, "The fusion cache is empty.", ""])
        lines += [
            f"Total Fusions in Cache: {len(self._entries)}",
            f"Total Unique Fusions Compiled: {self._lookups - self._hits}",
            "Cache Hits by LRU ordering:",
        ]
        for index, entry in enumerate(reversed(self._entries.values())):
            lines.append(f"\t{index} -> {entry.visits} hits")
        rate = 100.0 * self._hits / self._lookups if self._lookups else 0.0
        lines += [f"Cache Lookups: {self._lookups}", f"Cache Hits: {self._hits}",
                  f"Hit Rate: {rate:g}%", ""]
        return "\n".join(lines)


class LruFusionCache:
    """nvfuser_direct's decorator: ``@LruFusionCache(max_fusions=10)`` over a function that
    returns a ``FusionDefinition``; each definition it returns executes the cache's entry for
    its fusion. The wrapper has ``stats()`` and ``num_fusions()``."""

    def __init__(self, max_fusions: int = 16384) -> None:
        self.cache = LRUCache(max_fusions)

    def __call__(self, make_definition: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(make_definition)
        def cached(*args: Any, **kwargs: Any) -> Any:
            fd = make_definition(*args, **kwargs)
            if getattr(fd, "fec", None) is None:
                fd.fec = self.cache.cache_compile(fd.fusion)
            return fd

        cached.stats = self.cache.stats
        cached.num_fusions = self.cache.num_fusions
        return cached


def clone(fd: Any, into: Any) -> Any:
    """``into`` defined as ``fd`` is: the same records replayed (legacy ``nvfuser.clone``)."""
    into._copy_definition_of(fd)
    return into


class PythonProfiler:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "PythonProfiler (nvFuser's CUPTI kernel profiler) is out of fusecli's scope"
        )
