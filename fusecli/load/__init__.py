"""Loading repros: Python scripts printed by nvFuser or Thunder, fusecli's YAML format, and
repros inside text (an issue saved as Markdown, an error message, a log: ``load.embedded``).

``load_path`` reads one file into a list of ``LoadedFusion`` (one per execute call or YAML
document); ``discover`` expands folders into the repro files they hold; ``convert_file`` turns
a Python repro into YAML and back.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path

from fusecli.errors import InputError
from fusecli.load.convert import convert_file, to_python, to_yaml
from fusecli.load.embedded import TEXT_SUFFIXES, Extracted, extract_repro
from fusecli.load.model import LoadedFusion
from fusecli.load.python import load_python
from fusecli.load.source_text import decode_source, read_source
from fusecli.load.yaml_format import load_yaml

SUFFIXES = (".py", ".yaml", ".yml", *TEXT_SUFFIXES)


def load_path(
    path: str | Path,
    *,
    device: str = "auto",
    seed: int = 0,
    all_calls: bool = False,
    evaluate: bool = True,
) -> list[LoadedFusion]:
    """The fusions of the file at ``path``: a ``.py`` script, ``.yaml``/``.yml``, or the repro
    inside a text (``.md``, ``.txt``, ``.log``, ..., no suffix, or a ``.py`` file that is no
    Python but holds one), loaded as a script is, with a notice saying which part was taken.

    ``all_calls``: a script's repeated ``fd.execute`` calls with one input signature are each
    a fusion to check, not one. ``evaluate=False``: a script's execute calls are not evaluated
    by eager torch (explaining needs no outputs; inputs eager torch refuses still load)."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", str(path))
    if path.is_dir():
        raise InputError("is a folder; give the files, or let discover() expand it", str(path))
    suffix = path.suffix.lower()
    options = {"device": device, "seed": seed, "all_calls": all_calls, "evaluate": evaluate}
    if suffix in TEXT_SUFFIXES or not suffix:
        return _load_embedded(path, _extracted(path), **options)
    if suffix == ".py":
        embedded = _embedded_in_non_python(path)
        if embedded is not None:
            return _load_embedded(path, embedded, **options)
        return load_python(path, **options)
    if suffix in (".yaml", ".yml"):
        return load_yaml(path, device=device, seed=seed)
    raise InputError(
        f"cannot load a {suffix or 'suffix-less'} file: expected one of {', '.join(SUFFIXES)}",
        str(path),
    )


def runs_code(path: Path) -> bool:
    """Whether loading ``path`` executes a script (Python, or a repro inside text), which may
    exit, fork, ignore signals or hang: everything but YAML, whose definition runs in
    ``load.restricted``, and a path that is no file (its error needs no script to run)."""
    path = Path(path)
    return path.suffix.lower() not in (".yaml", ".yml") and path.is_file()


def _extracted(path: Path) -> Extracted:
    try:
        text = decode_source(path.read_bytes(), errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc}", str(path)) from None
    return extract_repro(text, path)


def _embedded_in_non_python(path: Path) -> Extracted | None:
    """The repro in a ``.py`` file that does not parse (an issue or log saved as .py); None
    for a file that parses, or holds no repro (``load_python`` reports it as it always has)."""
    try:
        text = read_source(path)
    except (OSError, UnicodeDecodeError):
        return None
    try:
        ast.parse(text)
        return None
    except SyntaxError:
        pass
    except (ValueError, RecursionError):
        return None
    try:
        return extract_repro(text, path)
    except InputError:
        return None


def _load_embedded(path: Path, extracted: Extracted, **options) -> list[LoadedFusion]:
    loaded = load_python(path, source=extracted.source, **options)
    notice = extracted.notice(path.name)
    return [dataclasses.replace(fusion, notices=(notice, *fusion.notices)) for fusion in loaded]


def discover(paths: Iterable[str | Path], skipped: list[Path] | None = None) -> list[Path]:
    """Files as given, and folders expanded (recursively) into their repro files, sorted.

    Repro scripts run as code with the user's privileges, so inside folders only files that
    look like repros are taken: Python that imports ``nvfuser``, ``nvfuser_direct`` or fusecli
    or names ``FusionDefinition``, and YAML with a ``fusecli_yaml`` version. Never taken from a
    folder: ``setup.py``, ``conftest.py`` and test modules (``test_*.py``, ``*_test.py``: they
    run under pytest, not as scripts), files whose name starts with ``_`` or ``.``, README
    files, and anything inside hidden folders, ``__pycache__``, virtual environments (``venv``,
    ``.venv``, any folder holding a ``pyvenv.cfg`` or ``conda-meta``), ``site-packages`` and
    ``node_modules``.
    Text files (``.md``, ``.txt``, ``.log``, ...) are taken when they hold an embedded repro and
    passed over silently otherwise. A file named explicitly is always kept. Code files passed
    over for their name or for not looking like repros are appended to ``skipped``.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            found.append(path)
            continue
        for candidate in _files_below(path):
            suffix = candidate.suffix.lower()
            if suffix not in SUFFIXES or _never_a_repro(candidate.name):
                continue
            if not _not_a_script(candidate.name) and looks_like_repro(candidate):
                found.append(candidate)
            elif skipped is not None and suffix not in TEXT_SUFFIXES:
                skipped.append(candidate)
    return found


_ENVIRONMENT_FOLDERS = frozenset({"site-packages", "dist-packages", "node_modules", "venv"})
_ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")  # a virtual or conda environment's root


def _files_below(folder: Path) -> list[Path]:
    """The files below ``folder``, sorted, without descending into folders that hold no
    repros: hidden ones, ``_``-prefixed ones (``__pycache__``), virtual environments and
    package trees. Symbolic links to folders are not followed (no loops)."""
    files: list[Path] = []
    for root, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if _may_hold_repros(Path(root) / name)]
        files += [Path(root) / name for name in names if (Path(root) / name).is_file()]
    return sorted(files)


def _may_hold_repros(folder: Path) -> bool:
    if folder.name.startswith(("_", ".")) or folder.name.lower() in _ENVIRONMENT_FOLDERS:
        return False
    return not any((folder / marker).exists() for marker in _ENVIRONMENT_MARKERS)


def _never_a_repro(name: str) -> bool:
    """Names discovery passes over silently: hidden and private files, READMEs."""
    return name.startswith(("_", ".")) or Path(name).stem.upper() == "README"


def _not_a_script(name: str) -> bool:
    """Python that runs under a tool, not as a script: packaging and pytest's files."""
    lowered = name.lower()
    return lowered in ("setup.py", "conftest.py") or (
        lowered.endswith(".py") and (lowered.startswith("test_") or lowered.endswith("_test.py"))
    )


_PYTHON_REPRO = re.compile(
    r"^[ \t]*(?:from|import)[ \t]+(?:nvfuser|nvfuser_direct|fusecli)\b|\bFusionDefinition\b",
    re.MULTILINE,
)
_YAML_REPRO = re.compile(r"^fusecli_yaml[ \t]*:", re.MULTILINE)
_SNIFF_BYTES = 1 << 20


def looks_like_repro(path: Path) -> bool:
    """Whether the file's text is a fusion, or holds one (a text file): see ``discover``.
    Unreadable files are not."""
    try:
        with path.open("rb") as handle:
            text = decode_source(handle.read(_SNIFF_BYTES), errors="replace")
    except OSError:
        return False
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        try:
            extract_repro(text, path)
        except InputError:
            return False
        return True
    pattern = _PYTHON_REPRO if suffix == ".py" else _YAML_REPRO
    return pattern.search(text) is not None


__all__ = [
    "LoadedFusion",
    "convert_file",
    "discover",
    "extract_repro",
    "load_path",
    "load_python",
    "load_yaml",
    "looks_like_repro",
    "runs_code",
    "to_python",
    "to_yaml",
]
