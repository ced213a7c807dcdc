"""The frontend's version, compared as nvFuser's is (``nvfuser_direct.nvfuser_direct_version``).

``version()`` is a string that compares with strings and with ``packaging`` versions by release
number, ignoring the local part after ``+``: ``version() > "0.0.0"`` and
``version() > Version("0.0.0")`` hold. The local part says it is fusecli's stand-in.
``packaging`` is imported when a version is compared, as nvFuser does: importing the frontend
does not need it.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def _packaging_version() -> type:
    from packaging.version import Version as PackagingVersion

    return PackagingVersion


class _LazyVersion:
    """``packaging.version.Version``, imported on first use: calling it makes one, and
    ``isinstance(v, Version)`` asks packaging's class."""

    def __call__(self, text: str) -> Any:
        return _packaging_version()(text)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, _packaging_version())


Version = _LazyVersion()


class NvfuserVersion(str):
    """A version string whose comparisons are those of its release number."""

    @staticmethod
    def _as_version(version: Any) -> Any:
        if isinstance(version, _packaging_version()):
            return version
        if isinstance(version, str):
            return Version(version.split("+")[0])
        raise ValueError(f"can't convert {version!r} to Version")

    def _compare(self, other: Any, method: str) -> bool:
        return getattr(self._as_version(self), method)(self._as_version(other))

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, "__gt__")

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, "__lt__")

    def __ge__(self, other: Any) -> bool:
        return self._compare(other, "__ge__")

    def __le__(self, other: Any) -> bool:
        return self._compare(other, "__le__")

    def __eq__(self, other: Any) -> bool:
        return self._compare(other, "__eq__")

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = str.__hash__


def version() -> NvfuserVersion:
    """The version a repro header names: fusecli's, its local part marking the stand-in."""
    return NvfuserVersion(f"{__version__}+fusecli")


__all__ = ["NvfuserVersion", "Version", "__version__", "version"]
