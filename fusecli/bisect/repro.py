"""Writing what bisect found as repros: a runnable nvFuser-style Python script and YAML.

Both carry a header naming the versions, the failure kind and how to run them. Input values are
written exactly (up to ``EXACT_LIMIT`` elements per tensor; bisect's repros are small by then),
because a part of a fusion is fed with recorded intermediate values that no distribution draws.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from fusecli.app.pipeline import RunOptions
from fusecli.bisect.check import Verdict
from fusecli.bisect.oracle import Target
from fusecli.load.convert import exact_specs
from fusecli.textsafe import one_line


def executor_name(requested: str) -> str:
    """The executor that runs for ``requested`` (``auto`` resolves to one)."""
    from fusecli.runtime import get_executor

    try:
        return get_executor(requested).name
    except Exception:
        return requested


def repro_header(
    source: str,
    what: str,
    target: Target | None,
    verdict: Verdict | None,
    options: RunOptions,
) -> list[str]:
    """Comment lines: what this is, the failure, the versions, the fault injected, how to run."""
    import torch

    from fusecli import __version__

    lines = [f"fusecli bisect: {what}, from {source}"]
    if target is not None:
        lines.append(f"failure: {target.describe()}")
    if verdict is not None and verdict.failed:
        lines.append(f"the original showed: {verdict.summary()[:300]}")
    lines.append(
        f"versions: fusecli {__version__}, torch {torch.__version__}, "
        f"python {platform.python_version()}; executor {executor_name(options.executor)}, "
        f"rules {options.rules}, seed {options.seed}"
    )
    faults = os.environ.get("FUSECLI_INJECT_FAULT", "").strip()
    if faults:
        lines.append(
            f"fault injection: FUSECLI_INJECT_FAULT={faults} was set; without it this passes"
        )
    return lines


def write_repro(
    loaded: Any, directory: Path, stem: str, header: Sequence[str], *, yaml: bool = True
) -> tuple[Path, Path | None]:
    """``directory/stem.py`` and (with ``yaml``) ``directory/stem.yaml``, each with ``header``
    on top."""
    from fusecli.load.convert import to_python, to_yaml

    directory.mkdir(parents=True, exist_ok=True)
    exact = replace(loaded, input_specs=exact_specs(loaded))
    py_path = directory / f"{stem}.py"
    yaml_path = directory / f"{stem}.yaml" if yaml else None
    also = f"  (or {yaml_path.name})" if yaml_path else ""
    lines = [*header, f"run it: fusecli run {py_path.name}{also}"]
    comment = "".join(f"# {one_line(line)}\n" for line in lines)
    py_path.write_text(comment + to_python(exact), encoding="utf-8")
    if yaml_path is not None:
        yaml_path.write_text(comment + to_yaml(exact), encoding="utf-8")
    return py_path, yaml_path


def write_yaml_repro(
    loaded: Any, path: Path, header: Sequence[str], exact_limit: int | None = None
) -> Path:
    """``loaded`` as a YAML repro at ``path`` alone, ``header`` on top; inputs exact up to
    ``exact_limit`` elements (by default ``EXACT_LIMIT``)."""
    from fusecli.load.convert import EXACT_LIMIT, to_yaml

    exact = replace(loaded, input_specs=exact_specs(loaded, exact_limit or EXACT_LIMIT))
    lines = [*header, f"run it: fusecli run {path.name}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    comment = "".join(f"# {one_line(line)}\n" for line in lines)
    path.write_text(comment + to_yaml(exact), encoding="utf-8")
    return path
