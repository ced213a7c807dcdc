"""``fusecli convert --to direct``: a repro in any spelling fusecli reads, written as today's
nvFuser (``nvfuser_direct``) takes it. Checked here through fusecli (which maps
``nvfuser_direct`` onto its frontend); ``scripts/check-direct-conversion.py`` runs the
converted files with real nvFuser on a GPU machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.cli.main import cli, register
from fusecli.load import load_path
from fusecli.load.convert import convert_file

register()

FUSIONS = Path(__file__).parent.parent / "fusions"
REPROS_2023 = Path(__file__).parent / "repros_2023"  # old spellings nvfuser_direct rejects
CORPUS = sorted(p for p in FUSIONS.iterdir() if p.suffix in (".py", ".yaml")) + sorted(
    REPROS_2023.glob("*.py")
)

OLD_SPELLINGS = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
    V1 = fd.define_vector(2)
    T2 = fd.ops.reshape(T0, V1)
    S3 = fd.define_scalar(2.0, dtype=DataType.Double)
    T5 = fd.ops.sum(fd.ops.mul(T2, S3), [1], False, DataType.Float)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.randn(4, 6, device="cuda"), [6, 4]]
fd.execute(inputs)
"""


def _same_fusions(original: Path, converted: Path) -> None:
    """The converted file defines the same fusions: on the original's inputs (a large input
    is stored as a seeded layout, not its values), every output is the same bit for bit, and
    every input has the same dtype, shape and strides."""
    import torch

    from fusecli.reference import run_reference
    from fusecli.runtime.bind import flatten_inputs

    before, after = load_path(original, device="cpu"), load_path(converted, device="cpu")
    assert len(before) == len(after)
    for first, second in zip(before, after):
        inputs = flatten_inputs(first.inputs)
        for a, b in zip(inputs, flatten_inputs(second.inputs), strict=True):
            if isinstance(a, torch.Tensor):
                assert (a.dtype, a.shape, a.stride()) == (b.dtype, b.shape, b.stride())
        want = run_reference(first.fusion, list(inputs)).outputs
        got = run_reference(second.fusion, list(inputs)).outputs
        assert len(want) == len(got) and all(torch.equal(x, y) for x, y in zip(want, got))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_corpus_fusion_converts_to_the_direct_spelling(tmp_path, path: Path) -> None:
    target = tmp_path / f"{path.stem}_direct.py"
    text = convert_file(path, target, to="direct")
    assert "from nvfuser_direct import FusionDefinition, DataType" in text
    assert "define_vector" not in text and "from nvfuser import" not in text
    _same_fusions(path, target)


def test_old_spellings_become_direct_ones(tmp_path) -> None:
    source = tmp_path / "old.py"
    source.write_text(OLD_SPELLINGS, encoding="utf-8")
    text = convert_file(source, to="direct")
    body = text[text.index("def nvfuser_fusion"):text.index("with FusionDefinition")]
    assert "symbolic_sizes" not in body and "contiguous=" not in body
    assert "keepdim=False" in body and "dims=[1]" in body
    # define_vector(2), bound at execute: two scalar inputs and the list of them
    assert body.count("= fd.define_scalar(dtype=DataType.Int)") == 2
    target = tmp_path / "direct.py"
    target.write_text(text, encoding="utf-8")
    _same_fusions(source, target)
    result = CliRunner().invoke(cli, ["run", str(target)])
    assert result.exit_code == 0, result.output


LEGACY_LAYOUTS = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T3 = fd.ops.add(T0, T2)
    T4 = fd.ops.exp(T3)
    T5 = fd.ops.permute(T4, dims=[1, 0])
    T6 = fd.ops.add(T5, T1)
    fd.add_output(T5, stride_order=[1, 0])
    fd.add_output(T6, (0, 1))

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.randn(4, 1), torch.randn(1, 4).as_strided((1, 4), (1, 1)), torch.randn(4, 3)]
fd.execute(inputs)
"""  # noqa: E501
STANDIN = Path(__file__).parent / "standin"


def _definition(text: str) -> str:
    return text[text.index("def nvfuser_fusion"):text.index("with FusionDefinition")]


def test_ordered_outputs_become_stride_order_ops(tmp_path) -> None:
    """nvfuser_direct's add_output takes no stride_order: the output is laid out by
    fd.ops.stride_order first, with the same strides as the legacy spelling gave."""
    source = tmp_path / "legacy.py"
    source.write_text(LEGACY_LAYOUTS, encoding="utf-8")
    target = tmp_path / "direct.py"
    body = _definition(convert_file(source, target, to="direct"))
    assert "stride_order=[1, 0])\n    fd.add_output(T5_ordered)" in body
    assert "T5_ordered = fd.ops.stride_order(T5, stride_order=[1, 0])" in body
    assert "T6_ordered = fd.ops.stride_order(T6, stride_order=[0, 1])" in body
    assert "add_output(T5, " not in body and "add_output(T6, " not in body
    _same_fusions(source, target)
    (before,), (after,) = load_path(source, device="cpu"), load_path(target, device="cpu")
    strides = [[o.stride() for o in f.fd.execute(f.inputs)] for f in (before, after)]
    assert strides[0] == strides[1] == [(4, 1), (1, 3)]


def test_broadcast_dims_get_no_contiguity(tmp_path) -> None:
    """A size-1 dim is a broadcast: nvfuser_direct wants None there, where legacy scripts
    wrote True; contiguity is in allocation order, so stride_order decides which entry."""
    source = tmp_path / "legacy.py"
    source.write_text(LEGACY_LAYOUTS, encoding="utf-8")
    body = _definition(convert_file(source, to="direct"))
    assert "T0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None]," in body
    # dim 0 (size 1) has stride_order 0: the innermost, the last contiguity entry
    assert "T1 = fd.define_tensor(shape=[1, -1], contiguity=[True, None]," in body
    assert "T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True]," in body


def _run_with_standin(script: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(STANDIN), str(STANDIN.parent.parent)])
    env.pop("FUSECLI_STANDIN_FAULTS", None)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_the_standin_rejects_legacy_layouts_as_nvfuser_direct_does(tmp_path) -> None:
    """The stand-in fails where nvfuser_direct 0.2.36 does; the converted script runs."""
    from fusecli.load.convert import to_direct

    source = tmp_path / "legacy.py"
    source.write_text(LEGACY_LAYOUTS, encoding="utf-8")
    as_direct = LEGACY_LAYOUTS.replace("from nvfuser import", "from nvfuser_direct import")
    broadcast_true = tmp_path / "broadcast_true.py"
    broadcast_true.write_text(as_direct, encoding="utf-8")
    ordered_output = tmp_path / "ordered_output.py"
    ordered_output.write_text(
        as_direct.replace("contiguity=[True, True], dtype=DataType.Float)\n    T1",
                          "contiguity=[True, None], dtype=DataType.Float)\n    T1")
        .replace("contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1]",
                 "contiguity=[True, None], dtype=DataType.Float, stride_order=[0, 1]"),
        encoding="utf-8")
    converted = tmp_path / "converted.py"
    (loaded,) = load_path(source, device="cpu")
    converted.write_text(to_direct(loaded, device="cpu"), encoding="utf-8")

    refused = _run_with_standin(broadcast_true)
    assert refused.returncode == 1
    assert "contiguity of a broadcast/reduction dimension must be None" in refused.stderr
    refused = _run_with_standin(ordered_output)
    assert refused.returncode == 1
    assert "TypeError: add_output(): incompatible function arguments" in refused.stderr
    ran = _run_with_standin(converted)
    assert ran.returncode == 0, ran.stderr


def test_the_direct_target_takes_a_py_suffix_and_refuses_others(tmp_path) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["convert", str(FUSIONS / "rms_norm.py"), "--to", "direct",
                             "-o", str(tmp_path / "out.py")])
    assert ok.exit_code == 0, ok.output
    refused = runner.invoke(cli, ["convert", str(FUSIONS / "rms_norm.py"), "--to", "direct",
                                  "-o", str(tmp_path / "out.yaml")])
    assert refused.exit_code == 2 and "the suffix says" in refused.output


def test_convert_help_names_the_direct_target() -> None:
    result = CliRunner().invoke(cli, ["convert", "--help"])
    assert "nvfuser_direct" in result.output and "--to direct" in result.output


@pytest.mark.cuda
def test_a_gapped_cuda_input_is_written_with_its_whole_storage_span() -> None:
    """A strided view on the GPU (every other element) keeps its strides in a written repro:
    its values are read where it lives, not from a dense copy (which ended in 'setStorage ...
    out of bounds' for every such input under --engine nvfuser)."""
    import torch

    from fusecli.load.inputs import storage_values

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    base = torch.arange(9, dtype=torch.float32)
    view = base.as_strided((5,), (2,))
    on_gpu = base.cuda().as_strided((5,), (2,))
    assert storage_values(on_gpu) == storage_values(view) == tuple(float(v) for v in range(9))


def test_a_vector_bound_at_execute_becomes_scalar_inputs_in_a_plain_script(tmp_path) -> None:
    """The engine path writes the fusion as it was loaded (no input specs from the file):
    a define_vector(n) input's values become n scalar inputs, and the script runs."""
    from dataclasses import replace

    from fusecli.engines.nvfuser import direct_script

    repro = Path(__file__).parent / "repros_2023" / "vector_input_2023.py"
    (loaded,) = load_path(repro, device="cpu")
    script = tmp_path / "plain.py"
    script.write_text(direct_script(replace(loaded, input_specs=None)), encoding="utf-8")
    text = script.read_text(encoding="utf-8")
    assert "    128,\n    32,\n]" in text
    ran = _run_with_standin(script)
    assert ran.returncode == 0, ran.stderr
