"""``import nvfuser`` inside a loaded script: fusecli's frontend, for that script only.

fusecli never installs a top-level ``nvfuser`` package. While ``nvfuser_modules()`` is active,
importing ``nvfuser`` or ``nvfuser_direct`` (and their ``pytorch_utils``, their version modules
``nvfuser.nvfuser_version`` and ``nvfuser_direct.nvfuser_direct_version``, and
``nvfuser.contrib.nn.normalization``) gives small module objects that hold fusecli's frontend
and nvFuser's scheduling enums (``fusecli.frontend.enums``), made at the first import as
nvFuser's are: importing one while the other is imported warns as nvFuser does ("Be careful!
..."). On exit the previous entries come back, so a real nvFuser,
imported or not, stays untouched.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib.abc
import importlib.util
import sys
import types
import warnings
from collections.abc import Iterator

import torch

import fusecli.frontend as frontend
from fusecli.frontend import enums
from fusecli.frontend.version import NvfuserVersion, Version
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType

MODULE_NAMES = ("nvfuser", "nvfuser_direct")
# Each frontend's version module, and the other frontend, importing which first makes it warn.
VERSION_MODULES = {"nvfuser": "nvfuser_version", "nvfuser_direct": "nvfuser_direct_version"}
OTHER_FRONTEND = {"nvfuser": "nvfuser_direct", "nvfuser_direct": "nvfuser"}

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


def python_scalar_to_nvfuser_dtype(value: object) -> DataType:
    """nvFuser's ``pytorch_utils.python_scalar_to_nvfuser_dtype``: the dtype of a Python number."""
    return _PYTHON_TYPES[type(value)]


def retry_on_oom_or_skip_test(function):
    """nvFuser's test decorator: on ``torch.OutOfMemoryError`` free what can be freed and retry
    once; a second one skips the test."""

    @functools.wraps(function)
    def retried(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except torch.OutOfMemoryError:
            pass
        gc.collect()
        try:
            return function(*args, **kwargs)
        except torch.OutOfMemoryError as error:
            import pytest

            pytest.skip(f"Test failed due to OutOfMemoryError: {error}")

    return retried


def _submodule(parent: types.ModuleType, dotted: str, **attributes: object) -> None:
    """``parent.a.b...`` as (package) modules, the last holding ``attributes``."""
    module = parent
    for part in dotted.split("."):
        child = getattr(module, part, None)
        if child is None:
            child = types.ModuleType(f"{module.__name__}.{part}")
            child.__path__ = []
            setattr(module, part, child)
        module = child
    for key, value in attributes.items():
        setattr(module, key, value)


def shim_module(name: str) -> types.ModuleType:
    """A fresh module named ``name`` with the frontend's API and a ``pytorch_utils`` submodule."""
    module = types.ModuleType(name, frontend.__doc__)
    for attribute in frontend.__all__:
        setattr(module, attribute, getattr(frontend, attribute))
    if name == "nvfuser_direct":
        from fusecli.frontend.direct import DirectFusionDefinition

        module.FusionDefinition = DirectFusionDefinition
        for key, value in {**enums.direct_enums(), **enums.direct_placeholders()}.items():
            setattr(module, key, value)
        for key, scope in enums.DIRECT_SCOPE_MODULES.items():
            setattr(module, key, enums.ScopeModule(f"{name}.{key}", scope))
    else:
        for key, value in enums.legacy_enums().items():
            setattr(module, key, value)
    module.__path__ = []  # a package, so that ``import nvfuser.pytorch_utils`` is understood
    module.__version__ = frontend.version()
    _submodule(module, VERSION_MODULES[name], __version__=module.__version__,
               NvfuserVersion=NvfuserVersion, Version=Version)
    _submodule(module, "pytorch_utils",
               torch_dtype_to_nvfuser_dtype=torch_dtype_to_nvfuser_dtype,
               python_scalar_to_nvfuser_dtype=python_scalar_to_nvfuser_dtype,
               retry_on_oom_or_skip_test=retry_on_oom_or_skip_test)
    if name == "nvfuser":  # nvFuser's instance norm modules, built on the frontend
        from fusecli.frontend import contrib

        _submodule(module, "contrib.nn.normalization",
                   **{key: getattr(contrib, key) for key in contrib.__all__})
    return module


def submodules(module: types.ModuleType) -> dict[str, types.ModuleType]:
    """Every submodule made under ``module``, by its dotted name."""
    found = {}
    for value in vars(module).values():
        if isinstance(value, types.ModuleType) and value.__name__.startswith(module.__name__ + "."):
            found[value.__name__] = value
            found.update(submodules(value))
    return found


class _Frontends(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``nvfuser`` and ``nvfuser_direct`` first on ``sys.meta_path``; remembers every
    module it put in ``sys.modules``."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None):
        if name not in MODULE_NAMES:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec) -> types.ModuleType:
        return shim_module(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        self.made.append(module.__name__)
        for name, child in submodules(module).items():
            sys.modules[name] = child
            self.made.append(name)
        other = OTHER_FRONTEND[module.__name__]
        if other in sys.modules:
            warnings.warn(
                f"Be careful! You've imported {module.__name__} when the {other} module is "
                "already imported.",
                UserWarning,
                stacklevel=2,
            )


def _owned(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in MODULE_NAMES)


@contextlib.contextmanager
def nvfuser_modules() -> Iterator[None]:
    saved = {name: module for name, module in sys.modules.items() if _owned(name)}
    for name in saved:
        del sys.modules[name]
    finder = _Frontends()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in finder.made:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
