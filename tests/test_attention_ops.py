"""fd.ops.sdpfa_fwd (with bias and mask), sdpfa_bwd and grouped_mm, as a user calls them.

Each result of ``fd.execute`` is checked against the math written out in float64 eager torch:
softmax attention and its gradients by autograd, one matmul per group. Then the same fusions
go through ``fusecli run``'s pipeline (reference, error bounds, comparison) and bisect's replay.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.bisect.selection import Slicer
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.rng import random_tensor
from fusecli.load import load_path
from fusecli.reference import run_reference


def _attention64(q, k, v, bias=None, mask=None, is_causal=False, scale=None, kept=None,
                 dropout_p=0.0):
    """Softmax attention in float64; a row with no visible key gives 0 and logsumexp -inf."""
    q, k, v = (t.double() for t in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if bias is not None:
        scores = scores + bias.double()
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    if is_causal:
        scores = scores.masked_fill(~torch.ones(scores.shape[-2:], dtype=torch.bool).tril(),
                                    -math.inf)
    logsumexp = torch.logsumexp(scores, -1)
    weights = torch.softmax(scores, -1).nan_to_num(0.0)
    if kept is not None:
        weights = torch.where(kept, weights / (1 - dropout_p), 0.0)
    return weights @ v, logsumexp


def _tensor(fd: FusionDefinition, t: torch.Tensor, stride_order=None):
    dtype = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16,
             torch.bool: DataType.Bool, torch.int32: DataType.Int32,
             torch.float8_e4m3fn: DataType.Float8_e4m3fn, torch.uint64: DataType.UInt64}
    kwargs = {"stride_order": stride_order} if stride_order else {}
    return fd.define_tensor(shape=[-1] * t.dim(), contiguity=True, dtype=dtype[t.dtype],
                            **kwargs)


def _close(actual: torch.Tensor, expected: torch.Tensor, **tolerances) -> None:
    torch.testing.assert_close(actual.double(), expected.double(), **tolerances)


# -- sdpfa_fwd -----------------------------------------------------------------------------------


@pytest.mark.parametrize("head_size_of_value", [8, 6])  # the flash kernel, then the math
def test_sdpfa_fwd_adds_the_bias_and_masks_what_the_mask_hides(head_size_of_value: int) -> None:
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 4, 8)
    v = torch.randn(2, 3, 4, head_size_of_value)
    bias = torch.randn(2, 1, 5, 4)  # broadcast over heads
    mask = torch.rand(2, 3, 5, 4) > 0.3
    mask[0, 1, 2] = False  # a query that sees no key
    with FusionDefinition() as fd:
        tq, tk, tv, tb, tm = (_tensor(fd, t) for t in (q, k, v, bias, mask))
        out, logsumexp, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, bias=tb, mask=tm,
                                                        is_causal=True, scale=0.3)
        for t in (out, logsumexp, seed, offset):
            fd.add_output(t)
    out, logsumexp, seed, offset = fd.execute([q, k, v, bias, mask])
    expected, expected_lse = _attention64(q, k, v, bias, mask, is_causal=True, scale=0.3)
    _close(out, expected, atol=1e-5, rtol=1e-5)
    _close(logsumexp, expected_lse, atol=1e-5, rtol=1e-5)
    assert out[0, 1, 2].eq(0).all() and logsumexp[0, 1, 2] == -math.inf
    # torch >= 2.7's flash attention state: uint64 [2] and an unused uint64 scalar
    assert (seed.dtype, seed.shape, offset.dtype, offset.shape) == (
        torch.uint64, (2,), torch.uint64, ())


def test_sdpfa_fwd_lays_its_output_out_as_the_query_and_takes_batch_dims() -> None:
    torch.manual_seed(1)
    # [N1, N2, H, L, E] stored as [N1, N2, L, H, E]: the query's stride order is [4, 3, 1, 2, 0]
    q, k, v = (torch.randn(2, 3, 5, 4, 8).transpose(2, 3) for _ in range(3))
    order = [4, 3, 1, 2, 0]
    with FusionDefinition() as fd:
        tq, tk, tv = (_tensor(fd, t, order) for t in (q, k, v))
        out, logsumexp, *_ = fd.ops.sdpfa_fwd(tq, tk, tv)
        fd.add_output(out)
        fd.add_output(logsumexp)
    out, logsumexp = fd.execute([q, k, v])
    expected, expected_lse = _attention64(q, k, v)
    _close(out, expected, atol=1e-5, rtol=1e-5)
    _close(logsumexp, expected_lse, atol=1e-5, rtol=1e-5)
    assert out.shape == (2, 3, 4, 5, 8) and out.stride() == q.stride()
    assert logsumexp.is_contiguous()


def test_sdpfa_fwd_checks_its_operands() -> None:
    with pytest.raises(RuntimeError, match="mask must be a Bool tensor"):
        with FusionDefinition() as fd:
            q = fd.define_tensor(shape=[-1] * 4, dtype=DataType.Float)
            fd.ops.sdpfa_fwd(q, q, q, mask=q)
    with pytest.raises(RuntimeError, match="one dtype"):
        with FusionDefinition() as fd:
            q = fd.define_tensor(shape=[-1] * 4, dtype=DataType.Float)
            h = fd.define_tensor(shape=[-1] * 4, dtype=DataType.BFloat16)
            fd.ops.sdpfa_fwd(q, q, h)


# -- sdpfa_bwd ---------------------------------------------------------------------------------


def _attention_grads64(q, k, v, grad_out, **options):
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    out, _ = _attention64(*leaves, **options)
    out.backward(grad_out.double())
    return out.detach(), [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpfa_bwd_gives_the_gradients_of_attention(is_causal: bool) -> None:
    torch.manual_seed(2)
    q, k, v, grad_out = (torch.randn(2, 3, 6, 8) for _ in range(4))
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (_tensor(fd, t) for t in (q, k, v, grad_out))
        out, logsumexp, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, is_causal=is_causal,
                                                        scale=0.3)
        # nvFuser's binding: every argument positional, the optional scalars None or given
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, out, logsumexp, None, is_causal, seed, offset,
                                 0.3)
        for t in grads:
            fd.add_output(t)
    actual = fd.execute([q, k, v, grad_out])
    _, expected = _attention_grads64(q, k, v, grad_out, is_causal=is_causal, scale=0.3)
    for got, want in zip(actual, expected, strict=True):
        assert got.dtype is torch.float32
        _close(got, want, atol=1e-5, rtol=1e-4)


def test_sdpfa_fwd_and_bwd_drop_the_probabilities_the_philox_state_names() -> None:
    torch.manual_seed(3)
    q, k, v, grad_out = (torch.randn(1, 2, 6, 8) for _ in range(4))
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (_tensor(fd, t) for t in (q, k, v, grad_out))
        dropout_p = fd.define_scalar(0.3, dtype=DataType.Double)
        out, logsumexp, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=dropout_p)
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, out, logsumexp, dropout_p, None, seed, offset,
                                 None)
        for t in (out, seed, *grads):
            fd.add_output(t)
    out, seed, *grads = fd.execute([q, k, v, grad_out])
    # [seed, offset] of fusecli's random stream; both ops drop where its draws are below 0.3
    draws = random_tensor("uniform", (1, 2, 6, 6), torch.float32, 0.0, 1.0, *seed.tolist())
    kept = draws >= 0.3
    assert 0 < int(kept.sum()) < kept.numel()
    expected_out, expected_grads = _attention_grads64(q, k, v, grad_out, kept=kept,
                                                      dropout_p=0.3)
    _close(out, expected_out, atol=1e-5, rtol=1e-4)
    for got, want in zip(grads, expected_grads, strict=True):
        _close(got, want, atol=1e-5, rtol=1e-4)


# -- on a GPU: torch's flash attention, its dropout from torch's CUDA generator -----------------

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DROPOUT_P = 0.2


def _cuda_randn(*shape: int, requires_grad: bool = False) -> torch.Tensor:
    return torch.randn(shape, dtype=torch.bfloat16, device="cuda", requires_grad=requires_grad)


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("batch", [(4,), (2, 2)])  # nvFuser flattens batch dims for the kernel
def test_cuda_sdpfa_fwd_with_dropout_is_torchs_flash_attention_bit_for_bit(
    batch: tuple[int, ...], is_causal: bool,
) -> None:
    torch.manual_seed(6)
    q, k, v = (_cuda_randn(*batch, 8, 16, 64) for _ in range(3))
    with FusionDefinition() as fd:
        tq, tk, tv = (_tensor(fd, t) for t in (q, k, v))
        out, logsumexp, seed, offset = fd.ops.sdpfa_fwd(
            tq, tk, tv, dropout_p=fd.define_scalar(DROPOUT_P, dtype=DataType.Double),
            is_causal=fd.define_scalar(is_causal, dtype=DataType.Bool),
        )
        for t in (out, logsumexp, seed, offset):
            fd.add_output(t)
    torch.manual_seed(0)
    out, logsumexp, seed, offset = fd.execute([q, k, v])
    flat = [t.reshape(-1, *t.shape[-3:]) for t in (q, k, v)]
    torch.manual_seed(0)
    expected = torch.ops.aten._scaled_dot_product_flash_attention(
        *flat, DROPOUT_P, is_causal, False, scale=1 / math.sqrt(64))
    assert torch.equal(out.reshape(expected[0].shape), expected[0])
    assert torch.equal(logsumexp.reshape(expected[1].shape), expected[1])
    # the kernel's rng_state: torch's CUDA generator's seed and offset, for the backward
    assert (seed.dtype, seed.shape, offset.dtype, offset.shape) == (
        torch.uint64, (2,), torch.uint64, ())
    assert torch.equal(seed.cpu(), expected[6].cpu())
    # the dropout dropped something: the output is not that of no dropout
    no_dropout = torch.ops.aten._scaled_dot_product_flash_attention(
        *flat, 0.0, is_causal, False, scale=1 / math.sqrt(64))[0]
    assert not torch.equal(out.reshape(no_dropout.shape), no_dropout)
    if batch == (4,):  # what the suite's test_sdpa_fwd compares with
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            torch.manual_seed(0)
            eager = F.scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT_P,
                                                   is_causal=is_causal)
        assert torch.equal(out, eager)


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("is_causal", [False, True])
def test_cuda_sdpfa_bwd_with_dropout_is_torchs_flash_backward_bit_for_bit(
    is_causal: bool,
) -> None:
    torch.manual_seed(7)
    q, k, v, grad_out = (_cuda_randn(4, 8, 16, 64) for _ in range(4))
    scale = 0.1
    # torch's forward draws its dropout mask and returns the state to draw it again
    forward = torch.ops.aten._scaled_dot_product_flash_attention(
        q, k, v, DROPOUT_P, is_causal, False, scale=scale)
    out, logsumexp, philox_seed, philox_offset = (forward[i] for i in (0, 1, 6, 7))
    expected = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        grad_out, q, k, v, out, logsumexp, forward[2], forward[3], forward[4], forward[5],
        DROPOUT_P, is_causal, philox_seed, philox_offset, scale=scale)
    inputs = [grad_out, q, k, v, out, logsumexp, philox_seed, philox_offset]
    with FusionDefinition() as fd:
        tensors = [_tensor(fd, t) for t in inputs]
        grads = fd.ops.sdpfa_bwd(*tensors[:6], fd.define_scalar(DROPOUT_P, dtype=DataType.Double),
                                 fd.define_scalar(is_causal, dtype=DataType.Bool), *tensors[6:],
                                 fd.define_scalar(scale, dtype=DataType.Double))
        for t in grads:
            fd.add_output(t)
    actual = fd.execute(inputs)
    for got, want in zip(actual, expected, strict=True):
        assert got.dtype is torch.bfloat16
        assert torch.equal(got, want)


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("is_causal", [False, True])
def test_cuda_sdpfa_fwd_then_bwd_with_dropout_is_torchs_autograd_bit_for_bit(
    is_causal: bool,
) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(8)
    q, k, v = (_cuda_randn(4, 8, 16, 64, requires_grad=True) for _ in range(3))
    grad_out = _cuda_randn(4, 8, 16, 64)
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (_tensor(fd, t) for t in (q, k, v, grad_out))
        dropout_p = fd.define_scalar(DROPOUT_P, dtype=DataType.Double)
        causal = fd.define_scalar(is_causal, dtype=DataType.Bool)
        out, logsumexp, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=dropout_p,
                                                        is_causal=causal)
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, out, logsumexp, dropout_p, causal, seed,
                                 offset, None)
        for t in (out, *grads):
            fd.add_output(t)
    torch.manual_seed(0)
    out, *grads = fd.execute([q.detach(), k.detach(), v.detach(), grad_out])
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        torch.manual_seed(0)
        expected = F.scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT_P,
                                                  is_causal=is_causal)
        expected.backward(grad_out)
    assert torch.equal(out, expected.detach())
    for got, leaf in zip(grads, (q, k, v), strict=True):
        assert torch.equal(got, leaf.grad)


# -- grouped_mm ----------------------------------------------------------------------------------

OFFSETS = torch.tensor([8, 24, 32], dtype=torch.int32)  # three groups, of 8, 16 and 8
FORMS = {  # what the groups split: (mat1 shape, mat2 shape); rows of 16 bytes for torch
    "k": ((8, 32), (32, 16)),
    "n": ((3, 8, 16), (16, 32)),
    "m": ((32, 16), (3, 16, 8)),
}


def _grouped64(mat1, mat2, scale1=None, scale2=None) -> torch.Tensor:
    """One float64 product per group; scales multiply mat1's rows and mat2's columns."""
    a, b = mat1.double(), mat2.double()
    s1 = scale1.double() if scale1 is not None else None
    s2 = scale2.double() if scale2 is not None else None
    bounds = list(zip([0, *OFFSETS.tolist()[:-1]], OFFSETS.tolist()))
    products = []
    for group, (start, end) in enumerate(bounds):
        if a.dim() == 2 and b.dim() == 2:
            left, right = a[:, start:end], b[start:end]
            left_scale = s1[group] if s1 is not None else 1.0
            right_scale = s2[group] if s2 is not None else 1.0
        elif a.dim() == 3:
            left, right = a[group], b[:, start:end]
            left_scale = s1[group] if s1 is not None else 1.0
            right_scale = s2[:, start:end] if s2 is not None else 1.0
        else:
            left, right = a[start:end], b[group]
            left_scale = s1[start:end] if s1 is not None else 1.0
            right_scale = s2[group] if s2 is not None else 1.0
        products.append((left * left_scale) @ (right * right_scale))
    if a.dim() == 2 and b.dim() == 2:
        return torch.stack(products)
    return torch.cat(products, dim=-1 if a.dim() == 3 else 0)


@pytest.mark.parametrize("split", sorted(FORMS))
def test_grouped_mm_multiplies_each_group_on_its_own(split: str) -> None:
    torch.manual_seed(4)
    mat1, mat2 = (torch.randn(shape).bfloat16() for shape in FORMS[split])
    with FusionDefinition() as fd:
        t1, t2, to = (_tensor(fd, t) for t in (mat1, mat2, OFFSETS))
        fd.add_output(fd.ops.grouped_mm(t1, t2, to))
    (out,) = fd.execute([mat1, mat2, OFFSETS])
    expected = _grouped64(mat1, mat2)
    assert out.dtype is torch.bfloat16 and out.shape == expected.shape
    _close(out, expected, atol=1e-2, rtol=1e-2)
    assert torch.equal(out, torch._grouped_mm(mat1, mat2, OFFSETS))  # eager torch, bit for bit


@pytest.mark.parametrize("split", sorted(FORMS))
def test_scaled_grouped_mm_scales_rows_and_columns(split: str) -> None:
    torch.manual_seed(5)
    mat1, mat2 = (torch.randn(shape).to(torch.float8_e4m3fn) for shape in FORMS[split])
    groups = len(OFFSETS)
    out_rank = 3 if split == "k" else 2
    # a scale has the rank of its matrix or of the output, whichever is larger; 1 along k
    scale1 = torch.rand(*([groups] if mat1.dim() < out_rank else []), *mat1.shape[:-1], 1)
    scale2 = torch.rand(*([groups] if mat2.dim() < out_rank else []), *mat2.shape[:-2], 1,
                        mat2.shape[-1])
    with FusionDefinition() as fd:
        tensors = [_tensor(fd, t) for t in (mat1, mat2, OFFSETS, scale1, scale2)]
        out, block_scales, global_scale = fd.ops.grouped_mm(*tensors, dtype=DataType.BFloat16)
        fd.add_output(out)
    assert block_scales is None and global_scale is None
    (result,) = fd.execute([mat1, mat2, OFFSETS, scale1, scale2])
    expected = _grouped64(mat1, mat2, scale1, scale2)
    assert result.dtype is torch.bfloat16
    _close(result, expected.bfloat16(), atol=1e-3, rtol=8e-3)
    # its printed definition runs and defines the same fusion
    text = repr(fd)
    assert ", _, _ = fd.ops.grouped_mm(" in text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace[re.search(r"def (\w+)\(", text).group(1)](again)
    assert repr(again).split("\n", 2)[2] == text.split("\n", 2)[2]


CUDA_SCALED_FORMS = {  # (mat1, mat2, scale1, scale2, offsets' extent): two groups of 16
    "k": ((32, 32), (32, 32), (2, 32, 1), (2, 1, 32), 32),
    "m": ((32, 32), (2, 32, 32), (32, 1), (2, 1, 32), 32),
    "n": ((2, 32, 32), (32, 32), (2, 32, 1), (1, 32), 32),
}


@pytest.mark.cuda
@requires_cuda
@pytest.mark.skipif(not hasattr(torch, "_scaled_grouped_mm"), reason="torch has no fp8 kernel")
@pytest.mark.parametrize("split", sorted(CUDA_SCALED_FORMS))
def test_cuda_scaled_grouped_mm_is_torchs_kernel_bit_for_bit(split: str) -> None:
    """On CUDA the float8 form runs torch's kernel with the scales as nvFuser passes them
    (flattened for 2-D x 2-D, k squeezed otherwise), so its bits are torch's."""
    torch.manual_seed(6)
    shape1, shape2, shape_s1, shape_s2, extent = CUDA_SCALED_FORMS[split]
    mat1, mat2 = (torch.randn(s, device="cuda").to(torch.float8_e4m3fn) for s in (shape1, shape2))
    scale1, scale2 = (torch.rand(s, device="cuda") for s in (shape_s1, shape_s2))
    offsets = torch.tensor([extent // 2, extent], dtype=torch.int32, device="cuda")
    with FusionDefinition() as fd:
        tensors = [_tensor(fd, t) for t in (mat1, mat2, offsets, scale1, scale2)]
        fd.add_output(fd.ops.grouped_mm(*tensors, dtype=DataType.BFloat16)[0])
    (result,) = fd.execute([mat1, mat2, offsets, scale1, scale2])
    flat = split == "k"
    expected = torch._scaled_grouped_mm(
        mat1, mat2.transpose(-1, -2).contiguous().transpose(-1, -2),
        scale1.reshape(-1) if flat else scale1.squeeze(-1),
        scale2.reshape(-1) if flat else scale2.squeeze(-2),
        offsets, None, None, torch.bfloat16)
    assert torch.equal(result, expected)


def test_grouped_mm_without_scales_takes_no_scaled_options() -> None:
    with pytest.raises(TypeError, match="give scale1 and scale2"):
        with FusionDefinition() as fd:
            mat = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
            offsets = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
            fd.ops.grouped_mm(mat, mat, offsets, dtype=DataType.Float)


# -- printing ------------------------------------------------------------------------------------


def test_the_ir_prints_them_as_nvfuser_prints_sdpa_and_grouped_mma() -> None:
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[2, 3, 4, 8], dtype=DataType.BFloat16)
        bias = fd.define_tensor(shape=[2, 3, 4, 4], dtype=DataType.BFloat16)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, q, q, bias=bias)
        grads = fd.ops.sdpfa_bwd(q, q, q, q, out, lse, None, None, seed, offset,
                                 fd.define_scalar(0.5))
        mat1 = fd.define_tensor(shape=[16, 8], dtype=DataType.BFloat16)
        mat2 = fd.define_tensor(shape=[4, 8, 4], dtype=DataType.BFloat16)
        offsets = fd.define_tensor(shape=[4], dtype=DataType.Int32)
        for t in (*grads, fd.ops.grouped_mm(mat1, mat2, offsets)):
            fd.add_output(t)
    text = fd.fusion_ir()
    assert "T7_l_uint64_t[iS21{2}],\nT8_l_uint64_t[]\n   = sdpa(" in text
    assert "bias = T1_g___bfloat[iS4{2}, iS5{3}, iS6{4}, iS7{4}],\n" in text
    assert "logsum_exp = T6_l_float" in text and "scale = double(0.5))" in text
    assert "T12_g___bfloat[iS34{16}, iS35{4}, rS36{8}] = GroupedMmaOp(mat1=T2_g" in text


# -- the pipeline: reference, bounds, comparison; bisect's replay ------------------------------

SCRIPT = """
import torch
from nvfuser_direct import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[2, 3, 16, 8], contiguity=True, dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[2, 3, 16, 8], contiguity=True, dtype=DataType.Float)
    T2 = fd.define_tensor(shape=[2, 3, 16, 8], contiguity=True, dtype=DataType.Float)
    T3 = fd.define_tensor(shape=[2, 3, 16, 8], contiguity=True, dtype=DataType.Float)
    T4 = fd.define_tensor(shape=[2, 1, 16, 16], contiguity=True, dtype=DataType.Float)
    T5 = fd.define_tensor(shape=[16, 8], contiguity=True, dtype=DataType.BFloat16)
    T6 = fd.define_tensor(shape=[4, 8, 4], contiguity=True, dtype=DataType.BFloat16)
    T7 = fd.define_tensor(shape=[4], contiguity=True, dtype=DataType.Int32)
    S8 = fd.define_scalar(True, dtype=DataType.Bool)
    T9, T10, T11, T12 = fd.ops.sdpfa_fwd(T0, T1, T2, None, None, None, S8, None)
    T13, T14, T15 = fd.ops.sdpfa_bwd(T3, T0, T1, T2, T9, T10, None, S8, T11, T12, None)
    T16, T17, T18, T19 = fd.ops.sdpfa_fwd(T0, T1, T2, T4, None, None, None, None)
    T20 = fd.ops.grouped_mm(T5, T6, T7)
    for out in (T9, T10, T13, T14, T15, T16, T20):
        fd.add_output(out)

inputs = [
    *(torch.randn(2, 3, 16, 8, device="cuda") for _ in range(4)),
    torch.randn(2, 1, 16, 16, device="cuda"),
    torch.randn(16, 8, device="cuda").bfloat16(),
    torch.randn(4, 8, 4, device="cuda").bfloat16(),
    torch.tensor([4, 8, 12, 16], dtype=torch.int32, device="cuda"),
]
fd.execute(inputs)
"""


def test_fusecli_run_judges_attention_and_grouped_mm_and_bisect_replays_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "attention.py"
    path.write_text(textwrap.dedent(SCRIPT))
    (loaded,) = load_path(path, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert outcome.status == "pass", [d.summary() for d in outcome.outputs if not d.ok]
    # each runs alone through ATen, as nvFuser's expr_eval scheduler takes it
    ours = {"sdpfa_fwd", "sdpfa_bwd", "grouped_mm"}
    segments = [s for s in outcome.segments if ours & set(s.exprs)]
    assert sorted(op for s in segments for op in s.exprs) == sorted([*ours, "sdpfa_fwd"])
    assert all(s.scheduler == "expr_eval" and len(s.exprs) == 1 for s in segments)
    # every expr rebuilds alone, as bisect cuts a fusion into pieces
    values = run_reference(loaded.fusion, list(loaded.inputs), keep_intermediates=True).values
    slicer = Slicer(loaded, values)
    piece = slicer.build(slicer.everything())
    assert [e.op for e in piece.loaded.fusion.exprs] == [e.op for e in loaded.fusion.exprs]
