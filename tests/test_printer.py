"""fusecli.ir.printer: fusions print as nvFuser's ``Fusion::print`` / ``printMath`` print them.

Golden strings come from nvFuser's own output (the reference notes' examples, the seed's real
log) and from its printing code (csrc/ir/internal_nodes.cpp) for ops without a logged example.
Numbers of tensors, domains and scalars are fusecli's (first appearance, no hidden temporaries);
the layout and spelling are nvFuser's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.nodes import ExtentOp, Fusion, SymbolicExtent, extent_op
from fusecli.ir.optype import OpType
from fusecli.ir.printer import Namer, constant_str, extent_str, print_exprs, print_fusion
from fusecli.ir.printer_exprs import EXPR_PRINTERS, cast_function

Body = Callable[[FusionDefinition], None]


def define(body: Body) -> Fusion:
    with FusionDefinition() as fd:
        body(fd)
    return fd.fusion


def tensor(fd: FusionDefinition, shape: list[int], dtype: DataType = DataType.Float):
    return fd.define_tensor(shape=shape, contiguity=[True] * len(shape), dtype=dtype)


def last_expr(body: Body) -> str:
    """The text of the fusion's last expr, with the whole fusion's names."""
    fusion = define(body)
    return print_exprs(fusion.exprs[-1:], Namer(fusion))


# --- whole fusions ------------------------------------------------------------------------------


def _add(fd: FusionDefinition) -> None:
    fd.add_output(fd.ops.add(tensor(fd, [2, 4, 8]), tensor(fd, [2, 4, 8])))


def test_add_prints_exactly_as_nvfuser_print_math() -> None:
    # Reference notes 5.4 (1): fd.fusion.print_math() of an add, tests/python/direct.
    assert print_fusion(define(_add), math=True) == (
        "Inputs:\n"
        "  T0_g_float[iS0{2}, iS1{4}, iS2{8}]\n"
        "  T1_g_float[iS3{2}, iS4{4}, iS5{8}]\n"
        "Outputs:\n"
        "  T2_g_float[iS6{2}, iS7{4}, iS8{8}]\n"
        "\n"
        "%kernel_math {\n"
        "T2_g_float[iS6{2}, iS7{4}, iS8{8}]\n"
        "   = T0_g_float[iS0{2}, iS1{4}, iS2{8}]\n"
        "   + T1_g_float[iS3{2}, iS4{4}, iS5{8}];\n"
        "} // %kernel_math \n"
        "\n"
    )


def test_fusion_ir_is_fusion_print_with_kernel_block() -> None:
    with FusionDefinition() as fd:
        _add(fd)
    text = fd.fusion_ir()
    assert text.endswith("   + T1_g_float[iS3{2}, iS4{4}, iS5{8}];\n} // %kernel\n")
    assert "\n\n%kernel {\nT2_g_float[iS6{2}, iS7{4}, iS8{8}]\n" in text


def test_bf16_cast_reduction_broadcast() -> None:
    # Reference notes 5.4 (4), in the current format: bf16 -> float, sum, broadcast.
    def body(fd: FusionDefinition) -> None:
        t0 = tensor(fd, [-1, -1], DataType.BFloat16)
        t1 = fd.ops.cast(t0, DataType.Float)
        t2 = fd.ops.sum(t1, [1])
        fd.add_output(fd.ops.broadcast(t2, [False, True]))

    assert print_fusion(define(body)) == """\
Inputs:
  T0_g___bfloat[iS0{i0}, iS1{i1}]
Outputs:
  T3_g_float[iS6{i0}, bS7{1}]

%kernel {
T1_l_float[iS2{i0}, iS3{i1}]
   = __bfloat2float(T0_g___bfloat[iS0{i0}, iS1{i1}]);
T2_l_float[iS4{i0}, rS5{i1}]
   = reduction( T1_l_float[iS2{i0}, iS3{i1}], op = add, initial value = float(0), allreduce = false )
T3_g_float[iS6{i0}, bS7{1}]
   = broadcast( T2_l_float[iS4{i0}, rS5{i1}], flags = {false, true} )
} // %kernel
"""  # noqa: E501


def test_scalar_inputs_and_scalar_exprs_take_the_scalar_counter() -> None:
    # define_tensor's IterDomains start at the fusion's zeroVal, made (and numbered: 1) after
    # the tensor's extent i0, so the scalar defined next is i2
    def body(fd: FusionDefinition) -> None:
        t0 = tensor(fd, [-1])
        s0 = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.mul(fd.ops.size(t0, 0), s0))

    assert print_fusion(define(body)) == """\
Inputs:
  T0_g_float[iS0{i0}]
  i2
Outputs:
  i4

%kernel {
i3 = size( T0_g_float[iS0{i0}], dim = 0 )
i4 = i3 * i2;
} // %kernel
"""


# --- the seed: nvFuser issue #2127 ------------------------------------------------------------


# printMath ends its block with a space and a blank line.
MATH_END = "} // %kernel_math \n\n"


def _seed(fd: FusionDefinition) -> None:
    """fusions/matmul_reshape_permute.py (nvFuser issue #2127)."""
    t0 = fd.define_tensor(
        shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16,
        is_cpu=False, stride_order=[2, 1, 0],
    )
    t1 = fd.define_tensor(
        shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False,
        stride_order=[1, 0],
    )
    t2 = fd.ops.permute(t1, dims=[1, 0])
    t3 = fd.ops.permute(t0, dims=[2, 1, 0])
    v6 = fd.define_vector(
        [fd.define_scalar(16, dtype=DataType.Int), fd.define_scalar(32, dtype=DataType.Int)],
        dtype=DataType.Int,
    )
    t7 = fd.ops.reshape(t3, new_shape=v6)
    t8 = fd.ops.matmul(t2, t7)
    v12 = fd.define_vector(
        [fd.define_scalar(n, dtype=DataType.Int) for n in (16, 16, 2)], dtype=DataType.Int
    )
    t13 = fd.ops.reshape(t8, new_shape=v12)
    fd.add_output(fd.ops.permute(t13, dims=[2, 1, 0]))


SEED_MATH = (
    """\
Inputs:
  T0_g___bfloat[iS0{i0}, iS1{i1}, iS2{i2}]
  T1_g___bfloat[iS3{i4}, iS4{i5}]
Outputs:
  T7_g___bfloat[iS18{2}, iS19{16}, iS20{16}]

%kernel_math {
T2_l___bfloat[iS5{i5}, iS6{i4}]
   = Set.Permute( T1_g___bfloat[iS3{i4}, iS4{i5}], cache_op=Streaming )
T3_l___bfloat[iS7{i2}, iS8{i1}, iS9{i0}]
   = Set.Permute( T0_g___bfloat[iS0{i0}, iS1{i1}, iS2{i2}], cache_op=Streaming )
T4_l___bfloat[iS10{16}rf, iS11{32}rf] = reshape( T3_l___bfloat[iS7{i2}, iS8{i1}, iS9{i0}] )
T5_l___bfloat[iS12{i5}, iS13{32}, rS14{i4}]
   = matmul(T2_l___bfloat[iS5{i5}, iS6{i4}],
            T4_l___bfloat[iS10{16}rf, iS11{32}rf])
T6_l___bfloat[iS15{16}rf, iS16{16}rf, iS17{2}rf] = reshape( T5_l___bfloat[iS12{i5}, iS13{32}, rS14{i4}] )
T7_g___bfloat[iS18{2}, iS19{16}, iS20{16}]
   = Set.Permute( T6_l___bfloat[iS15{16}rf, iS16{16}rf, iS17{2}rf], cache_op=Streaming )
"""  # noqa: E501
    + MATH_END
)

# The first block of /work/shared/reference/nvfuser-logs/matmul_reshape_permute.default.log:
# nvFuser 0.2.36 printing the seed before segmentation. Its segmenter has already inserted the
# SegmenterSet (T10) in front of the second reshape.
NVFUSER_SEED_MATH = (
    """\
Inputs:
  T0_g___bfloat[iS0{i0}, iS1{i1}, iS48{16}]
  T1_g___bfloat[iS44{16}, iS45{16}]
Outputs:
  T7_g___bfloat[iS43{2}, iS42{16}, iS41{16}]

%kernel_math {
T2_l___bfloat[iS46{16}, iS47{16}]
   = Set.Permute( T1_g___bfloat[iS44{16}, iS45{16}], cache_op=Streaming )
T3_l___bfloat[iS49{16}, iS8{i1}, iS7{i0}]
   = Set.Permute( T0_g___bfloat[iS0{i0}, iS1{i1}, iS48{16}], cache_op=Streaming )
T8_l___bfloat[iS50{16}, iS31{( i1 * i0 )}rf] = reshape( T3_l___bfloat[iS49{16}, iS8{i1}, iS7{i0}] )
T5_l___bfloat[iS51{16}, iS37{32}, rS17{16}]
   = matmul(T2_l___bfloat[iS46{16}, iS47{16}],
            T8_l___bfloat[iS50{16}, iS31{( i1 * i0 )}rf])
T10_l___bfloat[iS53{16}, iS54{32}]
   = SegmenterSet( T5_l___bfloat[iS51{16}, iS37{32}, rS17{16}] )
T9_l___bfloat[iS52{16}, iS39{16}rf, iS40{2}rf] = reshape( T10_l___bfloat[iS53{16}, iS54{32}] )
T7_g___bfloat[iS43{2}, iS42{16}, iS41{16}]
   = Set.Permute( T9_l___bfloat[iS52{16}, iS39{16}rf, iS40{2}rf], cache_op=Streaming )
"""  # noqa: E501
    + MATH_END
)


def _layout(text: str) -> str:
    """The text with names, domains and the segmenter's own SegmenterSet taken out."""
    text = re.sub(r"\n[^\n]*\n   = SegmenterSet\([^\n]*", "", text)
    text = re.sub(r"T\d+_", "T_", text)
    return re.sub(r"\[[^\]]*\]", "[...]", text)


def test_seed_prints_with_fusecli_names() -> None:
    assert print_fusion(define(_seed), math=True) == SEED_MATH


def test_seed_layout_matches_nvfuser_log() -> None:
    assert _layout(print_fusion(define(_seed), math=True)) == _layout(NVFUSER_SEED_MATH)


# --- names across print calls -------------------------------------------------------------------


def test_segment_printed_later_keeps_the_whole_fusion_names() -> None:
    fusion = define(_seed)
    namer = Namer(fusion)
    permute, reshape = fusion.exprs[1:3]
    segment_io = {permute.inputs[0].uid, reshape.output.uid}
    # As nvFuser's "**Segmenter** Considering fusion:" shows the pointwise candidate.
    assert print_exprs([permute, reshape], namer, memory=segment_io) == """\
T3_l___bfloat[iS7{i2}, iS8{i1}, iS9{i0}]
   = Set.Permute( T0_g___bfloat[iS0{i0}, iS1{i1}, iS2{i2}], cache_op=Streaming )
T4_g___bfloat[iS10{16}rf, iS11{32}rf] = reshape( T3_l___bfloat[iS7{i2}, iS8{i1}, iS9{i0}] )
"""


def test_names_do_not_depend_on_what_was_printed_before() -> None:
    fusion = define(_seed)
    namer = Namer(fusion)
    tail = print_exprs(fusion.exprs[3:], namer)
    assert print_fusion(fusion, math=True, namer=namer) == SEED_MATH
    assert print_exprs(fusion.exprs[3:], namer) == tail
    assert tail in SEED_MATH


def test_sub_fusion_printed_with_the_complete_fusions_namer() -> None:
    fusion = define(_seed)
    matmul = fusion.exprs[3]
    segment = Fusion(inputs=matmul.inputs, outputs=(), exprs=(matmul,))
    text = print_fusion(segment, namer=Namer(fusion))
    assert text.startswith(
        "Inputs:\n  T2_g___bfloat[iS5{i5}, iS6{i4}]\n  T4_g___bfloat[iS10{16}rf, iS11{32}rf]\n"
    )
    assert "T5_l___bfloat[iS12{i5}, iS13{32}, rS14{i4}]\n   = matmul(T2_g___bfloat" in text


def test_default_memory_of_print_exprs_is_the_fusions_inputs_and_outputs() -> None:
    fusion = define(_seed)
    text = print_exprs(fusion.exprs[-1:], Namer(fusion))
    assert text.startswith("T7_g___bfloat[") and "Set.Permute( T6_l___bfloat[" in text


# --- broadcasts ---------------------------------------------------------------------------------


def test_expanded_broadcast_prints_ex_and_expand_is_one_line() -> None:
    def body(fd: FusionDefinition) -> None:
        fd.add_output(fd.ops.broadcast_in_dim(tensor(fd, [4]), shape=[3, 4], broadcast_dims=[1]))

    fusion = define(body)
    assert print_exprs(fusion.exprs, Namer(fusion)) == """\
T1_l_float[bS1{1}, iS2{4}]
   = broadcast( T0_g_float[iS0{4}], flags = {true, false} )
T2_g_float[bS3{1 ex 3}, iS4{4}] = expand( T1_l_float[bS1{1}, iS2{4}] )
"""


def test_expanded_input_names_its_symbolic_size() -> None:
    def body(fd: FusionDefinition) -> None:
        t0 = fd.define_tensor(shape=[-1, 4], contiguity=[None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(t0))

    assert print_fusion(define(body)).startswith("Inputs:\n  T0_g_float[bS0{1 ex i0}, iS1{4}]\n")


# --- one expr at a time -------------------------------------------------------------------------

FLOAT, DOUBLE, INT, BF16 = DataType.Float, DataType.Double, DataType.Int, DataType.BFloat16

EXPR_CASES: dict[str, tuple[Body, str]] = {
    "unary": (
        lambda fd: fd.add_output(fd.ops.relu(tensor(fd, [4]))),
        "T1_g_float[iS1{4}]\n   = relu(T0_g_float[iS0{4}]);\n",
    ),
    "unary_inline": (
        lambda fd: fd.add_output(fd.ops.neg(tensor(fd, [4]))),
        "T1_g_float[iS1{4}]\n   = -T0_g_float[iS0{4}];\n",
    ),
    "unary_float_suffix": (
        lambda fd: fd.add_output(fd.ops.exp(tensor(fd, [4]))),
        "T1_g_float[iS1{4}]\n   = expf(T0_g_float[iS0{4}]);\n",
    ),
    "unary_double_no_suffix": (
        lambda fd: fd.add_output(fd.ops.exp(tensor(fd, [4], DOUBLE))),
        "T1_g_double[iS1{4}]\n   = exp(T0_g_double[iS0{4}]);\n",
    ),
    "round_is_nearbyint": (
        lambda fd: fd.add_output(fd.ops.round(tensor(fd, [4]))),
        "T1_g_float[iS1{4}]\n   = nearbyintf(T0_g_float[iS0{4}]);\n",
    ),
    "binary_function": (
        lambda fd: fd.add_output(fd.ops.maximum(tensor(fd, [4]), tensor(fd, [4]))),
        "T2_g_float[iS2{4}]\n   = fmax(T0_g_float[iS0{4}]\n  , T1_g_float[iS1{4}]);\n",
    ),
    "binary_float_suffix": (
        lambda fd: fd.add_output(fd.ops.fmod(tensor(fd, [4]), tensor(fd, [4]))),
        "T2_g_float[iS2{4}]\n   = fmodf(T0_g_float[iS0{4}]\n  , T1_g_float[iS1{4}]);\n",
    ),
    "comparison": (
        lambda fd: fd.add_output(fd.ops.eq(tensor(fd, [4]), tensor(fd, [4]))),
        "T2_g_bool[iS2{4}]\n   = T0_g_float[iS0{4}]\n   == T1_g_float[iS1{4}];\n",
    ),
    "ternary": (
        lambda fd: fd.add_output(
            fd.ops.where(tensor(fd, [4], DataType.Bool), tensor(fd, [4]), tensor(fd, [4]))
        ),
        "T3_g_float[iS3{4}]\n   = where(T0_g_bool[iS0{4}]\n  , T1_g_float[iS1{4}]\n"
        "  , T2_g_float[iS2{4}]);\n",
    ),
    "scalar_binary": (
        lambda fd: fd.add_output(
            fd.ops.add(fd.define_scalar(dtype=INT), fd.define_scalar(dtype=INT))
        ),
        "i2 = i0 + i1;\n",
    ),
    "scalar_cast": (
        lambda fd: fd.add_output(fd.ops.cast(fd.define_scalar(dtype=INT), DOUBLE)),
        "d1 = __to_double(i0);\n",
    ),
    "tensor_op_with_constant": (
        lambda fd: fd.add_output(fd.ops.mul(tensor(fd, [4], DOUBLE), fd.define_scalar(0.5))),
        "T1_g_double[iS1{4}]\n   = T0_g_double[iS0{4}]\n   * double(0.5);\n",
    ),
    "max_reduction": (
        lambda fd: fd.add_output(fd.ops.max(tensor(fd, [2, 4]), [1])),
        "T1_g_float[iS2{2}, rS3{4}]\n   = reduction( T0_g_float[iS0{2}, iS1{4}], op = fmax, "
        "initial value = float(-inf), allreduce = false )\n",
    ),
    "int_min_reduction": (
        lambda fd: fd.add_output(fd.ops.min(tensor(fd, [4], INT), [0])),
        "T1_g_int64_t[rS1{4}]\n   = reduction( T0_g_int64_t[iS0{4}], op = fmin, "
        "initial value = 9223372036854775807, allreduce = false )\n",
    ),
    "prod_reduction": (
        lambda fd: fd.add_output(fd.ops.prod(tensor(fd, [4], DOUBLE), [0])),
        "T1_g_double[rS1{4}]\n   = reduction( T0_g_double[iS0{4}], op = mul, "
        "initial value = double(1), allreduce = false )\n",
    ),
    "welford": (
        lambda fd: fd.add_output(fd.ops.welford(tensor(fd, [4]), [0])[0]),
        "T1_g_float[rS1{4}](Avg),\nT2_l_float[rS2{4}](Var),\nT3_l_int64_t[rS3{4}](Count)\n"
        " = Welford ( T0_g_float[iS0{4}](Avg), \n  allreduce = false )\n",
    ),
    "var_mean": (
        lambda fd: fd.add_output(fd.ops.var_mean(tensor(fd, [4]), [0], 1)[0]),
        "( T1_g_float[rS1{4}], T2_l_float[rS2{4}] ) = var_mean( T0_g_float[iS0{4}], "
        "dims = {0}, correction = 1 )\n",
    ),
    "cumsum": (
        lambda fd: fd.add_output(fd.ops.cumsum(tensor(fd, [4]), 0)),
        "T1_g_float[iS1{4}]\n   = scan(T0_g_float[iS0{4}],\n          dim=0,\n"
        "          op_type=add,\n          init=float(0))\n",
    ),
    "argsort": (
        lambda fd: fd.add_output(fd.ops.argsort(tensor(fd, [4]), 0, descending=True)),
        "T1_g_int64_t[iS1{4}] = argsort( T0_g_float[iS0{4}], dim = 0, descending = True, "
        "stable = False )\n",
    ),
    "topk": (
        lambda fd: fd.add_output(fd.ops.topk(tensor(fd, [4]), fd.define_scalar(2), 0)[0]),
        "( T1_g_float[iS1{2}], T2_l_int64_t[iS2{2}] ) = topk( T0_g_float[iS0{4}], 2, dim = 0, "
        "largest = True, sorted = False )\n",
    ),
    "set": (
        lambda fd: fd.add_output(fd.ops.set(tensor(fd, [4]))),
        "T1_g_float[iS1{4}]\n   = Set( T0_g_float[iS0{4}], cache_op=Streaming )\n",
    ),
    "segment_set": (
        lambda fd: fd.add_output(fd.ops.segment_set(tensor(fd, [4]))),
        "T1_g_float[iS1{4}]\n   = SegmenterSet( T0_g_float[iS0{4}] )\n",
    ),
    "squeeze": (
        lambda fd: fd.add_output(fd.ops.squeeze(tensor(fd, [4, 1]), [1])),
        "T1_g_float[iS2{4}]\n   = squeeze( T0_g_float[iS0{4}, bS1{1}], flags = {false, true} )\n",
    ),
    "reshape_symbolic": (
        lambda fd: fd.add_output(fd.ops.reshape(tensor(fd, [-1, -1]), [-1])),
        "T1_g_float[iS2{( i0 * i1 )}rf] = reshape( T0_g_float[iS0{i0}, iS1{i1}] )\n",
    ),
    "slice": (
        lambda fd: fd.add_output(fd.ops.slice(tensor(fd, [2, 4]), [0, 1], [2, 3])),
        "T1_g_float[iS2{2}, iS3{2}rf]\n"
        "   = slice( T0_g_float[iS0{2}, iS1{4}], { {0, 2, 1} {1, 3, 1} } )\n",
    ),
    "pad_widths_outer_to_inner": (
        lambda fd: fd.add_output(fd.ops.pad(tensor(fd, [2, 4]), [1, 2])),
        "T1_g_float[iS2{2}, iS3{7}rf]\n   = pad( T0_g_float[iS0{2}, iS1{4}], {0, 0, 1, 2} )\n",
    ),
    "cat": (
        lambda fd: fd.add_output(fd.ops.cat([tensor(fd, [2]), tensor(fd, [3])], 0)),
        "T2_g_float[iS2{5}rf]\n   = cat( T0_g_float[iS0{2}], T1_g_float[iS1{3}], 0 )\n",
    ),
    "index_select": (
        lambda fd: fd.add_output(fd.ops.index_select(tensor(fd, [4]), tensor(fd, [2], INT), 0)),
        "T2_g_float[iS2{2}]\n"
        "   = indexSelect( T0_g_float[iS0{4}], dim = 0, T1_g_int64_t[iS1{2}] )\n",
    ),
    "select": (
        lambda fd: fd.add_output(fd.ops.select(tensor(fd, [2, 4]), fd.define_scalar(1), 0)),
        "T1_g_float[iS2{4}]\n   = select( T0_g_float[iS0{2}, iS1{4}], axis = iS0{2}, index = 1 )\n",
    ),
    "gather": (
        lambda fd: fd.add_output(fd.ops.gather(tensor(fd, [4]), tensor(fd, [2], INT), 0)),
        "T2_g_float[iS2{2}]\n"
        "   = torchGather( T0_g_float[iS0{4}], dim = 0, T1_g_int64_t[iS1{2}] )\n",
    ),
    "take_along_axis": (
        lambda fd: fd.add_output(fd.ops.take_along_axis(tensor(fd, [4]), tensor(fd, [4], INT), 0)),
        "T2_g_float[iS2{4}]\n"
        "   = takeAlongAxis( T0_g_float[iS0{4}], T1_g_int64_t[iS1{4}], dim = 0 )\n",
    ),
    "scatter": (
        lambda fd: fd.add_output(
            fd.ops.scatter(tensor(fd, [4]), tensor(fd, [2], INT), tensor(fd, [2]), 0)
        ),
        "T3_g_float[iS3{4}]\n   = scatter(in = T0_g_float[iS0{4}], dim = 0, "
        "src = T2_g_float[iS2{2}], idx = T1_g_int64_t[iS1{2}] )\n",
    ),
    "embedding": (
        lambda fd: fd.add_output(fd.ops.embedding_fwd(tensor(fd, [5], INT), tensor(fd, [10, 3]))),
        "T2_g_float[iS3{5}, iS4{3}],\n   = embedding(T0_g_int64_t[iS0{5}],\n"
        "            T1_g_float[iS1{10}, iS2{3}],\n            norm_type = double(2),\n"
        "            scale_grad_by_freq = false,\n            sparse = false)\n",
    ),
    "full": (
        lambda fd: fd.add_output(fd.ops.full([2, 3], fd.define_scalar(1.0), DOUBLE)),
        "T0_g_double[iS0{2}, iS1{3}]\n   = full({2, 3}, double(1));\n",
    ),
    "iota": (
        lambda fd: fd.add_output(fd.ops.iota(fd.define_scalar(4), dtype=INT)),
        "T0_g_int64_t[iS0{4}]\n   = iota(4, 0, 1, int64_t);\n",
    ),
    "uniform": (
        lambda fd: fd.add_output(
            fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), [2, 3], dtype=FLOAT)
        ),
        "T0_g_float[iS0{2}, iS1{3}]\n"
        "   = rng_uniform_range({2, 3}, double(0), double(1), float);\n",
    ),
    "randn_like": (
        lambda fd: fd.add_output(fd.ops.randn_like(tensor(fd, [2]))),
        "T1_g_float[iS1{2}]\n   = rng_normal_standard({2}, float);\n",
    ),
    "matmul": (
        lambda fd: fd.add_output(fd.ops.matmul(tensor(fd, [2, 4]), tensor(fd, [4, 3]))),
        "T2_g_float[iS4{2}, iS5{3}, rS6{4}]\n   = matmul(T0_g_float[iS0{2}, iS1{4}],\n"
        "            T1_g_float[iS2{4}, iS3{3}])\n",
    ),
    # nvFuser's LinearOp::toString indents before ")" and before the bias's ",".
    "linear": (
        lambda fd: fd.add_output(fd.ops.linear(tensor(fd, [2, 4]), tensor(fd, [3, 4]))),
        "T2_g_float[iS4{2}, iS5{3}, rS6{4}]\n   = linear(T0_g_float[iS0{2}, iS1{4}],\n"
        "            T1_g_float[iS2{3}, iS3{4}]  )\n",
    ),
    "linear_bias": (
        lambda fd: fd.add_output(
            fd.ops.linear(tensor(fd, [2, 4]), tensor(fd, [3, 4]), tensor(fd, [3]))
        ),
        "T3_g_float[iS5{2}, iS6{3}, rS7{4}]\n   = linear(T0_g_float[iS0{2}, iS1{4}],\n"
        "            T1_g_float[iS2{3}, iS3{4}]  ,\n          T2_g_float[iS4{3}]  )\n",
    ),
    "sdpa": (
        lambda fd: fd.add_output(
            fd.ops.sdpfa_fwd(
                *[tensor(fd, [1, 2, 8, 16], BF16)] * 3, scale=fd.define_scalar(0.25)
            )[0]
        ),
        "T1_g___bfloat[bS4{1}, iS5{2}, iS6{8}, iS7{16}],\n"
        "T2_l_float[bS8{1}, iS9{2}, iS10{8}],\nT3_l_uint64_t[iS11{2}],\nT4_l_uint64_t[]\n"
        "   = sdpa(T0_g___bfloat[bS0{1}, iS1{2}, iS2{8}, iS3{16}],\n"
        "            T0_g___bfloat[bS0{1}, iS1{2}, iS2{8}, iS3{16}],\n"
        "            T0_g___bfloat[bS0{1}, iS1{2}, iS2{8}, iS3{16}],\n"
        "            dropout_p = double(0),\n            is_causal = false  ,\n"
        "          scale = double(0.25)  )\n",
    ),
    "triu_has_no_nvfuser_expr": (
        lambda fd: fd.add_output(fd.ops.triu(tensor(fd, [2, 2]))),
        "T1_g_float[iS2{2}, iS3{2}]\n   = triu( T0_g_float[iS0{2}, iS1{2}] )\n",
    ),
}


@pytest.mark.parametrize("case", sorted(EXPR_CASES))
def test_expr_text(case: str) -> None:
    body, expected = EXPR_CASES[case]
    assert last_expr(body) == expected


def test_every_op_has_a_printer() -> None:
    assert set(EXPR_PRINTERS) == set(OpType)


# --- values -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dtype", "text"),
    [
        (3, DOUBLE, "double(3)"),
        (0, FLOAT, "float(0)"),
        (0.1, DOUBLE, "double(0.10000000000000001)"),
        (0.1, FLOAT, "float(0.1)"),
        (1e-5, FLOAT, "float(1e-05)"),
        (-math.inf, FLOAT, "float(-inf)"),
        (0, BF16, "__bfloat(0)"),
        (4096, INT, "4096"),
        (True, DataType.Bool, "true"),
        (1 + 2j, DataType.ComplexDouble, "std::complex<double>((1,2))"),
    ],
)
def test_constant_str(value: object, dtype: DataType, text: str) -> None:
    assert constant_str(value, dtype) == text


def test_extent_expressions_nest_in_parentheses() -> None:
    a, b, c = SymbolicExtent(), SymbolicExtent(), SymbolicExtent()
    product = extent_op(ExtentOp.MUL, extent_op(ExtentOp.MUL, a, b), c)
    namer = Namer()
    assert extent_str(product, namer) == "( ( i0 * i1 ) * i2 )"
    assert extent_str(extent_op(ExtentOp.CEIL_DIV, product, 4), namer) == (
        "( ceilDiv(( ( i0 * i1 ) * i2 ), 4) )"
    )


@pytest.mark.parametrize(
    ("source", "target", "name"),
    [
        (BF16, FLOAT, "__bfloat2float"),
        (FLOAT, BF16, "__float2bfloat"),
        (DataType.Half, FLOAT, "__half2float"),
        (FLOAT, DataType.Half, "__float2half"),
        (DataType.Half, BF16, "__half2bfloat"),
        (BF16, INT, "__bfloat2int"),
        (INT, DataType.Half, "__int2half"),
        (DataType.Bool, BF16, "__bool2bfloat"),
        (INT, FLOAT, "__to_float"),
        (FLOAT, DOUBLE, "__to_double"),
        (DOUBLE, INT, "__to_int64"),
        (DataType.Int32, DataType.Bool, "__to_bool"),
        (DataType.ComplexFloat, FLOAT, "__real_then_to_float"),
        (FLOAT, DataType.ComplexDouble, "__to_complex_double"),
        (DataType.Float8_e4m3fn, FLOAT, "__e4m32float"),
        (FLOAT, DataType.Float8_e5m2, "__float2e5m2"),
        (DataType.Float8_e4m3fn, INT, "__to_int64"),  # unsupported by nvFuser
    ],
)
def test_cast_function(source: DataType, target: DataType, name: str) -> None:
    assert cast_function(source, target) == name
