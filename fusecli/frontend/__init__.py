"""fusecli's stand-in for nvFuser's Python frontend (``nvfuser`` / ``nvfuser_direct``).

Scripts loaded by fusecli that import ``nvfuser`` get this module; it can also be imported
directly: ``from fusecli.frontend import FusionDefinition, DataType``.
"""

from fusecli.frontend.caches import LRUCache, LruFusionCache, PythonProfiler, clone
from fusecli.frontend.definition import FusionCache, FusionDefinition
from fusecli.frontend.descriptors import compute_contiguity, compute_tensor_descriptor
from fusecli.frontend.state import Scalar, Tensor, Vector
from fusecli.frontend.version import __version__ as __version__
from fusecli.frontend.version import version
from fusecli.ir.builder import DefinitionError
from fusecli.ir.dtype import DataType

TensorView = Tensor  # nvfuser_direct's name for a tensor handle


def enable_automatic_serialization() -> None:
    """nvFuser saves its fusion cache at exit when enabled; fusecli keeps no cache on disk."""


def disable_automatic_serialization() -> None:
    """See ``enable_automatic_serialization``: nothing to disable."""

__all__ = [
    "DataType",
    "DefinitionError",
    "FusionCache",
    "FusionDefinition",
    "LRUCache",
    "LruFusionCache",
    "PythonProfiler",
    "Scalar",
    "Tensor",
    "TensorView",
    "Vector",
    "clone",
    "compute_contiguity",
    "compute_tensor_descriptor",
    "disable_automatic_serialization",
    "enable_automatic_serialization",
    "version",
]
