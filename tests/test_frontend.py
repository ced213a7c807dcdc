"""The frontend: nvFuser's API surface, dtype promotion, definition errors, repr round trip."""

from __future__ import annotations

import pytest

from fusecli.frontend import (
    DataType,
    DefinitionError,
    FusionDefinition,
    compute_contiguity,
    compute_tensor_descriptor,
)

D = DataType


def _tensor(fd, dtype, rank=2):
    return fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=dtype)


# -- promotion --------------------------------------------------------------------------------

BINARY_CASES = [
    # (op, lhs, rhs, lhs is tensor, rhs is tensor, expected)
    ("add", D.BFloat16, D.BFloat16, True, True, D.Float),
    ("add", D.Half, D.Half, True, True, D.Float),
    ("add", D.Half, D.BFloat16, True, True, D.Float),
    ("mul", D.Float, D.Double, True, False, D.Float),
    ("mul", D.BFloat16, D.Double, True, False, D.Float),
    ("mul", D.Int, D.Double, True, False, D.Double),  # nvFuser: the scalar's own dtype
    ("add", D.Half, D.Double, True, True, D.Double),  # test_promote_to_double
    ("add", D.Int32, D.Int, True, True, D.Int),
    ("add", D.Int32, D.Int, True, False, D.Int32),
    ("add", D.Bool, D.Int, True, False, D.Int),
    ("div", D.Int, D.Int, True, True, D.Int),
    ("truediv", D.Int, D.Int, True, True, D.Float),
    ("atan2", D.Int32, D.Int32, True, True, D.Float),
    ("lt", D.BFloat16, D.Float, True, True, D.Bool),
    ("eq", D.Int, D.Double, True, False, D.Bool),
    ("bitwise_and", D.Int32, D.Int32, True, True, D.Int32),
    ("logical_and", D.Float, D.Int, True, True, D.Bool),
    ("add", D.ComplexFloat, D.Double, True, False, D.ComplexFloat),
    ("add", D.Float, D.ComplexDouble, True, False, D.ComplexDouble),
]


@pytest.mark.parametrize("op,lhs,rhs,lhs_tensor,rhs_tensor,expected", BINARY_CASES)
def test_binary_promotion(op, lhs, rhs, lhs_tensor, rhs_tensor, expected):
    with FusionDefinition() as fd:
        a = _tensor(fd, lhs) if lhs_tensor else fd.define_scalar(lhs)
        b = _tensor(fd, rhs) if rhs_tensor else fd.define_scalar(rhs)
        out = getattr(fd.ops, op)(a, b)
        fd.add_output(out)
    assert out.dtype is expected


UNARY_CASES = [
    ("exp", D.BFloat16, D.Float),
    ("exp", D.Int, D.Float),
    ("exp", D.Double, D.Double),
    ("neg", D.BFloat16, D.Float),  # default config, issue #1541
    ("abs", D.BFloat16, D.BFloat16),
    ("relu", D.Half, D.Half),
    ("abs", D.ComplexFloat, D.Float),
    ("isnan", D.BFloat16, D.Bool),
    ("signbit", D.Float, D.Bool),
    ("floor", D.Int, D.Int),
    ("rsqrt", D.Int32, D.Float),
    ("bitwise_not", D.Bool, D.Bool),
]


@pytest.mark.parametrize("op,source,expected", UNARY_CASES)
def test_unary_promotion(op, source, expected):
    with FusionDefinition() as fd:
        out = getattr(fd.ops, op)(_tensor(fd, source))
        fd.add_output(out)
    assert out.dtype is expected


@pytest.mark.parametrize(
    "scalar_dtype,expected",
    [(D.Double, D.Double), (D.Float, D.Float), (D.Int32, D.Int32), (D.Int, D.Int),
     (D.ComplexDouble, D.ComplexDouble), (D.Bool, D.Bool)],
)
def test_where_keeps_scalar_dtype(scalar_dtype, expected):
    """test_where_dtypes: where(bool tensor, scalar, scalar) takes the scalars' dtype."""
    values = {D.Bool: (True, False), D.ComplexDouble: (3j, 5j)}.get(scalar_dtype, (3, 5))
    with FusionDefinition() as fd:
        cond = _tensor(fd, D.Bool)
        a = fd.define_scalar(values[0], dtype=scalar_dtype)
        b = fd.define_scalar(values[1], dtype=scalar_dtype)
        out = fd.ops.where(cond, a, b)
        fd.add_output(out)
    assert out.dtype is expected


@pytest.mark.parametrize(
    "op,source,dtype,expected",
    [
        ("sum", D.BFloat16, D.Null, D.BFloat16),
        ("sum", D.Int32, D.Null, D.Int),
        ("sum", D.Bool, D.Null, D.Int),
        ("sum", D.BFloat16, D.Float, D.Float),
        ("prod", D.Int32, D.Null, D.Int),
        ("max", D.Int32, D.Null, D.Int32),
        ("min", D.Half, D.Null, D.Half),
    ],
)
def test_reduction_dtypes(op, source, dtype, expected):
    with FusionDefinition() as fd:
        out = getattr(fd.ops, op)(_tensor(fd, source), dims=[1], keepdim=False, dtype=dtype)
        fd.add_output(out)
    assert out.dtype is expected
    assert out.ndim == 1


def test_operators_map_to_ops():
    with FusionDefinition() as fd:
        a, b = _tensor(fd, D.Int), _tensor(fd, D.Int)
        quotient = a / b
        fd.add_output(quotient)
        fd.add_output(-a)
        fd.add_output(a >= b)
    ops = [e.op.value for e in fd.fusion.exprs]
    assert ops == ["div", "neg", "ge"]
    assert quotient.dtype is D.Int  # '/' is C-style div, not truediv


def test_python_literal_operand_is_a_constant_scalar():
    # nvFuser takes Python numbers where a Scalar goes: fd.ops.mul(T, 2.0) records the constant.
    with FusionDefinition() as fd:
        out = fd.ops.mul(_tensor(fd, D.Float), 2.0)
        fd.add_output(out)
    cast, mul = fd.fusion.exprs  # the Double constant is cast to the Float math, as nvFuser
    (constant,) = cast.inputs
    assert (constant.is_constant, constant.value, constant.dtype) == (True, 2.0, D.Double)
    assert mul.outputs[0].dtype is D.Float  # a scalar does not widen a Float tensor


# -- define_tensor overloads ------------------------------------------------------------------


def test_compute_tensor_descriptor_matches_nvfuser_vectors():
    assert compute_tensor_descriptor([2, 3, 1, 5, 4], [28, 4, 14, 0, 1]) == (
        [False, None, True, None, True], [4, 2, 3, 1, 0]
    )
    assert compute_tensor_descriptor([2, 2, 1, 2, 4, 2], [2, 32, 1, 8, 0, 4]) == (
        [False, True, True, False, None, None], [2, 5, 0, 4, 1, 3]
    )
    assert compute_contiguity([4, 1, 3], [3, 3, 1]) == [True, None, True]


def test_define_tensor_overloads():
    with FusionDefinition() as fd:
        canonical = fd.define_tensor(
            shape=[-1, 1, -1], contiguity=[True, None, True], dtype=D.Half
        )
        from_bool = fd.define_tensor([-1, -1, -1])
        from_strides = fd.define_tensor(sizes=[4, 1, 3], strides=[1, 3, 4], dtype=D.Float)
        legacy = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True])
        fd.add_output(canonical)
    records = [r.text() for r in fd.records]
    assert records[1] == (
        "T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[False, False, False], "
        "dtype=DataType.Float, is_cpu=False)"
    )
    assert "contiguity=[True, None, True]" in records[2]
    assert "stride_order=[0, 1, 2]" in records[2]
    assert "shape=[-1, 1, -1]" in records[2]
    assert canonical.val.domain[1].is_broadcast
    assert from_bool.ndim == 3 and from_strides.ndim == 3 and legacy.ndim == 2


def test_expanded_broadcast_input():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=D.Float)
        fd.add_output(t)
    first = t.val.logical[0]
    assert first.is_broadcast and first.expanded is not None


# -- definition errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda fd, t: fd.ops.reshape(t, new_shape=[3, 5]),
         "reshape: Total element counts .* must match: 16 vs 15"),
        (lambda fd, t: fd.ops.permute(t, dims=[0]), "permute"),
        (lambda fd, t: fd.ops.sum(t, dims=[2]), "dim 2 is out of range"),
        (lambda fd, t: fd.ops.broadcast_in_dim(t, shape=[4, 4, 4], broadcast_dims=[0]),
         "broadcast_in_dim"),
        (lambda fd, t: fd.ops.squeeze(t, dims=[0]), "squeeze: cannot squeeze"),
        (lambda fd, t: fd.ops.add(t, fd.define_tensor(shape=[3, 5], contiguity=[True, True])),
         "operands have sizes 4 and 3"),
        (lambda fd, t: fd.ops.matmul(t, fd.define_tensor(shape=[5, 2], contiguity=[True, True])),
         "inner dimensions do not match"),
    ],
)
def test_definition_errors_name_the_op(build, message):
    with pytest.raises(DefinitionError, match=message):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[4, 4], contiguity=[True, True], dtype=D.Float)
            build(fd, t)


def test_reshape_infers_minus_one():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4, 6], contiguity=[True, True])
        out = fd.ops.reshape(t, new_shape=[-1, 3])
        fd.add_output(out)
    assert out.val.shape == (8, 3)


def test_adding_after_definition_fails():
    with FusionDefinition() as fd:
        t = _tensor(fd, D.Float)
        fd.add_output(t)
    with pytest.raises(RuntimeError, match="completed definition"):
        fd.ops.exp(t)


# -- repr and repro ---------------------------------------------------------------------------

REPRO = '''def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.mul(T0, T1)
    S3 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T4 = fd.ops.add(T2, S3)
    T9 = fd.ops.broadcast_in_dim(T4, shape=[1, 4, 4], broadcast_dims=[1, 2])
    T13 = fd.ops.reshape(T9, new_shape=[4, -1])
    T14 = fd.ops.sum(T13, dims=[1], keepdim=False, dtype=DataType.Null)
    T15, T16 = fd.ops.var_mean(T13, dims=[1], correction=0, keepdim=False)
    T26 = fd.ops.slice(T13, start_indices=[0, 0], end_indices=[4, 2], strides=[1, 1], manual_normalization=0)
    T27 = fd.ops.cat([T26, T26], dim=-1, manual_padding=0)
    fd.add_output(T14)
    fd.add_output(T27)
'''  # noqa: E501


def _define_from_text(text: str) -> FusionDefinition:
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as fd:
        namespace["nvfuser_fusion_id0"](fd)
    return fd


def test_repr_reproduces_nvfuser_format_and_hidden_indices():
    """Inline lists consume state indices (T9 after S5-S7 and V8), as nvFuser prints them."""
    fd = _define_from_text(REPRO)
    text = repr(fd)
    assert text.startswith("\ndef nvfuser_fusion_id")  # nvFuser's legacy print: a newline first
    body = text.split("\n", 2)[2]
    assert body == REPRO.split("\n", 1)[1] + "\n"  # and an empty line after the records


def test_repr_round_trips():
    fd = _define_from_text(REPRO)
    again = _define_from_text(repr(fd).replace(f"id{fd.id()}", "id0"))
    assert repr(again) == repr(fd)
    assert again.id() == fd.id()  # the cache recognizes the same definition


def test_repro_script_prints_inputs():
    import torch

    fd = _define_from_text(REPRO)
    script = fd.repro_script_for([torch.ones(4, 4), torch.ones(8).as_strided((4, 4), (1, 0))])
    assert "torch.testing.make_tensor((4, 4), dtype=torch.float32, device='cuda:0')," in script
    assert "torch.randn((4,), dtype=torch.float32, device='cuda:0').as_strided((4, 4), (1, 0))" \
        in script
    assert script.rstrip().endswith("fd.execute(inputs)")


def test_subclass_style_definition():
    import torch

    class MyFusion(FusionDefinition):
        def definition(self):
            t0 = self.define_tensor(shape=[-1], contiguity=[True])
            self.add_output(self.ops.sigmoid(t0))

    fd = MyFusion()
    (out,) = fd.execute([torch.zeros(3)])
    assert torch.equal(out, torch.full((3,), 0.5))
    with pytest.raises(NotImplementedError):
        FusionDefinition().execute([])


def test_double_formatting():
    from fusecli.frontend.records import format_double

    assert format_double(0.5) == "0.500000"
    assert format_double(1e-5) == "1.00000e-05"
    assert format_double(3.0) == "3.00000"
    assert format_double(float("-inf")) == 'float("-inf")'
    assert format_double(0.1234567891) == "0.1234567891"  # six digits would change it


# -- what nvFuser's own test suites use (tests/conformance/run.py) ----------------------------


def _add_mul(fd):
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
    t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
    fd.add_output(fd.ops.mul(fd.ops.add(t0, t1), t0))


def test_lru_cache_shares_an_entry_between_equal_fusions_and_runs_it():
    import torch

    from fusecli.frontend import LRUCache

    cache = LRUCache(max_fusions=4)
    entries = []
    for _ in range(2):
        with FusionDefinition() as fd:
            _add_mul(fd)
        fd.fec = cache.cache_compile(fd.fusion)
        del fd._fusion  # as nvFuser's direct tests do: the entry's fusion runs
        entries.append(fd.fec)
    assert cache.num_fusions() == 1 and entries[0] is entries[1]
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    (out,) = fd.execute([x, y])
    assert torch.allclose(out, (x + y) * x)


def test_clone_copies_a_definition_and_one_segment_gives_no_segment_definitions():
    import torch

    from fusecli.frontend import clone

    with FusionDefinition() as fd:
        _add_mul(fd)
    copy = FusionDefinition()
    clone(fd, copy)
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    assert copy.segment([x, y]) == []  # one segment: nothing to cut, as in nvFuser
    assert torch.equal(copy.execute([x, y])[0], fd.execute([x, y])[0])
    assert repr(copy) == repr(fd)


def test_the_direct_frontend_prints_nvfuser_fusion_and_its_print_runs():
    from fusecli.frontend.direct import DirectFusionDefinition

    with DirectFusionDefinition() as fd:
        _add_mul(fd)
    text = repr(fd)
    assert text.startswith("def nvfuser_fusion(fd : FusionDefinition) -> None :\n")
    namespace = {"FusionDefinition": DirectFusionDefinition, "DataType": D}
    exec(text, namespace)
    with DirectFusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    assert repr(again) == text


def test_validate_returns_the_outputs_and_handles_say_what_they_are():
    import torch

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=D.Float)
        s0 = fd.define_scalar(2.0, dtype=D.Double)
        fd.add_output(fd.ops.mul(t0, s0))
    assert t0.is_tensor() and not s0.is_tensor()
    x = torch.arange(4.0)
    (out,) = fd.validate([x])
    assert torch.equal(out, x * 2)


def test_index_select_takes_a_zero_dim_index_as_torch_does():
    import torch

    x, index = torch.randn(8, 16), torch.tensor(2)
    for dim in (0, 1):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.index_select(fd.from_pytorch(x), fd.from_pytorch(index), dim))
        (out,) = fd.execute([x, index])
        assert torch.equal(out, torch.index_select(x, dim, index))
