"""nvFuser's scheduling enums and classes, as its Python bindings export them.

``ParallelType``, ``MemoryType``, ``SchedulerType``, ``LoadStoreOpType``, ``CacheOp``,
``CommunicatorBackend`` and (direct only) ``IdMappingMode`` are pybind11 enums in nvFuser:
``python/python_frontend/python_bindings.cpp`` for the legacy ``nvfuser`` module (as it stood
before its removal) and ``python/python_direct/enum.cpp`` for ``nvfuser_direct``. Here they carry
the same member names in the same order and, as ``int(member)``, the values of the C++ enums they
bind (``csrc/type.h``, ``csrc/scheduler/scheduler_types.h``, ``csrc/multidevice/multidevice.h``);
``__entries`` maps each name to ``(member, None)`` as pybind11's does, which nvFuser's tests read
to list the schedulers.

fusecli executes the math of a definition, not a user's schedule: these enums exist so that
scripts and test modules that import them load. The direct frontend's scheduling classes
(``KernelExecutor``, ``CompileParams``, the IR expression classes ``Merge``, ``Split``...) and
submodules (``schedule``, ``idm``, ``nvf_cutlass``) are placeholders that say so when used.
"""

from __future__ import annotations

import enum
import types
from typing import Any

SCHEDULING_SCOPE = (
    "user schedules (transforms, parallelization, KernelExecutor, the schedule and idm "
    "modules) are outside fusecli's scope: fusecli executes a definition's math, not its "
    "schedule"
)


class BoundEnum(enum.Enum):
    """A pybind11 enum: ``int()`` gives the C++ value; compares equal only to itself."""

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


def _bound(name: str, members: list[tuple[str, int]]) -> type[BoundEnum]:
    bound = BoundEnum(name, members, module=__name__, qualname=name)
    setattr(bound, "__entries", {member.name: (member, None) for member in bound})
    return bound


# C++ values: csrc/type.h enum class ParallelType (DIDx = 0, DIDy, DIDz, BIDz, BIDy, BIDx, TIDz,
# TIDy, TIDx, Stream, Vectorize, Unroll, Unswitch, Mma, Group, Bulk, Serial)
_PARALLEL_TYPES = [
    ("mesh_x", 0), ("mesh_y", 1), ("mesh_z", 2), ("grid_x", 5), ("grid_y", 4), ("grid_z", 3),
    ("block_x", 8), ("block_y", 7), ("block_z", 6), ("mma", 13), ("serial", 16), ("tma", 15),
    ("unroll", 11), ("unswitch", 12), ("vectorize", 10), ("stream", 9),
]
# enum class MemoryType { Local, Shared, Global, Tensor, Symmetric }
_MEMORY_TYPES = [("tensor", 3), ("local", 0), ("shared", 1), ("global", 2), ("symmetric", 4)]
# csrc/scheduler/scheduler_types.h enum class SchedulerType
_SCHEDULER_TYPES = [
    ("none", 0), ("no_op", 1), ("pointwise", 2), ("matmul", 3), ("reduction", 4),
    ("inner_persistent", 5), ("inner_outer_persistent", 6), ("outer_persistent", 7),
    ("transpose", 8), ("expr_eval", 9), ("resize", 10),
]
# enum class LoadStoreOpType { Set, SegmenterSet, LdMatrix, CpAsync, CpAsyncBulk,
# CpAsyncBulkTensorTile, ... }
_LOAD_STORE_OP_TYPES = [("set", 0), ("load_matrix", 2), ("cp_async", 3), ("tma", 5)]
# enum class CacheOp { Unspecified, AllLevels, Streaming, Global }
_CACHE_OPS = [("unspecified", 0), ("all_levels", 1), ("streaming", 2), ("global", 3)]
# enum class CommunicatorBackend { kNccl, kUcc, kCuda }
_COMMUNICATOR_BACKENDS = [("nccl", 0), ("ucc", 1), ("cuda", 2)]
# enum class IdMappingMode { EXACT, ALMOSTEXACT, BROADCAST, PERMISSIVE, LOOP, ... }
_ID_MAPPING_MODES = [
    ("exact", 0), ("almost_exact", 1), ("broadcast", 2), ("permissive", 3), ("loop", 4),
]


def _without(members: list[tuple[str, int]], *names: str) -> list[tuple[str, int]]:
    return [(name, value) for name, value in members if name not in names]


def legacy_enums() -> dict[str, type[BoundEnum]]:
    """The legacy ``nvfuser`` module's: no mesh_y/mesh_z, MemoryType of local, shared and
    global, CommunicatorBackend without cuda, and no IdMappingMode."""
    return {
        "ParallelType": _bound("ParallelType", _without(_PARALLEL_TYPES, "mesh_y", "mesh_z")),
        "LoadStoreOpType": _bound("LoadStoreOpType", _LOAD_STORE_OP_TYPES),
        "CacheOp": _bound("CacheOp", _CACHE_OPS),
        "MemoryType": _bound("MemoryType", _without(_MEMORY_TYPES, "tensor", "symmetric")),
        "SchedulerType": _bound("SchedulerType", _SCHEDULER_TYPES),
        "CommunicatorBackend": _bound("CommunicatorBackend",
                                      _without(_COMMUNICATOR_BACKENDS, "cuda")),
    }


def direct_enums() -> dict[str, type[BoundEnum]]:
    """``nvfuser_direct``'s (python/python_direct/enum.cpp)."""
    return {
        "ParallelType": _bound("ParallelType", _PARALLEL_TYPES),
        "CommunicatorBackend": _bound("CommunicatorBackend", _COMMUNICATOR_BACKENDS),
        "SchedulerType": _bound("SchedulerType", _SCHEDULER_TYPES),
        "LoadStoreOpType": _bound("LoadStoreOpType", _LOAD_STORE_OP_TYPES),
        "MemoryType": _bound("MemoryType", _MEMORY_TYPES),
        "CacheOp": _bound("CacheOp", _CACHE_OPS),
        "IdMappingMode": _bound("IdMappingMode", _ID_MAPPING_MODES),
    }


class _Unscheduled:
    """A scheduling class of nvfuser_direct's: importable, out of scope when made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"nvfuser_direct.{type(self).__name__}: {SCHEDULING_SCOPE}")


def _placeholder(name: str) -> type:
    return type(name, (_Unscheduled,), {"__module__": "nvfuser_direct", "__doc__":
                                        f"nvfuser_direct.{name}: out of fusecli's scope."})


# python/python_direct/ir.cpp and runtime.cpp: the IR expression classes tests match against
# (isinstance), and the manual compile path.
DIRECT_PLACEHOLDER_CLASSES = ("Merge", "Split", "BroadcastOp", "SqueezeOp", "ReshapeOp",
                              "CompileParams", "KernelExecutor")


def direct_placeholders() -> dict[str, type]:
    return {name: _placeholder(name) for name in DIRECT_PLACEHOLDER_CLASSES}


class ScopeModule(types.ModuleType):
    """nvfuser_direct's ``schedule``, ``idm`` and ``nvf_cutlass`` submodules: importable; any
    attribute asked of them says that it is out of fusecli's scope."""

    def __init__(self, name: str, scope: str) -> None:
        super().__init__(name, f"{name}: {scope}")
        self._scope = scope

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise AttributeError(f"{self.__name__}.{attribute}: {self._scope}")


CUTLASS_SCOPE = "nvFuser's CUTLASS kernels (Blackwell only) are outside fusecli's scope"
DIRECT_SCOPE_MODULES = {"schedule": SCHEDULING_SCOPE, "idm": SCHEDULING_SCOPE,
                        "nvf_cutlass": CUTLASS_SCOPE}
