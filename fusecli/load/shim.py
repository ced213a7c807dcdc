"""``import nvfuser`` inside a loaded script: fusecli's frontend, for that script only.

fusecli never installs a top-level ``nvfuser`` package. While ``nvfuser_modules()`` is active,
``sys.modules`` maps ``nvfuser`` and ``nvfuser_direct`` (and their ``pytorch_utils``) to small
module objects that hold fusecli's frontend; on exit the previous entries come back, so a real
nvFuser, imported or not, stays untouched.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator

import fusecli.frontend as frontend
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType

MODULE_NAMES = ("nvfuser", "nvfuser_direct")

_PYTHON_TYPES = {
    bool: DataType.Bool,
    int: DataType.Int,
    float: DataType.Double,
    complex: DataType.ComplexDouble,
}


def torch_dtype_to_nvfuser_dtype(dtype: object) -> DataType:
    """nvFuser's ``pytorch_utils.torch_dtype_to_nvfuser_dtype``: torch dtypes and Python types."""
    if isinstance(dtype, type) and dtype in _PYTHON_TYPES:
        return _PYTHON_TYPES[dtype]
    return dt.from_torch(dtype)


def shim_module(name: str) -> types.ModuleType:
    """A fresh module named ``name`` with the frontend's API and a ``pytorch_utils`` submodule."""
    module = types.ModuleType(name, frontend.__doc__)
    for attribute in frontend.__all__:
        setattr(module, attribute, getattr(frontend, attribute))
    if name == "nvfuser_direct":
        from fusecli.frontend.definition import DirectFusionDefinition

        module.FusionDefinition = DirectFusionDefinition
    module.__path__ = []  # a package, so that ``import nvfuser.pytorch_utils`` is understood
    module.__version__ = frontend.__version__
    utils = types.ModuleType(f"{name}.pytorch_utils")
    utils.torch_dtype_to_nvfuser_dtype = torch_dtype_to_nvfuser_dtype
    module.pytorch_utils = utils
    return module


@contextlib.contextmanager
def nvfuser_modules() -> Iterator[None]:
    entries: dict[str, types.ModuleType] = {}
    for name in MODULE_NAMES:
        module = shim_module(name)
        entries[name] = module
        entries[f"{name}.pytorch_utils"] = module.pytorch_utils
    saved = {name: sys.modules.get(name) for name in entries}
    sys.modules.update(entries)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
