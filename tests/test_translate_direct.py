"""``repr(fd)`` and ``repro_script_for`` of ``nvfuser_direct``, as nvFuser's translator prints them.

The expected texts follow nvFuser's ``python/python_direct/python_translate.cpp`` (the printing
rules) and ``python/nvfuser_direct/__init__.py`` (the script template); several are the
expected strings of nvFuser's own direct tests. Every printed definition must also run: defining
it again gives the same text.
"""

from __future__ import annotations

import re

import pytest
import torch

from fusecli.frontend import DataType
from fusecli.frontend.direct import DirectFusionDefinition as FusionDefinition
from fusecli.frontend.translate_ops import DIRECT_PRINTERS, NOT_PRINTED
from fusecli.ir.optype import OpType

D = DataType
HEADER = "def nvfuser_fusion(fd : FusionDefinition) -> None :\n"


def _define(body) -> FusionDefinition:
    with FusionDefinition() as fd:
        body(fd)
    return fd


def _replayed(text: str) -> str:
    """The text of the definition that ``text`` makes when it runs."""
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    return repr(again)


def _basic(fd, dims=(-1,)):
    inputs = [torch.ones(2, 4, 8), torch.ones(2, 4, 8)]
    t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
    c0 = fd.define_scalar(3.0)
    t4 = fd.ops.sum(fd.ops.mul(fd.ops.add(t0, t1), c0), list(dims), False, DataType.Float)
    fd.add_output(t4)


BASIC = HEADER + """\
    tv0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.ops.add(tv0, tv1)
    tv3 = fd.ops.mul(tv2, 3.00000)
    tv4 = fd.ops.sum(tv3, dims=[2], dtype=DataType.Float)
    fd.add_output(tv4)
"""  # noqa: E501


def test_a_double_constant_is_written_inline_and_defaults_are_left_out():
    """test_basic: no define_scalar line for 3.0 (a Double multiplying a Float tensor is not
    cast in nvFuser's IR), dims normalized, no keepdim, no row-major stride_order."""
    fd = _define(_basic)
    assert repr(fd) == BASIC
    assert _replayed(BASIC) == BASIC


def test_exprs_print_in_the_order_of_a_walk_from_the_outputs():
    """test_squeeze: tv6 (which needs tv3) comes before tv4; squeeze_expanded is left out."""

    def body(fd):
        t0 = fd.define_tensor(shape=[-1], contiguity=[True])
        t1 = fd.define_tensor(sizes=[1, 4, 1], strides=[4, 1, 1])
        t2 = fd.define_tensor(sizes=[2, 1, 4], strides=[4, 4, 1])
        t3 = fd.ops.squeeze(t1, [0, -1])
        t5 = fd.ops.sum(fd.ops.squeeze(t2, [-2]), [0])
        fd.add_output(fd.ops.mul(fd.ops.mul(t0, t3), t5))

    expected = HEADER + """\
    tv0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False)
    tv3 = fd.ops.squeeze(tv1, dims=[0, 2])
    tv6 = fd.ops.mul(tv0, tv3)
    tv4 = fd.ops.squeeze(tv2, dims=[1])
    tv5 = fd.ops.sum(tv4, dims=[0], dtype=DataType.Float)
    tv7 = fd.ops.mul(tv6, tv5)
    fd.add_output(tv7)
"""  # noqa: E501
    assert repr(_define(body)) == expected


@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_prints_bias_only_when_given(with_bias):
    def body(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.BFloat16)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.BFloat16)
        bias = fd.define_tensor(shape=[-1], contiguity=[True], dtype=D.BFloat16) if with_bias \
            else None
        fd.add_output(fd.ops.linear(t0, t1, bias))

    text = repr(_define(body))
    if with_bias:
        assert "    tv3 = fd.ops.linear(tv0, tv1, bias=tv2)\n    fd.add_output(tv3)\n" in text
    else:
        assert text.endswith("    tv2 = fd.ops.linear(tv0, tv1)\n    fd.add_output(tv2)\n")


def test_a_sum_over_a_slice_of_size_one_is_a_squeeze():
    """test_sum_sliced_reshape_to_broadcast: the reshape's constant sizes inline, the slice's
    bounds normalized, and the reduced dimension a broadcast (nvFuser's IterDomain::resize)."""

    def body(fd):
        t18 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=D.Float)
        sizes = [fd.define_scalar(v, dtype=D.Int) for v in (12, 128, 25, 32, 2)]
        t97 = fd.ops.reshape(t18, new_shape=sizes)
        t98 = fd.ops.slice(t97, start_indices=[0] * 5, end_indices=[12, 128, 25, 32, 1],
                           strides=[1] * 5)
        fd.add_output(fd.ops.sum(t98, dims=[4], keepdim=False, dtype=D.Null))

    expected = HEADER + """\
    tv0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.ops.reshape(tv0, new_shape=[12, 128, 25, 32, 2])
    tv2 = fd.ops.slice(tv1, start_indices=[0, 0, 0, 0, 0], end_indices=[12, 128, 25, 32, 1], strides=[1, 1, 1, 1, 1], manual_normalization=True)
    tv3 = fd.ops.squeeze(tv2, dims=[4])
    fd.add_output(tv3)
"""  # noqa: E501
    assert repr(_define(body)) == expected


def test_broadcast_in_dim_without_new_dims_prints_as_expand():
    """test_broadcast_in_dim_no_redundant_set; sizes are fd.ops.size of the tensor they are
    read from (the expand's target, tv1)."""

    def operands(fd):
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        return t0, fd.define_tensor(shape=[-1, -1], contiguity=[True, True])

    def with_broadcast_in_dim(fd):
        t0, t1 = operands(fd)
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(t0, t1.shape(), [0, 1]), t1))

    def with_expand(fd):
        t0, t1 = operands(fd)
        fd.add_output(fd.ops.add(fd.ops.expand(t0, t1.shape()), t1))

    text = repr(_define(with_broadcast_in_dim))
    assert text == repr(_define(with_expand))
    lines = text.splitlines()[3:6]
    assert re.fullmatch(r"    (c\d+) = fd\.ops\.size\(tv1, dim=0\)", lines[0])
    # nvFuser's expand gives a symbolic non-broadcast dimension the size asked for
    # (csrc/ops/alias.cpp), so the second size is read from tv1 too
    assert re.fullmatch(r"    (c\d+) = fd\.ops\.size\(tv1, dim=1\)", lines[1])
    rows, columns = (line.split()[0] for line in lines[:2])
    assert lines[2] == f"    tv2 = fd.ops.expand(tv0, shape=[{rows}, {columns}])"
    assert _replayed(text) == text


def test_constants_python_cannot_spell_get_a_define_scalar_line():
    def body(fd):
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=D.Float)
        half = fd.define_scalar(0.5, dtype=D.Float)
        index = fd.define_scalar(dtype=D.Int)  # an input: None, with its dtype
        fd.add_output(fd.ops.add(fd.ops.mul(t0, half), index))

    text = repr(_define(body))
    assert re.search(r"\n    c\d+ = fd\.define_scalar\(None, dtype=DataType\.Int\)\n", text)
    defined = re.search(r"\n    (c\d+) = fd\.define_scalar\(0\.500000, dtype=DataType\.Float\)\n"
                        r"    tv\d+ = fd\.ops\.mul\(tv0, \1\)\n", text)
    assert defined is not None
    assert _replayed(text) == text


def test_pad_and_iota_write_their_scalars_inline():
    """nvFuser's pad and iota take Python numbers (ScalarVariant): a pad's default value is a
    zero of the tensor's dtype, iota's start and step a zero and a one; Int is iota's default
    dtype."""

    def body(fd):
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=D.Double)
        fd.add_output(fd.ops.pad(t0, [1, 2]))
        fd.add_output(fd.ops.iota(fd.define_scalar(4), dtype=D.Int))

    expected = HEADER + """\
    tv0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Double, is_cpu=False)
    tv1 = fd.ops.pad(tv0, pad_widths=[1, 2], value=0.00000)
    tv2 = fd.ops.iota(length=4, start=0, step=1)
    fd.add_output(tv1)
    fd.add_output(tv2)
"""
    assert repr(_define(body)) == expected
    assert _replayed(expected) == expected


def test_a_stride_order_other_than_row_major_is_printed():
    def body(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], stride_order=[0, 1])
        fd.add_output(fd.ops.relu(t0))

    assert "is_cpu=False, stride_order=[0, 1])\n" in repr(_define(body))


def test_a_definition_of_many_ops_prints_and_runs_again():
    def body(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
        t1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=D.Int)
        n = fd.define_scalar(dtype=D.Int)
        padded = fd.ops.pad(t0, [1, 1])
        joined = fd.ops.cat([padded, padded], dim=-1)
        part = fd.ops.slice(joined, [0, 1], [n, 3])
        summed = fd.ops.sum(part, [1], keepdim=True)
        chosen = fd.ops.index_select(t0, t1, dim=0)
        picked = fd.ops.select(t0, fd.define_scalar(1), dim=1)
        values, _ = fd.ops.topk(t0, fd.define_scalar(2), dim=1, largest=False)
        mean = fd.ops.var_mean(t0, [0], correction=0)[1]
        steps = fd.ops.iota(fd.ops.size(t0, 1), dtype=D.Int)
        full = fd.ops.full([2, fd.ops.size(t0, 0)], fd.define_scalar(1.5), dtype=D.BFloat16)
        noise = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), [2, 3])
        for out in (summed, chosen, picked, values, mean, steps, full, noise,
                    fd.ops.permute(fd.ops.reshape(t0, [-1]), [0]),
                    fd.ops.cast(t0, D.Float)):
            fd.add_output(out)

    text = repr(_define(body))
    assert "fd.ops.cast(tv0, dtype=DataType.Float)" in text  # a copy (nvFuser's LoadStoreOp)
    assert "fd.ops.var_mean(tv0, dims=[0], correction=0)" in text
    assert "fd.ops.reshape(tv0, new_shape=[-1])" in text  # a size fusecli computed: -1
    assert _replayed(text) == text


def test_every_op_has_a_direct_printing_rule():
    missing = [op.value for op in OpType if op not in DIRECT_PRINTERS and op not in NOT_PRINTED]
    assert missing == []


def test_repro_script_for_is_nvfuser_directs_template():
    """test_repro_script_for: no blank lines around the definition; inputs as make_tensor,
    strided floats as randn of their storage, numbers as str writes them."""
    fd = _define(lambda fd: _basic(fd, dims=[1]))
    inputs = [torch.ones(2, 4, 8), torch.ones(2, 4, 8)]
    definition = BASIC.replace("dims=[2]", "dims=[1]")
    expected = (
        "\nimport torch\nfrom nvfuser_direct import FusionDefinition, DataType\n"
        f"{definition}with FusionDefinition() as fd:\n    nvfuser_fusion(fd)\n"
    )
    expected_inputs = (
        "\ninputs = [\n"
        "    torch.testing.make_tensor((2, 4, 8), dtype=torch.float32, device='cuda:0'),\n"
        "    torch.testing.make_tensor((2, 4, 8), dtype=torch.float32, device='cuda:0'),\n"
        "]\nfd.execute(inputs)\n"
    )
    script = fd.repro_script_for(inputs)
    assert expected in script and script.endswith(expected_inputs)
    assert script.startswith("# CUDA devices:\n") and "nvfuser version" not in script
    assert expected_inputs not in fd.repro_script_for()
    with pytest.raises(AssertionError, match="save_repro_inputs=True"):
        fd.last_repro_script()
    fd.execute(inputs, save_repro_inputs=True)
    assert fd.last_repro_script() == script
    strided = torch.ones(8).as_strided((4, 2), (1, 4))
    script = fd.repro_script_for([strided, float("inf")])
    storage = "torch.randn(8, dtype=torch.float32, device='cuda:0')"
    assert f"    {storage}.as_strided((4, 2), (1, 4)),\n" in script
    assert '    float("inf"),\n' in script


# -- the legacy frontend's print ---------------------------------------------------------------


def test_legacy_print_writes_inline_definitions_and_an_empty_line_after_the_records():
    """nvFuser's test_inline_definitions: a shape of ints and scalars printed inline, the
    hidden indices counted (T5), and FusionDefinition::print's empty line at the end."""
    from fusecli.frontend import FusionDefinition as LegacyDefinition

    text = """
def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    T5 = fd.ops.broadcast_in_dim(T0, shape=[2, 2, S1], broadcast_dims=[0, 1])
    fd.add_output(T5)

"""  # noqa: E501
    namespace = {"FusionDefinition": LegacyDefinition, "DataType": DataType}
    exec(text, namespace)
    with LegacyDefinition() as fd:
        namespace["nvfuser_fusion_id0"](fd)
    assert re.sub(r"nvfuser_fusion_id\d+", "nvfuser_fusion_id0", repr(fd)) == text
