"""``import nvfuser`` inside a loaded script: fusecli's frontend, for that script only.

fusecli never installs a top-level ``nvfuser`` package. While ``nvfuser_modules()`` is active,
``sys.modules`` maps ``nvfuser`` and ``nvfuser_direct`` (and their ``pytorch_utils``, and
``nvfuser.contrib.nn.normalization``) to small module objects that hold fusecli's frontend; on
exit the previous entries come back, so a real nvFuser, imported or not, stays untouched.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import sys
import types
from collections.abc import Iterator

import torch

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
        from fusecli.frontend.definition import DirectFusionDefinition

        module.FusionDefinition = DirectFusionDefinition
    module.__path__ = []  # a package, so that ``import nvfuser.pytorch_utils`` is understood
    module.__version__ = frontend.__version__
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


@contextlib.contextmanager
def nvfuser_modules() -> Iterator[None]:
    entries: dict[str, types.ModuleType] = {}
    for name in MODULE_NAMES:
        module = shim_module(name)
        entries[name] = module
        entries.update(submodules(module))
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
