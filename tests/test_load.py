"""fusecli.load: Python repros run verbatim, the YAML format, and conversion between them."""

from __future__ import annotations

import math
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch

from fusecli.errors import InputError
from fusecli.frontend import FusionDefinition
from fusecli.frontend.repro import definition_text
from fusecli.ir.dtype import from_torch
from fusecli.load import convert_file, discover, load_path, load_python, load_yaml
from fusecli.load.convert import to_python, to_yaml
from fusecli.load.devices import cuda_mapped_to_cpu
from fusecli.load.distributions import (
    DISTRIBUTIONS,
    TENSOR_DTYPES,
    DistributionSpec,
    distribution_applies,
)
from fusecli.load.inputs import MAX_STORED_ELEMENTS, TensorSpec, input_source, make_input
from fusecli.load.model import LoadedFusion

SEED_ISSUE = Path("/work/shared/seeds/nvfuser-issue-2127.txt")
CORPUS = Path(__file__).resolve().parent.parent / "fusions"
NO_CUDA = not torch.cuda.is_available()

HEADER = "import torch\nfrom nvfuser import FusionDefinition, DataType\n\n"

RELU_DEFINITION = """\
def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.relu(T0)
    fd.add_output(T1)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)
"""  # noqa: E501 - nvFuser prints one record per line


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def script(tmp_path: Path, body: str, name: str = "repro.py") -> Path:
    return write(tmp_path, name, HEADER + RELU_DEFINITION + "\n" + textwrap.dedent(body))


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of ``path`` holding ``needle``."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape, strides and bits (NaNs included)."""
    if (a.dtype, a.shape, a.stride()) != (b.dtype, b.shape, b.stride()):
        return False
    span = 0 if a.numel() == 0 else 1 + sum((s - 1) * st for s, st in zip(a.shape, a.stride()))
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.int64}
    flat_a = a.cpu().as_strided((span,), (1,)).view(bits[a.element_size()])
    flat_b = b.cpu().as_strided((span,), (1,)).view(bits[b.element_size()])
    return torch.equal(flat_a, flat_b)


# The repro of NVIDIA/Fuser issue 2127, verbatim (trailing spaces included) from SEED_ISSUE.
ISSUE_2127 = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.permute(T1, dims=[1, 0])
    T3 = fd.ops.permute(T0, dims=[2, 1, 0])
    S4 = fd.define_scalar(16, dtype=DataType.Int)
    S5 = fd.define_scalar(32, dtype=DataType.Int)
    V6 = fd.define_vector([S4, S5], dtype=DataType.Int)
    T7 = fd.ops.reshape(T3, new_shape=V6)
    T8 = fd.ops.matmul(T2, T7)
    S9 = fd.define_scalar(16, dtype=DataType.Int)
    S10 = fd.define_scalar(16, dtype=DataType.Int)
    S11 = fd.define_scalar(2, dtype=DataType.Int)
    V12 = fd.define_vector([S9, S10, S11], dtype=DataType.Int)
    T13 = fd.ops.reshape(T8, new_shape=V12)
    T14 = fd.ops.permute(T13, dims=[2, 1, 0])
    fd.add_output(T14)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((512,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 16, 16), (256, 16, 1)),
    torch.randn((256,), dtype=torch.bfloat16, device='cuda:0').as_strided((16, 16), (16, 1)),
]   
fd.execute(inputs)
"""  # noqa: E501, W291


@pytest.mark.skipif(not SEED_ISSUE.exists(), reason="the seed issue text is not on this machine")
def test_the_embedded_repro_is_the_seed_issue_verbatim():
    assert ISSUE_2127.strip() in SEED_ISSUE.read_text()


# --- Python scripts ------------------------------------------------------------------------------


def test_seed_issue_script_runs_verbatim_with_cpu_inputs(tmp_path):
    path = write(tmp_path, "issue_2127.py", ISSUE_2127)
    (loaded,) = load_python(path)
    assert loaded.name == "issue_2127" and loaded.source_kind == "python"
    assert loaded.line == ISSUE_2127.splitlines().index("fd.execute(inputs)") + 1
    shapes = [(tuple(t.shape), t.stride(), t.dtype) for t in loaded.inputs]
    assert shapes == [
        ((2, 16, 16), (256, 16, 1), torch.bfloat16),
        ((16, 16), (16, 1), torch.bfloat16),
    ]
    assert len(loaded.fusion.inputs) == 2 and len(loaded.fusion.outputs) == 1
    if NO_CUDA:
        assert all(t.device.type == "cpu" for t in loaded.inputs)
        assert loaded.notices == ("CUDA devices mapped to the CPU",)


def test_import_nvfuser_gives_the_frontend_for_the_script_only(tmp_path):
    real = types.ModuleType("nvfuser")  # stands in for an installed nvFuser
    saved = {name: sys.modules.get(name) for name in ("nvfuser", "nvfuser.pytorch_utils")}
    sys.modules["nvfuser"] = real
    sys.modules.pop("nvfuser.pytorch_utils", None)
    try:
        path = script(tmp_path, """\
            import nvfuser
            import fusecli.frontend
            assert nvfuser.FusionDefinition is fusecli.frontend.FusionDefinition
            inputs = [torch.randn(2, 3)]
            fd.execute(inputs)
            """)
        (loaded,) = load_python(path, device="cpu")
        assert sys.modules["nvfuser"] is real
        assert "nvfuser.pytorch_utils" not in sys.modules
        assert "nvfuser_direct" not in sys.modules
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    assert loaded.inputs[0].shape == (2, 3)


def test_nvfuser_direct_and_pytorch_utils(tmp_path):
    path = write(tmp_path, "direct.py", """\
        import torch
        from nvfuser_direct import FusionDefinition, DataType
        from nvfuser_direct.pytorch_utils import torch_dtype_to_nvfuser_dtype
        from nvfuser.pytorch_utils import torch_dtype_to_nvfuser_dtype as legacy

        assert legacy(torch.bfloat16) is DataType.BFloat16 and legacy(float) is DataType.Double
        with FusionDefinition() as fd:
            t0 = fd.define_tensor([-1], [True], torch_dtype_to_nvfuser_dtype(torch.float32))
            fd.add_output(fd.ops.neg(t0))
        fd.execute([torch.arange(4.0)])
        """)
    (loaded,) = load_python(path, device="cpu")
    assert torch.equal(loaded.inputs[0], torch.arange(4.0))
    assert "nvfuser_direct" not in sys.modules


def test_script_without_execute_call_gives_fd_and_inputs(tmp_path):
    path = script(tmp_path, """\
        inputs = [
            torch.randn((12,), dtype=torch.float32, device='cuda:0').as_strided((3, 4), (4, 1)),
        ]
        """)
    (loaded,) = load_python(path)
    assert loaded.inputs[0].shape == (3, 4) and loaded.line == line_of(path, "inputs = [")
    assert "fd.ops.relu" in definition_text(loaded.fd)


def test_subclass_style_without_execute_call_is_defined(tmp_path):
    path = write(tmp_path, "subclass.py", """\
        import torch
        from nvfuser import FusionDefinition, DataType

        class MyFusion(FusionDefinition):
            def definition(self):
                t0 = self.define_tensor([-1], [True], DataType.Float)
                self.add_output(self.ops.abs(t0))

        fd = MyFusion()
        inputs = [torch.randn(8)]
        """)
    (loaded,) = load_python(path, device="cpu")
    assert len(loaded.fusion.outputs) == 1


def test_each_execute_call_is_one_fusion(tmp_path):
    path = script(tmp_path, """\
        first = fd.execute([torch.randn(2, 3, device='cuda')])
        second = fd.execute([torch.ones(4, 5, device=torch.device('cuda', 0))])
        assert first[0].shape == (2, 3) and second[0].shape == (4, 5)
        """, name="twice.py")
    loaded = load_python(path)
    assert [(f.name, f.line, tuple(f.inputs[0].shape)) for f in loaded] == [
        ("twice", line_of(path, "first ="), (2, 3)),
        ("twice#2", line_of(path, "second ="), (4, 5)),
    ]
    assert loaded[0].fd is loaded[1].fd


def test_inputs_are_copied_before_the_script_changes_them(tmp_path):
    gapped = RELU_DEFINITION.replace("contiguity=[True, True]", "contiguity=[True, False]")
    path = write(tmp_path, "repro.py", HEADER + gapped + "\n" + textwrap.dedent("""\
        inputs = [torch.zeros(6, dtype=torch.float32)[::2].unsqueeze(0)]
        fd.execute(inputs)
        inputs[0].add_(1)
        """))
    (loaded,) = load_python(path, device="cpu")
    assert loaded.inputs[0].stride() == (6, 2)  # the gapped layout is kept, not densified
    assert torch.equal(loaded.inputs[0], torch.zeros(1, 3))


def test_random_inputs_are_seeded_and_torch_state_is_restored(tmp_path):
    path = script(tmp_path, """\
        torch.set_default_dtype(torch.float64)
        fd.execute([torch.randn(3, 4, dtype=torch.float32)])
        """)
    before = torch.random.get_rng_state()
    first = load_python(path, device="cpu")[0].inputs[0]
    again = load_python(path, device="cpu")[0].inputs[0]
    other = load_python(path, device="cpu", seed=1)[0].inputs[0]
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.get_default_dtype() == torch.float32


def test_script_output_goes_to_stderr(tmp_path, capsys):
    path = script(tmp_path, """\
        print("hello from the script")
        fd.execute([torch.randn(2, 2)])
        """)
    load_python(path, device="cpu")
    captured = capsys.readouterr()
    assert captured.out == "" and "hello from the script" in captured.err


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "broken.py", "import torch\n\ndef f(:\n    pass\n")
    with pytest.raises(InputError) as error:
        load_python(path)
    assert error.value.where == f"{path}:3"
    assert "syntax error" in error.value.message


def test_definition_error_names_file_line_and_op(tmp_path):
    path = write(tmp_path, "bad_reshape.py", HEADER + textwrap.dedent("""\
        def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
            T0 = fd.define_tensor(shape=[2, 3], contiguity=[True, True], dtype=DataType.Float)
            T1 = fd.ops.reshape(T0, new_shape=[4, 2])
            fd.add_output(T1)

        with FusionDefinition() as fd:
            nvfuser_fusion_id0(fd)
        """))
    with pytest.raises(InputError) as error:
        load_python(path)
    assert error.value.where == f"{path}:6"
    assert error.value.message.startswith("reshape:")
    assert str(error.value).startswith(f"{path}:6: reshape:")


def test_type_error_in_fd_ops_names_the_line(tmp_path):
    path = write(tmp_path, "literal.py", HEADER + textwrap.dedent("""\
        with FusionDefinition() as fd:
            t0 = fd.define_tensor([-1], [True], DataType.Float)
            fd.add_output(fd.ops.mul(t0, [1, 2]))
        """))
    with pytest.raises(InputError) as error:
        load_python(path)
    assert error.value.where == f"{path}:6"
    assert "mul" in error.value.message


def test_other_exceptions_name_what_the_script_raised(tmp_path):
    path = write(tmp_path, "raises.py", "import torch\n\nraise ValueError('no luck')\n")
    with pytest.raises(InputError) as error:
        load_python(path)
    assert str(error.value) == f"{path}:3: the script raised ValueError: no luck"


def test_inputs_that_do_not_fit_name_the_execute_line(tmp_path):
    # Captured as a fusion of its own (the script goes on), and its run is the error.
    from fusecli.app.pipeline import RunOptions, run_loaded

    path = script(tmp_path, "fd.execute([torch.randn(5)])\n")
    (loaded,) = load_python(path, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert (outcome.status, outcome.exit_code) == ("error", 2)
    assert outcome.error.startswith(f"{path}:{line_of(path, 'fd.execute(')}: input 0")


def test_script_running_no_fusion_is_an_error(tmp_path):
    path = write(tmp_path, "empty.py", "import torch\n")
    with pytest.raises(InputError, match="runs no fusion"):
        load_python(path)


# --- CUDA requests on the CPU --------------------------------------------------------------------


def test_cuda_requests_go_to_the_cpu(tmp_path):
    path = script(tmp_path, """\
        a = torch.randn(2, 3).cuda()
        b = torch.randn(2, 3).to('cuda')
        c = torch.randn(2, 3).to(torch.device('cuda:0'), torch.float32)
        d = torch.testing.make_tensor((2, 3), dtype=torch.float32, device='cuda:0')
        e = torch.zeros(2, 3, device=0)
        f = torch.empty_strided((2, 3), (1, 2), device='cuda').fill_(1)
        torch.cuda.synchronize()
        for tensor in (a, b, c, d, e, f):
            fd.execute([tensor])
        """)
    loaded = load_python(path, device="cpu", all_calls=True)  # one record per call
    assert len(loaded) == 6
    assert all(f.inputs[0].device.type == "cpu" for f in loaded)
    assert loaded[5].inputs[0].stride() == (1, 2)
    assert {f.notices for f in loaded} == {("CUDA devices mapped to the CPU",)}


def test_moving_to_the_mapped_device_copies(tmp_path):
    path = script(tmp_path, """\
        host = torch.zeros(2, 2)
        moved = host.cuda()
        moved.add_(1)
        assert torch.equal(host, torch.zeros(2, 2))
        fd.execute([moved])
        """)
    (loaded,) = load_python(path, device="cpu")
    assert torch.equal(loaded.inputs[0], torch.ones(2, 2))


def test_no_notice_without_cuda_requests(tmp_path):
    path = script(tmp_path, "fd.execute([torch.randn(2, 2)])\n")
    assert load_python(path, device="cpu")[0].notices == ()


def test_mapping_restores_torch_and_keeps_queries_honest():
    originals = (torch.randn, torch.testing.make_tensor, torch.set_default_device)
    with cuda_mapped_to_cpu() as mapping:
        assert torch.cuda.is_available() == (not NO_CUDA)
        assert torch.ones(1, device="cuda").device.type == "cpu"
        assert not torch.ones(1).cuda().is_cuda
        torch.set_default_device("cuda")
        assert torch.empty(1).device.type == "cpu"
        torch.set_default_device(None)
    assert mapping.mapped == 3
    assert (torch.randn, torch.testing.make_tensor, torch.set_default_device) == originals
    for name in ("to", "cuda", "new_zeros", "pin_memory"):
        assert name not in vars(torch.Tensor)


@pytest.mark.skipif(not NO_CUDA, reason="checks the behaviour without CUDA")
def test_cuda_requests_fail_plainly_when_mapping_is_off_and_cuda_missing(tmp_path):
    from fusecli.errors import MissingEnvironmentError

    path = script(tmp_path, "fd.execute([torch.randn(2, 2)])\n")
    with pytest.raises(MissingEnvironmentError):
        load_python(path, device="cuda")


# --- YAML ----------------------------------------------------------------------------------------

YAML_FUSION = """\
fusecli_yaml: 1
name: scale
definition: |
  def nvfuser_fusion(fd : FusionDefinition) -> None :
      T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
      S1 = fd.define_scalar(None, dtype=DataType.Double)
      T2 = fd.ops.mul(T0, S1)
      fd.add_output(T2)
inputs:
- {kind: tensor, dtype: bfloat16, shape: [2, 16], strides: [16, 1], distribution: {name: normal, mean: 0.0, std: 1.0}, seed: 0}
- {kind: scalar, dtype: float64, value: 0.5}
"""  # noqa: E501


def test_yaml_fusion_loads_with_seeded_inputs(tmp_path):
    path = write(tmp_path, "scale.yaml", YAML_FUSION)
    (loaded,) = load_yaml(path, device="cpu")
    assert (loaded.name, loaded.source_kind, loaded.line) == ("scale", "yaml", 1)
    tensor, scalar = loaded.inputs
    assert (tensor.dtype, tensor.shape, tensor.stride()) == (torch.bfloat16, (2, 16), (16, 1))
    expected = torch.normal(0.0, 1.0, (32,), generator=torch.Generator().manual_seed(0),
                            dtype=torch.bfloat16)
    assert torch.equal(tensor.reshape(-1), expected)
    assert scalar == 0.5


def test_yaml_documents_each_give_a_fusion(tmp_path):
    second = YAML_FUSION.replace("name: scale\n", "")
    path = write(tmp_path, "many.yml", YAML_FUSION + "---\n" + second + "---\n")
    assert [f.name for f in load_path(path, device="cpu")] == ["scale", "many#2"]


@pytest.mark.parametrize(
    ("change", "message", "line"),
    [
        (("dtype: bfloat16, shape", "dtype: bf16, shape"),
         "inputs[0].dtype: unknown dtype 'bf16', expected one of ", 10),
        (("dtype: float64, value: 0.5", "dtype: float64, value: half"),
         "inputs[1].value: expected a number, got 'half'", 11),
        (("strides: [16, 1]", "strides: [1]"), "inputs[0].strides: 1 strides for 2 dimensions", 10),
        (("mean: 0.0, std: 1.0", "mean: 0.0, sd: 1.0"),
         "inputs[0].distribution.sd: unknown field 'sd', expected one of name, mean, std", 10),
        (("fusecli_yaml: 1", "fusecli_yaml: 2"), "fusecli_yaml: version 2 is not one", 1),
        (("name: scale", "nme: scale"), "nme: unknown field 'nme'", 2),
        (("distribution: {name: normal, mean: 0.0, std: 1.0}", "values: [1.0, 2.0]"),
         "inputs[0].values: 2 values for a storage span of 32 elements", 10),
    ],
)
def test_bad_yaml_field_names_the_field_path_and_line(tmp_path, change, message, line):
    path = write(tmp_path, "fusion.yaml", YAML_FUSION.replace(*change))
    with pytest.raises(InputError) as error:
        load_yaml(path, device="cpu")
    assert error.value.where == f"{path}:{line}"
    assert error.value.message.startswith(message)


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "fusion.yaml", "fusecli_yaml: 1\ninputs: [1, 2\n")
    with pytest.raises(InputError, match="not valid YAML") as error:
        load_yaml(path)
    assert error.value.where.startswith(f"{path}:")


def test_yaml_is_loaded_safely(tmp_path):
    path = write(tmp_path, "fusion.yaml",
                 "fusecli_yaml: 1\ndefinition: !!python/object/apply:os.system ['true']\n"
                 "inputs: []\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_yaml(path)


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("import os", "Import statements are not allowed"),
        ("T9 = __import__('os')", "name '__import__' is not allowed"),
        ("T9 = fd.__class__", "attribute '__class__' is not allowed"),
        ("T9 = [x for x in fd.ops]", "ListComp is not allowed"),
        ("T9 = open('/etc/passwd')", "the definition raised NameError"),
        ("T9 = '{0.ops}'.format(fd)", "attribute 'format': only attributes of DataType and fd"),
        ("T9 = fd.repro_script_for().join", "attribute 'join': only attributes of"),
        ("for x in []: pass", "For statements are not allowed"),
        # rebinding a root name, then reading attributes of what it now names
        ("DataType = '{0.__init__.__globals__}'", "name 'DataType' cannot be assigned to"),
        ("fd = 'x'", "name 'fd' cannot be assigned to"),
        ("float = fd", "name 'float' cannot be assigned to"),
        ("T9, DataType = fd.ops.neg(T0), 1", "name 'DataType' cannot be assigned to"),
        ("T9 = DataType.zfill(50000000000)", "attribute DataType.zfill is not allowed"),
        # attribute walks through fd towards modules and globals
        ("T9 = fd.fusion", "attribute fd.fusion is not allowed"),
        ("T9 = fd.ops.add.func", "attribute fd.ops.add.func is not allowed"),
        ("T9 = fd.execute", "attribute fd.execute is not allowed"),
        ("T9 = fd.ops.nonexistent(T0)", "attribute fd.ops.nonexistent is not allowed"),
        ("T9 = DataType.Float.name", "attribute DataType.Float.name is not allowed"),
        # huge literals and deep nesting
        ("T9 = fd.define_scalar(" + "9" * 40 + ")", "an integer literal this large"),
        ("T9 = fd.define_scalar('" + "x" * 5000 + "')", "a literal of 5000 characters"),
        ("T9 = " + "[" * 300 + "]" * 300, "too many nested parentheses"),
    ],
)
def test_yaml_definition_cannot_run_arbitrary_code(tmp_path, statement, message):
    text = YAML_FUSION.replace(
        "      fd.add_output(T2)\n", f"      {statement}\n      fd.add_output(T2)\n"
    )
    path = write(tmp_path, "evil.yaml", text)
    with pytest.raises(InputError) as error:
        load_yaml(path, device="cpu")
    assert message in error.value.message
    assert error.value.where == f"{path}:8"


def test_yaml_definition_error_names_the_file_line_and_op(tmp_path):
    text = YAML_FUSION.replace("fd.ops.mul(T0, S1)", "fd.ops.permute(T0, dims=[0])")
    path = write(tmp_path, "fusion.yaml", text)
    with pytest.raises(InputError) as error:
        load_yaml(path, device="cpu")
    assert error.value.where == f"{path}:7"
    assert error.value.message.startswith(
        "permute: Operator permute expects `dims` argument to have the same length as input!"
    )


def test_yaml_input_that_torch_cannot_make_names_its_line(tmp_path):
    text = YAML_FUSION.replace(
        "dtype: bfloat16, shape: [2, 16], strides: [16, 1], distribution: {name: normal, "
        "mean: 0.0, std: 1.0}",
        "dtype: bfloat16, shape: [2, 16], distribution: {name: randint, low: 0, high: 1e400}",
    )
    path = write(tmp_path, "fusion.yaml", text)
    with pytest.raises(InputError, match=r"inputs\[0\].distribution.high: expected an integer"):
        load_yaml(path, device="cpu")
    path = write(tmp_path, "fusion.yaml", text.replace("1e400", "99999999999999999999"))
    with pytest.raises(InputError, match=r"inputs\[0\]: cannot make this input") as error:
        load_yaml(path, device="cpu")
    assert error.value.where == f"{path}:10"


def test_yaml_input_count_must_match_the_definition(tmp_path):
    path = write(tmp_path, "fusion.yaml", YAML_FUSION.rsplit("- {kind: scalar", 1)[0])
    with pytest.raises(InputError, match="1 inputs listed, but the definition takes 2") as error:
        load_yaml(path, device="cpu")
    assert error.value.where == f"{path}:{line_of(path, 'inputs:') + 1}"


# --- inputs as data ------------------------------------------------------------------------------


def _example_params(kind, dtype: str) -> tuple:
    """Parameters for ``kind`` on ``dtype``: the defaults, and values for the typed ones."""
    params = dict(DISTRIBUTIONS[kind].params)
    if DISTRIBUTIONS[kind].typed_params:  # full's value, range's low and high
        python_type = {"bool": bool, "int64": int, "int32": int}.get(dtype, float)
        examples = {"value": 1, "low": 0, "high": 1} if dtype == "bool" else {
            "value": 3, "low": -2, "high": 5,
        }
        params.update({name: python_type(examples[name]) for name in params})
    if kind.value == "randint" and dtype == "bool":
        params["high"] = 2
    return tuple(params.items())


def _specs_to_check():
    for kind in DISTRIBUTIONS:
        for dtype in TENSOR_DTYPES:
            if distribution_applies(kind, dtype):
                yield TensorSpec(
                    dtype, (3, 4), (1, 3),
                    distribution=DistributionSpec(kind, _example_params(kind, dtype)), seed=7,
                )


@pytest.mark.parametrize(
    "spec", list(_specs_to_check()), ids=lambda s: f"{s.distribution.kind.value}-{s.dtype}"
)
def test_rendered_python_makes_the_same_tensor(spec):
    made = make_input(spec, "cpu")
    rendered = eval(input_source(spec, device="cpu"), {"torch": torch})
    assert bitwise_equal(made, rendered)


@pytest.mark.parametrize(
    "tensor",
    [
        torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, 3.4e38]),
        torch.randn(24, dtype=torch.float64).as_strided((2, 3), (12, 4)),  # gaps
        torch.arange(4, dtype=torch.int32).as_strided((5, 4), (0, 1)),  # expanded
        torch.randn(8, dtype=torch.bfloat16).reshape(2, 4).t(),  # transposed
        torch.tensor([True, False, True]),
        torch.tensor([1 + 2j, -3.5j], dtype=torch.complex64),
        torch.tensor([0.5, -448.0], dtype=torch.float8_e4m3fn),
        torch.tensor([0, 2**63 - 1], dtype=torch.int64).view(torch.uint64),
        torch.zeros(0, 3),
        torch.tensor(2.5),
    ],
    ids=["specials", "gaps", "expanded", "transposed", "bool", "complex", "fp8", "uint64",
         "empty", "0-dim"],
)
def test_stored_values_round_trip_bitwise(tmp_path, tensor):
    with_values = LoadedFusion(
        path=tmp_path / "t.py", name="t", fd=_identity_fd(tensor), inputs=[tensor], line=None,
        source_kind="python",
    )
    yaml_path = write(tmp_path, "t.yaml", to_yaml(with_values))
    (from_yaml,) = load_yaml(yaml_path, device="cpu")
    assert bitwise_equal(from_yaml.inputs[0], tensor)
    python_path = write(tmp_path, "t2.py", to_python(from_yaml))
    (from_python,) = load_python(python_path, device="cpu")
    assert bitwise_equal(from_python.inputs[0], tensor)


def _identity_fd(tensor: torch.Tensor) -> FusionDefinition:
    """A fusion taking ``tensor`` as its input (defined from its sizes and strides)."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            sizes=list(tensor.shape), strides=list(tensor.stride()), dtype=from_torch(tensor.dtype)
        )
        fd.add_output(t0)
    return fd


# --- conversion ----------------------------------------------------------------------------------


def test_python_yaml_python_yaml_is_identical(tmp_path):
    (tmp_path / "a").mkdir()
    original = write(tmp_path / "a", "fusion.py", ISSUE_2127)
    first_yaml = convert_file(original, tmp_path / "a" / "fusion.yaml")
    (tmp_path / "b").mkdir()
    python_again = convert_file(tmp_path / "a" / "fusion.yaml", tmp_path / "b" / "fusion.py")
    second_yaml = convert_file(tmp_path / "b" / "fusion.py", to="yaml")
    assert "fd.execute(inputs)" in python_again
    assert second_yaml == first_yaml
    records = [load_path(p, device="cpu")[0].fd.records for p in
               (original, tmp_path / "a" / "fusion.yaml", tmp_path / "b" / "fusion.py")]
    assert len({tuple(r.text() for r in rs) for rs in records}) == 1


def test_large_inputs_keep_their_layout_range_and_a_note(tmp_path):
    size = MAX_STORED_ELEMENTS + 1
    path = script(tmp_path, f"""\
        fd.execute([
            torch.testing.make_tensor(({size * 2},), dtype=torch.float32, device='cuda:0',
                                      low=0.5, high=2.0).as_strided((2, {size}), (1, 2)),
        ])
        """, name="big.py")
    text = convert_file(path, to="yaml")
    assert "values:" not in text and "distribution: {name: range, low: 0.5" in text
    (loaded,) = load_yaml(write(tmp_path, "big.yaml", text), device="cpu")
    assert loaded.input_specs[0].note == (
        f"values not stored ({size * 2} elements are more than 4096); drawn over the same range"
    )
    drawn = loaded.inputs[0]
    assert drawn.stride() == (1, 2) and drawn.shape == (2, size)
    assert 0.5 <= drawn.min().item() and drawn.max().item() <= 2.0
    python_text = convert_file(tmp_path / "big.yaml", to="python")
    assert convert_file(write(tmp_path, "big.py", python_text), to="yaml") == text


def test_several_fusions_convert_to_several_documents_and_back(tmp_path):
    path = script(tmp_path, """\
        fd.execute([torch.ones(2, 3)])
        fd.execute([torch.zeros(1, 4, dtype=torch.float32)])
        """, name="pair.py")
    text = convert_file(path, tmp_path / "pair.yaml")
    assert text.count("fusecli_yaml: 1") == 2
    (tmp_path / "out").mkdir()
    python_text = convert_file(tmp_path / "pair.yaml", tmp_path / "out" / "pair.py")
    assert python_text.count("import torch") == 1
    assert python_text.count("fd.execute(inputs)") == 2
    assert [f.name for f in load_path(tmp_path / "out" / "pair.py")] == ["pair", "pair#2"]


def test_convert_never_overwrites_without_force(tmp_path):
    path = script(tmp_path, "fd.execute([torch.ones(2, 3)])\n")
    target = write(tmp_path, "repro.yaml", "keep me\n")
    with pytest.raises(InputError, match="--force"):
        convert_file(path, target)
    assert target.read_text() == "keep me\n"
    convert_file(path, target, force=True)
    assert target.read_text().startswith("fusecli_yaml: 1")
    with pytest.raises(InputError, match="suffix says yaml"):
        convert_file(path, tmp_path / "other.yaml", to="python")


# --- dispatch and discovery ----------------------------------------------------------------------


def test_load_path_refuses_unknown_suffixes(tmp_path):
    path = write(tmp_path, "fusion.json", "hello\n")
    with pytest.raises(InputError, match="expected one of .py, .yaml, .yml"):
        load_path(path)
    with pytest.raises(InputError, match="no such file"):
        load_path(tmp_path / "missing.py")


def test_discover_expands_folders(tmp_path):
    for name in ("b.py", "a.yaml", "sub/c.yml", "_helper.py", "README.md", "README.py",
                 "notes.txt", "__pycache__/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        repro = "fusecli_yaml: 1\n" if name.endswith((".yaml", ".yml")) else "import nvfuser\n"
        (tmp_path / name).write_text(repro)
    single = tmp_path / "_explicit.py"
    assert discover([tmp_path, single]) == [
        tmp_path / "a.yaml", tmp_path / "b.py", tmp_path / "sub" / "c.yml", single,
    ]


def test_discover_takes_only_files_that_look_like_repros(tmp_path):
    """``fusecli run .`` must not execute a setup.py or a helper module: they run as code."""
    texts = {
        "setup.py": "from setuptools import setup\nsetup(name='x')\n",
        "helpers.py": "def helper():\n    return 1\n",
        "config.yaml": "name: not a fusion\n",
        "legacy.py": "from nvfuser import FusionDefinition, DataType\n",
        "direct.py": "import nvfuser_direct as nvf\n",
        "library.py": "from fusecli.frontend import FusionDefinition\n",
        "fusion.yml": "fusecli_yaml: 1\nname: x\n",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    skipped: list[Path] = []
    found = discover([tmp_path], skipped)
    assert [p.name for p in found] == ["direct.py", "fusion.yml", "legacy.py", "library.py"]
    assert sorted(p.name for p in skipped) == ["config.yaml", "helpers.py", "setup.py"]
    assert discover([tmp_path / "setup.py"]) == [tmp_path / "setup.py"]  # named: always kept


CORPUS_FILES = discover([CORPUS]) if CORPUS.is_dir() else []


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_every_corpus_fusion_loads(path):
    loaded = load_path(path)
    assert loaded and all(len(f.inputs) == len(f.fusion.inputs) for f in loaded)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_every_corpus_fusion_converts_to_yaml_and_back(path, tmp_path):
    (tmp_path / "yaml").mkdir()
    (tmp_path / "python").mkdir()
    first = convert_file(path, tmp_path / "yaml" / f"{path.stem}.yaml")
    convert_file(tmp_path / "yaml" / f"{path.stem}.yaml", tmp_path / "python" / path.name)
    assert convert_file(tmp_path / "python" / path.name, to="yaml") == first


def test_yaml_aliases_are_refused_so_a_small_file_cannot_stand_for_a_billion_values(tmp_path):
    levels = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for previous, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]")
    text = YAML_FUSION + "x:\n" + "".join(f"  {line}\n" for line in levels) + "name: *i\n"
    path = write(tmp_path, "laughs.yaml", text)
    with pytest.raises(InputError, match=r"aliases \(\*name\) are not allowed") as error:
        load_yaml(path)
    assert error.value.where.startswith(f"{path}:")

