"""A folder of zero-size, crashing and valid fusions: a run over it must report each one.

Shared by the CPU test (``test_cli_robustness``) and the GPU test (``test_codegen_cuda``), which
runs the same folder through the CuPy executor.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

HEADER = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
"""

SCRIPTS = {
    "a_valid": ("fd.add_output(fd.ops.exp(t0))", "torch.randn(4, 8)"),
    "b_empty_pointwise": ("fd.add_output(fd.ops.relu(t0))", "torch.randn(0, 3)"),
    "c_sum_over_empty": ("fd.add_output(fd.ops.sum(t0, [0]))", "torch.randn(0, 3)"),
    "d_prod_over_empty": ("fd.add_output(fd.ops.prod(t0, [1]))", "torch.randn(3, 0)"),
    "e_empty_cat_piece": ("fd.add_output(fd.ops.cat([t0, fd.ops.exp(t0)], 0))",
                          "torch.randn(0, 5)"),
    "f_softmax_of_empty_rows": (
        "m = fd.ops.max(t0, [1], keepdim=True)\n"
        "    e = fd.ops.exp(fd.ops.sub(t0, m))\n"
        "    fd.add_output(fd.ops.div(e, fd.ops.sum(e, [1], keepdim=True)))",
        "torch.randn(0, 16)"),
    "g_crashes": ("fd.add_output(fd.ops.neg(t0))", "torch.randn(4, 8)"),
    "h_valid": ("fd.add_output(fd.ops.tanh(t0))", "torch.randn(64, 32)"),
}


def write_mixed_corpus(folder: Path, device: str = "cpu") -> Path:
    for name, (body, tensor) in SCRIPTS.items():
        tensor = tensor.replace(")", f", device={device!r})", 1) if device != "cpu" else tensor
        text = HEADER + f"    {body}\n\nfd.execute([{tensor}])\n"
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


def crash_when_named(monkeypatch, file_name: str) -> None:
    """Make running the fusions of ``file_name`` raise an internal error (a fusecli bug). The
    patch is in this process: files run here, not in workers."""
    from fusecli.app import pipeline

    monkeypatch.setenv("FUSECLI_IN_PROCESS", "1")
    real = pipeline.run_loaded

    def crash_on_a(loaded, options):
        if loaded.path.name == file_name:
            raise ZeroDivisionError("integer modulo by zero")
        return real(loaded, options)

    monkeypatch.setattr(pipeline, "run_loaded", crash_on_a)


def run_mixed_corpus(folder: Path, monkeypatch, cli, *extra: str) -> dict:
    """``fusecli run FOLDER --json`` with ``g_crashes`` raising an internal error."""
    crash_when_named(monkeypatch, "g_crashes.py")
    result = CliRunner().invoke(cli, ["run", str(folder), "--json", *extra])
    assert result.exit_code == 3, result.output  # the crash: the worst exit of the run
    document = json.loads(result.stdout)
    by_name = {Path(f["path"]).stem: f for f in document["fusions"]}
    assert sorted(by_name) == sorted(SCRIPTS)
    assert by_name["g_crashes"]["status"] == "error"
    for name in SCRIPTS:
        if name != "g_crashes":
            assert by_name[name]["status"] == "pass", (name, by_name[name])
    return by_name
