"""Loading repros: Python scripts printed by nvFuser or Thunder, and fusecli's YAML format.

``load_path`` reads one file into a list of ``LoadedFusion`` (one per execute call or YAML
document); ``discover`` expands folders into the repro files they hold; ``convert_file`` turns
a Python repro into YAML and back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from fusecli.errors import InputError
from fusecli.load.convert import convert_file, to_python, to_yaml
from fusecli.load.model import LoadedFusion
from fusecli.load.python import load_python
from fusecli.load.yaml_format import load_yaml

SUFFIXES = (".py", ".yaml", ".yml")


def load_path(
    path: str | Path,
    *,
    device: str = "auto",
    seed: int = 0,
    all_calls: bool = False,
    evaluate: bool = True,
) -> list[LoadedFusion]:
    """The fusions of the file at ``path``: a ``.py`` script, or ``.yaml``/``.yml``.

    ``all_calls``: a script's repeated ``fd.execute`` calls with one input signature are each
    a fusion to check, not one. ``evaluate=False``: a script's execute calls are not evaluated
    by eager torch (explaining needs no outputs; inputs eager torch refuses still load)."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", str(path))
    if path.is_dir():
        raise InputError("is a folder; give the files, or let discover() expand it", str(path))
    suffix = path.suffix.lower()
    if suffix == ".py":
        return load_python(
            path, device=device, seed=seed, all_calls=all_calls, evaluate=evaluate
        )
    if suffix in (".yaml", ".yml"):
        return load_yaml(path, device=device, seed=seed)
    raise InputError(
        f"cannot load a {suffix or 'suffix-less'} file: expected one of {', '.join(SUFFIXES)}",
        str(path),
    )


def discover(paths: Iterable[str | Path], skipped: list[Path] | None = None) -> list[Path]:
    """Files as given, and folders expanded (recursively) into their repro files, sorted.

    Inside folders, only files that look like repros are taken: Python that imports
    ``nvfuser``, ``nvfuser_direct`` or fusecli or names ``FusionDefinition`` (a ``setup.py`` or a
    helper module is code that runs with the user's privileges, and no repro), and YAML with a
    ``fusecli_yaml`` version. Files whose name starts with ``_`` or ``.`` and README files are
    skipped too. A file named explicitly is always kept. Files passed over for not looking like
    repros are appended to ``skipped``.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            found.append(path)
            continue
        for candidate in sorted(path.rglob("*")):
            if (
                not candidate.is_file()
                or candidate.suffix.lower() not in SUFFIXES
                or _skipped(candidate.relative_to(path))
            ):
                continue
            if looks_like_repro(candidate):
                found.append(candidate)
            elif skipped is not None:
                skipped.append(candidate)
    return found


_PYTHON_REPRO = re.compile(
    r"^[ \t]*(?:from|import)[ \t]+(?:nvfuser|nvfuser_direct|fusecli)\b|\bFusionDefinition\b",
    re.MULTILINE,
)
_YAML_REPRO = re.compile(r"^fusecli_yaml[ \t]*:", re.MULTILINE)
_SNIFF_BYTES = 1 << 20


def looks_like_repro(path: Path) -> bool:
    """Whether the file's text is a fusion: see ``discover``. Unreadable files are not."""
    try:
        with path.open("rb") as handle:
            text = handle.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    pattern = _PYTHON_REPRO if path.suffix.lower() == ".py" else _YAML_REPRO
    return pattern.search(text) is not None


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
    "looks_like_repro",
    "to_python",
    "to_yaml",
]
