"""Loading repros: Python scripts printed by nvFuser or Thunder, and fusecli's YAML format.

``load_path`` reads one file into a list of ``LoadedFusion`` (one per execute call or YAML
document); ``discover`` expands folders into the repro files they hold; ``convert_file`` turns
a Python repro into YAML and back.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fusecli.errors import InputError
from fusecli.load.convert import convert_file, to_python, to_yaml
from fusecli.load.model import LoadedFusion
from fusecli.load.python import load_python
from fusecli.load.yaml_format import load_yaml

SUFFIXES = (".py", ".yaml", ".yml")


def load_path(path: str | Path, *, device: str = "auto", seed: int = 0) -> list[LoadedFusion]:
    """The fusions of the file at ``path``: a ``.py`` script, or ``.yaml``/``.yml``."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", str(path))
    if path.is_dir():
        raise InputError("is a folder; give the files, or let discover() expand it", str(path))
    suffix = path.suffix.lower()
    if suffix == ".py":
        return load_python(path, device=device, seed=seed)
    if suffix in (".yaml", ".yml"):
        return load_yaml(path, device=device, seed=seed)
    raise InputError(
        f"cannot load a {suffix or 'suffix-less'} file: expected one of {', '.join(SUFFIXES)}",
        str(path),
    )


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, and folders expanded (recursively) into their repro files, sorted.

    Inside folders, files whose name starts with ``_`` or ``.`` and README files are skipped;
    a file named explicitly is always kept.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            found.append(path)
            continue
        found += sorted(
            candidate
            for candidate in path.rglob("*")
            if candidate.is_file()
            and candidate.suffix.lower() in SUFFIXES
            and not _skipped(candidate.relative_to(path))
        )
    return found


def _skipped(relative: Path) -> bool:
    if any(part.startswith(("_", ".")) for part in relative.parts):
        return True  # also __pycache__ and hidden folders
    return relative.stem.upper() == "README"


__all__ = [
    "LoadedFusion",
    "convert_file",
    "discover",
    "load_path",
    "load_python",
    "load_yaml",
    "to_python",
    "to_yaml",
]
