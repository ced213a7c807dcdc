"""Invalid programs are rejected where nvFuser rejects them: at definition when the sizes are
known there, when the inputs are bound otherwise; exit 2, one line naming the op, no traceback."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.cli.main import cli, register

register()

HEADER = """\
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape={shape}, contiguity=[True, True], dtype=DataType.Float)
"""

CASES = {
    "reshape_counts": ("[2, 3]", "T1 = fd.ops.reshape(T0, new_shape=[4, 2])",
                       "[torch.randn(2, 3)]",
                       ":5: reshape: Total element counts across view operation must match: "
                       "6 vs 8"),
    "reshape_counts_at_run_time": (
        "[-1, -1]", "T1 = fd.ops.reshape(T0, new_shape=[4, 2])", "[torch.randn(2, 3)]",
        "reshape (expr 0): Total element counts across view operation must match: 6 vs 8 "
        "(the inputs make a tensor of shape [2, 3], to be reshaped into [4, 2])"),
    "pad_widths": ("[2, 3]", "T1 = fd.ops.pad(T0, [-2, -2])", "[torch.randn(2, 3)]",
                   ":5: pad: Invalid resized domain extent -1: negative padding makes a dimension"),
    "pad_widths_at_run_time": (
        "[-1, -1]", "T1 = fd.ops.pad(T0, [-2, -2])", "[torch.randn(2, 3)]",
        "pad (expr 0): Invalid resized domain extent -1 for dimension 1 of its output with these "
        "inputs (negative padding)"),
    "dims_out_of_range": ("[2, 3]", "T1 = fd.ops.sum(T0, [2])", "[torch.randn(2, 3)]",
                          ":5: sum: Tried to access out of boundary index 2. total index: 2 "
                          "(dim 2 is out of range for a tensor of rank 2)"),
    "permute_twice": ("[2, 3]", "T1 = fd.ops.permute(T0, [0, 0])", "[torch.randn(2, 3)]",
                      ":5: permute: got duplicated dimension entries: 0, 0"),
    "squeeze_not_one_at_run_time": (
        "[-1, -1]", "S0 = fd.define_scalar(None, dtype=DataType.Int)\n"
        "T2 = fd.ops.reshape(T0, [2, S0, -1])\nT1 = fd.ops.squeeze(T2, [1])",
        "[torch.randn(2, 3), 3]",
        "squeeze (expr 1): dimension 1 is squeezed but has size 3 for these inputs"),
}


def _script(tmp_path: Path, name: str, shape: str, body: str, inputs: str) -> Path:
    path = tmp_path / f"{name}.py"
    lines = HEADER.format(shape=shape) + textwrap.indent(body + "\nfd.add_output(T1)\n", "    ")
    path.write_text(lines + f"fd.execute({inputs})\n")
    return path


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_invalid_program_exits_2_naming_the_op(tmp_path, name) -> None:
    shape, body, inputs, message = CASES[name]
    path = _script(tmp_path, name, shape, body, inputs)
    result = CliRunner().invoke(cli, ["run", str(path), "--json"])
    assert result.exit_code == 2, result.output
    (fusion,) = json.loads(result.stdout)["fusions"]
    assert fusion["status"] == "error" and message in fusion["error"], fusion["error"]
    assert "Traceback" not in result.output
    assert "ScalarExtent" not in fusion["error"] and "uid=" not in fusion["error"]


def test_a_squeeze_of_a_size_known_at_run_time_is_accepted_when_it_is_one(tmp_path) -> None:
    body = ("S0 = fd.define_scalar(None, dtype=DataType.Int)\n"
            "T2 = fd.ops.reshape(T0, [2, S0, -1])\nT1 = fd.ops.squeeze(T2, [1])")
    path = _script(tmp_path, "squeeze_one", "[-1, -1]", body, "[torch.randn(2, 3), 1]")
    result = CliRunner().invoke(cli, ["run", str(path)])
    assert result.exit_code == 0, result.output
    assert "1 passed" in result.stdout


def test_an_alias_of_another_shape_is_rejected_at_definition(tmp_path) -> None:
    path = tmp_path / "alias.py"
    path.write_text(textwrap.dedent("""\
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            T0 = fd.define_tensor(shape=[2, 3], contiguity=[True, True], dtype=DataType.Float)
            T1 = fd.define_tensor(shape=[3], contiguity=[True], dtype=DataType.Float)
            T2 = fd.ops.add(T1, T1)
            fd.add_output(T2, alias_input=T0)
        fd.execute([torch.randn(2, 3), torch.randn(3)])
        """))
    result = CliRunner().invoke(cli, ["run", str(path), "--json"])
    assert result.exit_code == 2
    (fusion,) = json.loads(result.stdout)["fusions"]
    assert fusion["error"].endswith(
        ":7: add_output: output aliased to input 0: the output's shape [3] is not the input's "
        "[2, 3]"
    )
