"""No name becomes code: every file fusecli writes escapes the names, paths and notes it got
from a user's script or YAML file (DESIGN.md, "Generated files").

A hostile corpus (fusion names, input notes and file names holding newlines, CR, both kinds of
quotes, triple quotes, backslashes, ``*/`` and ``#include``, ANSI escapes, NUL, line
separators and bytes that are not UTF-8) goes through every command that writes or runs code:
``convert`` to each target, ``bisect`` with fusecli's engine and with ``--engine nvfuser``
(the stand-in in ``tests/standin``), and ``codegen``. Each name carries a statement that would
create a marker file if it ever ran. The marker must never appear; every generated ``.py``
parses, calls no ``open`` and has no line starting with the statement; generated YAML loads
back with the same name; C and Markdown gain no line the name started. A file name cannot hold
NUL or ``/`` on POSIX file systems, so those are tried in names inside files only.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from fusecli.cli.main import cli, register
from fusecli.load.yaml_format import load_yaml
from fusecli.textsafe import md_code, md_fence, one_line

register()

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "standin"
INJECTED = "import os; open(os.environ['HOSTILE_MARKER'], 'w').write('1')"
BAD_LINE_STARTS = (INJECTED, "#include", "# heading")

NAMES = {
    "newline": f"x\n{INJECTED}",
    "cr": f"x\r{INJECTED}",
    "quotes": f"'\"'''\"\"\"\n{INJECTED}\n'''",
    "backslash": f"x\\\n{INJECTED}\\",
    "c_comment": f"*/\n#include <stdio.h>\n{INJECTED}\n/*",
    "ansi": f"\x1b[2K\x1b[1A\n{INJECTED}",
    "nul": f"nul\x00\n{INJECTED}",
    "separators": f"\u2028{INJECTED}\x85{INJECTED}\u2029\x0c\x0b",
    "surrogate": f"bad\udcff\udc80\n{INJECTED}",
    "markdown": f"```\n# heading\n{INJECTED}\n`",
    "rich_markup": f"[/]x[bold][link=file:///etc]\n{INJECTED}",
}
FILE_STEMS = {  # no "/" and no NUL: the file system refuses them
    "newline": f"evil\n{INJECTED}",
    "cr_ansi_quotes": f"evil\r\x1b[31m'\"'''\"\"\"\\\n#include <x>\n{INJECTED}",
    "not_utf8": f"bad\udcff\udc80\n{INJECTED}",
}
ALL_IN_ONE = "".join(NAMES.values())

DEFINITION = """\
def nvfuser_fusion(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.exp(T0)
    fd.add_output(T1)
"""
SCRIPT = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.exp(T0)
    fd.add_output(T1)

inputs = [torch.ones(2, 3)]
fd.execute(inputs)
"""


def _yaml_text(name: str) -> str:
    document = {
        "fusecli_yaml": 1, "name": name, "definition": DEFINITION,
        "inputs": [{"kind": "tensor", "dtype": "float32", "shape": [2, 3], "strides": [3, 1],
                    "note": name}],
    }
    return yaml.safe_dump(document, sort_keys=False)


def _hostile_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """(source file, the name fusecli gives its fusion) per hostile case."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for key, name in NAMES.items():
        path = folder / f"name_{key}.yaml"
        path.write_text(_yaml_text(name), encoding="utf-8")
        files[f"name_{key}"] = (path, name)
    for key, stem in FILE_STEMS.items():
        script = folder / f"{stem}.py"
        script.write_text(SCRIPT, encoding="utf-8")
        files[f"file_{key}"] = (script, stem)
    return files


def _marker_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HOSTILE_MARKER": str(tmp_path / "PWNED")}


def _assert_no_injection(tmp_path: Path, folder: Path) -> None:
    """The marker was never made, and nothing generated under ``folder`` lets a name out."""
    assert not (tmp_path / "PWNED").exists(), "an injected statement ran"
    generated = [p for p in folder.rglob("*") if p.is_file()]
    for path in generated:
        if path.suffix not in (".py", ".yaml", ".cu", ".md", ".txt"):
            continue
        text = path.read_text(encoding="utf-8")  # strict: a lone surrogate cannot be written
        _assert_lines_safe(text, path)
        if path.suffix == ".py":
            tree = ast.parse(text, filename=str(path))
            calls = [node.func.id for node in ast.walk(tree)
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
            assert "open" not in calls, path
        elif path.suffix == ".yaml":
            assert list(yaml.safe_load_all(text)), path


def _assert_lines_safe(text: str, where: object, lines: list[str] | None = None) -> None:
    for line in text.splitlines() if lines is None else lines:
        assert not line.lstrip().startswith(BAD_LINE_STARTS), (where, line)


# -- the helpers themselves ------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(NAMES))
def test_one_line_leaves_no_way_out_of_a_comment(key: str) -> None:
    line = one_line(NAMES[key])
    assert len(line.splitlines()) == 1 and line.isprintable()
    assert "*/" not in line and not line.endswith("\\")
    line.encode("utf-8")  # lone surrogates are escaped, so the file can be written
    ast.parse(f"# {line}\nx = 1\n")


def test_one_line_is_reversible_and_keeps_plain_names() -> None:
    assert one_line("rms_norm#2 (bf16) 'x'") == "rms_norm#2 (bf16) 'x'"
    for name in NAMES.values():
        text = one_line(name)
        assert text.encode("ascii", "backslashreplace").decode("unicode_escape") == name


def test_markdown_spans_and_fences_cannot_close_early() -> None:
    span = md_code("a ``` b `")
    assert span.startswith("````") and span.endswith("````")
    fence = md_fence("x = 1\n```\n# heading", "python")
    assert fence[0] == "````python" and fence[-1] == "````" and "```" in fence[2]


# -- the commands ----------------------------------------------------------------------------


def test_convert_writes_no_name_as_code(tmp_path: Path) -> None:
    """Every target, every case; then the Python outputs run (``fusecli run``: each file in a
    process of its own) and the YAML outputs load back with the same name."""
    files = _hostile_files(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    runner = CliRunner()
    for key, (source, name) in files.items():
        for target, suffix in (("python", ".py"), ("direct", "_direct.py"), ("yaml", ".yaml")):
            written = out / f"{key}{suffix}"
            result = runner.invoke(cli, ["convert", str(source), "--to", target, "-o",
                                         str(written)])
            assert result.exit_code == 0, (key, target, result.output)
        (loaded,) = load_yaml(out / f"{key}.yaml", device="cpu")
        assert loaded.name == name, key
    _assert_no_injection(tmp_path, out)
    python_outputs = sorted(str(p) for p in out.glob("*.py") if not p.stem.endswith("_direct"))
    ran = subprocess.run([sys.executable, "-m", "fusecli", "run", *python_outputs, "--json"],
                         capture_output=True, text=True, env=_marker_env(tmp_path), timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert not (tmp_path / "PWNED").exists()


def test_codegen_prints_no_name_into_kernels(tmp_path: Path) -> None:
    """The CUDA source carries no name; the name shown above it (a terminal view) takes no
    rich markup from it either, so ``[/]`` in a name is text, not an error."""
    files = _hostile_files(tmp_path / "in")
    for key, (source, _) in files.items():
        result = CliRunner().invoke(cli, ["codegen", str(source), "--device", "cpu"])
        assert result.exit_code == 0, (key, result.output)
        assert 'extern "C"' in result.stdout
        # a terminal breaks lines at LF only: what it shows must not start with the name's code
        _assert_lines_safe(result.stdout, key, result.stdout.split("\n"))
    assert not (tmp_path / "PWNED").exists()


def _bisect(tmp_path: Path, source: Path, *extra: str, env: dict[str, str]) -> Path:
    out = tmp_path / "bisect_out"
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(source), "-o", str(out), "--json",
         "-j", "2", *extra],
        capture_output=True, text=True, env={**_marker_env(tmp_path), **env}, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("case", ["file_not_utf8", "yaml_all_in_one"])
def test_bisect_runs_and_writes_no_name_as_code(tmp_path: Path, case: str) -> None:
    """fusecli's own engine with a planted fault: every question runs a written script in a
    fresh interpreter, so an injected line would run there."""
    if case == "yaml_all_in_one":
        source = tmp_path / f"{FILE_STEMS['cr_ansi_quotes']}.yaml"
        source.write_text(_yaml_text(ALL_IN_ONE), encoding="utf-8")
    else:
        source = _hostile_files(tmp_path / "in")[case][0]
    out = _bisect(tmp_path, source, env={"FUSECLI_INJECT_FAULT": "exp"})
    assert (out / "minimized.py").is_file() and (out / "minimized.yaml").is_file()
    _assert_no_injection(tmp_path, out)
    if case == "yaml_all_in_one":
        (loaded,) = load_yaml(out / "minimized.yaml", device="cpu")
        assert loaded.name == f"{ALL_IN_ONE}_minimized"


def test_bisect_of_nvfuser_writes_plain_repros_and_a_report_with_no_name_as_code(
    tmp_path: Path,
) -> None:
    """``--engine nvfuser`` through the stand-in: minimized.py runs alone (``python
    minimized.py``), and report.md quotes it inside a fence a name cannot close."""
    source = tmp_path / f"{FILE_STEMS['cr_ansi_quotes']}.yaml"
    source.write_text(_yaml_text(ALL_IN_ONE), encoding="utf-8")
    path = os.pathsep.join([str(STANDIN), str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = _bisect(tmp_path, source, "--engine", "nvfuser",
                  env={"PYTHONPATH": path, "FUSECLI_STANDIN_FAULTS": "assert:exp"})
    for written in ("minimized.py", "minimized.yaml", "report.md"):
        assert (out / written).is_file(), written
    _assert_no_injection(tmp_path, out)
    (loaded,) = load_yaml(out / "minimized.yaml", device="cpu")
    assert loaded.name == f"{ALL_IN_ONE}_minimized"


@pytest.mark.parametrize("key", sorted(NAMES))
def test_a_dot_graph_quotes_the_name_as_one_string(key: str) -> None:
    """``explain-segmentation --dot`` names a fusion whose segmentation failed: a quote in the
    name cannot end the label and add attributes (Graphviz reads files for some)."""
    from types import SimpleNamespace

    from fusecli.report.segmentation_view import dot_graph

    outcome = SimpleNamespace(segmented=None, loaded=SimpleNamespace(name=NAMES[key]))
    lines = dot_graph(outcome).split("\n")
    (failed,) = [line for line in lines if line.startswith("  failed [label=")]
    label = failed.removeprefix("  failed [label=").removesuffix("];")
    assert json.loads(label).endswith(": segmenter failed")
    assert lines[-2:] == ["}", ""] and len(lines) == 6
