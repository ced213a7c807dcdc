"""The package's shape, as DESIGN.md and the README's layout table describe it.

Data flows one way through the stages, so a stage imports only the stages before it: the IR
knows nothing of segmentation, the segmenter nothing of kernels, and so on up to the CLI. The
reference interpreter and the comparison are independent checks of the executors and import
only the IR. Every import counts, at module level or inside a function (a function-local import
hides a dependency; it does not remove it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fusecli"

# Lowest first. A package may import the packages of lower rank, and itself.
RANKS: dict[str, int] = {
    "": 0,  # fusecli/__init__.py: the version
    "errors": 0,
    "textsafe": 0,  # untrusted text made safe for generated files: every writer uses it
    "ir": 1,
    "segment": 2,
    "codegen": 3,
    "runtime": 4,
    "reference": 4,
    "compare": 4,
    "frontend": 5,
    "load": 6,
    "engines": 7,  # real nvFuser: runs a loaded fusion, parses its log into segment's data
    "app": 8,
    "bisect": 9,
    "report": 10,
    "cli": 11,
    "__main__": 12,
}

# The independent checks: besides themselves, only these.
ONLY: dict[str, frozenset[str]] = {
    "reference": frozenset({"", "errors", "ir"}),
    "compare": frozenset({"", "errors", "ir"}),
}

MAX_LINES = 400


def _package_of(module: str) -> str:
    """``fusecli.ir.nodes`` -> ``ir``; ``fusecli.errors`` -> ``errors``; ``fusecli`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _modules() -> list[tuple[Path, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.append((path, ".".join(parts)))
    return found


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported fusecli module) for every import statement in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package_parts = module.split(".")
    if path.name != "__init__.py":
        package_parts = package_parts[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("fusecli")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = package_parts[: len(package_parts) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == "fusecli":  # ``from fusecli import x``: x may be a module of its own
                found += [(node.lineno, _submodule(a.name)) for a in node.names]
            elif target.startswith("fusecli."):
                found.append((node.lineno, target))
    return found


def _submodule(name: str) -> str:
    """``fusecli.name`` if ``name`` is a module of the package, else ``fusecli`` itself."""
    if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file():
        return f"fusecli.{name}"
    return "fusecli"


def _violations(modules: list[tuple[Path, str]]) -> list[str]:
    problems = []
    for path, module in modules:
        own = _package_of(module)
        if own not in RANKS:
            problems.append(f"{module}: package {own!r} has no place in RANKS")
            continue
        for line, target in _imports(path, module):
            other = _package_of(target)
            if other == own:
                continue
            where = f"{module}:{line}"
            if other not in RANKS:
                problems.append(f"{where}: imports {target}, whose package has no rank")
            elif own in ONLY and other not in ONLY[own]:
                problems.append(f"{where}: {own} may import only {sorted(ONLY[own])}: {target}")
            elif RANKS[other] >= RANKS[own]:
                problems.append(
                    f"{where}: {own} (rank {RANKS[own]}) imports {target} "
                    f"(rank {RANKS[other]}): a stage may import only earlier ones"
                )
    return problems


def test_every_package_has_a_rank() -> None:
    packages = {_package_of(module) for _, module in _modules()}
    assert packages <= set(RANKS), sorted(packages - set(RANKS))


def test_stages_import_only_earlier_stages() -> None:
    problems = _violations(_modules())
    assert not problems, "\n".join(problems)


def test_modules_stay_under_400_lines() -> None:
    long = []
    for path, module in _modules():
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_LINES:
            long.append(f"{module}: {count} lines")
    assert not long, "split by concept: " + ", ".join(long)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("fusecli.ir.nodes", "from fusecli.runtime.aten import ATEN_OPS\n", "ir (rank 1)"),
        ("fusecli.reference.x", "def f():\n    from fusecli.runtime import y\n", "only"),
        ("fusecli.codegen.x", "from fusecli import runtime\n", "codegen (rank 3)"),
        ("fusecli.segment.x", "from ..runtime import bind\n", "segment (rank 2)"),
    ],
)
def test_the_checker_sees_a_violation(
    tmp_path: Path, module: str, source: str, expected: str
) -> None:
    """The checker itself can fail: a planted backwards import is reported."""
    path = tmp_path / "x.py"
    path.write_text(source, encoding="utf-8")
    problems = _violations([(path, module)])
    assert len(problems) == 1 and expected in problems[0], problems
