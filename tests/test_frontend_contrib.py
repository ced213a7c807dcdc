"""nvFuser's instance norm modules (``nvfuser.contrib.nn.normalization``), the scans, the LRU
cache's key and the default session keeping nothing: checked against eager torch in float64."""

from __future__ import annotations

import gc
import itertools
import textwrap
import weakref

import pytest
import torch

from fusecli.frontend import FusionDefinition, LRUCache, session
from fusecli.frontend.contrib import InstanceNorm3dNVFuser


def _instance_norm_float64(x, weight, bias, eps=1e-5):
    """The textbook formula, in float64, differentiable: an independent reference."""
    dims = tuple(range(2, x.ndim))
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, keepdim=True, unbiased=False)
    y = (x - mean) / torch.sqrt(var + eps)
    if weight is not None:
        shape = [1, -1] + [1] * (x.ndim - 2)
        y = y * weight.view(shape) + bias.view(shape)
    return y


LAYOUTS = ["contiguous", "channels_last", "strided"]


def _input(layout, shape, dtype):
    n, c, s = shape
    x = torch.rand(n, c, s, s, 2 * s if layout == "strided" else s, dtype=dtype)
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last_3d)
    elif layout == "strided":
        x = x[..., ::2]
    return x


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(5, 7, 3), (1, 7, 3), (2, 1, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_instance_norm_forward_and_backward_match_the_float64_formula(layout, affine, shape, dtype):
    torch.manual_seed(0)
    module = InstanceNorm3dNVFuser(shape[1], affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            module.weight.uniform_(0.5, 1.5)
            module.bias.uniform_(-0.5, 0.5)
    x = _input(layout, shape, dtype).requires_grad_()
    grad = torch.randn_like(x)
    y = module(x)
    y.backward(grad)

    x64 = x.detach().double().requires_grad_()
    w64 = module.weight.detach().double().requires_grad_() if affine else None
    b64 = module.bias.detach().double().requires_grad_() if affine else None
    y64 = _instance_norm_float64(x64, w64, b64)
    y64.backward(grad.double())

    tolerance = {torch.float32: 1e-4, torch.float64: 1e-10, torch.bfloat16: 5e-2}[dtype]
    assert y.dtype == dtype
    torch.testing.assert_close(y.double(), y64.detach(), atol=tolerance, rtol=tolerance)
    torch.testing.assert_close(x.grad.double(), x64.grad, atol=tolerance * 10, rtol=tolerance)
    if affine:
        torch.testing.assert_close(module.weight.grad.double(), w64.grad, atol=tolerance * 10,
                                   rtol=tolerance)
        torch.testing.assert_close(module.bias.grad.double(), b64.grad, atol=tolerance * 10,
                                   rtol=tolerance)


def test_instance_norm_running_statistics_follow_torch():
    torch.manual_seed(1)
    ours = InstanceNorm3dNVFuser(3, track_running_stats=True, momentum=0.2)
    reference = torch.nn.InstanceNorm3d(3, track_running_stats=True, momentum=0.2,
                                        dtype=torch.float64)
    for _ in range(3):  # training: running statistics move toward the batch's
        x = torch.rand(4, 3, 2, 3, 4)
        ours(x)
        reference(x.double())
    torch.testing.assert_close(ours.running_mean.double(), reference.running_mean)
    torch.testing.assert_close(ours.running_var.double(), reference.running_var)

    ours.eval()
    reference.eval()  # eval: normalized by the running statistics, which stay put
    x = torch.rand(2, 3, 2, 3, 4, requires_grad=True)
    x64 = x.detach().double().requires_grad_()
    before = ours.running_mean.clone()
    y, y64 = ours(x), reference(x64)
    torch.testing.assert_close(y.double(), y64.detach(), atol=1e-5, rtol=1e-5)
    assert torch.equal(ours.running_mean, before)
    grad = torch.randn_like(x)
    y.backward(grad)
    y64.backward(grad.double())
    torch.testing.assert_close(x.grad.double(), x64.grad, atol=1e-5, rtol=1e-5)


def test_a_script_using_nvfuser_contrib_instance_norm_runs_and_checks_both_fusions(tmp_path):
    from click.testing import CliRunner

    from fusecli.cli.main import cli, register
    from fusecli.load import load_path

    register()

    script = tmp_path / "instance_norm_repro.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from nvfuser.contrib.nn.normalization import InstanceNorm3dNVFuser

        m = InstanceNorm3dNVFuser(4, affine=True, device="cuda")
        x = torch.randn(2, 4, 3, 3, 3, device="cuda", requires_grad=True)
        m(x).sum().backward()
        """))
    assert len(load_path(script, device="cpu")) == 2  # the forward and the backward fusion
    ran = CliRunner().invoke(cli, ["run", str(script), "--json"])
    assert ran.exit_code == 0, ran.output


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummin", "cummax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans_match_torch(op, dim):
    x = torch.randn(6, 9, dtype=torch.float64)
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), dim))
    (out,) = fd.execute([x])
    expected = getattr(torch, op)(x, dim)
    expected = expected.values if op in ("cummin", "cummax") else expected
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=0)
    assert f"fd.ops.{op}(T0, dim={dim})" in repr(fd)


def test_integer_cumprod_accumulates_in_int64_as_torch_does():
    x = torch.arange(1, 7, dtype=torch.int32).reshape(2, 3)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cumprod(fd.from_pytorch(x), 1))
    (out,) = fd.execute([x])
    assert out.dtype == torch.int64 and torch.equal(out, torch.cumprod(x, 1))


def test_lru_cache_tells_fusions_apart_by_input_layout():
    """The same ops on a row-major and a column-major input are two fusions in nvFuser."""
    row = torch.randn(4, 6)
    column = row.t().contiguous().t()
    cache = LRUCache(max_fusions=8)
    for inputs in ([row], [column], [row]):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.neg(fd.from_pytorch(inputs[0])))
        cache.cache_compile(fd.fusion)
    assert cache.num_fusions() == 2


def test_the_default_session_keeps_no_call_alive():
    """A program executing a fusion in a loop, with nobody capturing, retains nothing."""
    assert not session.current().listening
    x = torch.randn(64, 64)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.exp(fd.from_pytorch(x)))
    outputs = [weakref.ref(fd.execute([x])[0]) for _ in range(20)]
    gc.collect()
    assert all(ref() is None for ref in outputs)
    assert session.current().calls == [] and session.current().definitions == []


def test_instance_norm_builds_each_fusion_once_per_signature():
    from fusecli.frontend import contrib

    module = InstanceNorm3dNVFuser(2)
    before = len(contrib._FUSIONS)
    for _ in range(3):
        module(torch.rand(3, 2, 2, 2, 5, requires_grad=True)).sum().backward()
    assert len(contrib._FUSIONS) - before <= 2
    for shape in itertools.product([2, 3], [2]):  # new sizes, same signature: no new fusion
        module(torch.rand(shape[0], 2, 3, 3, 3))
    assert len(contrib._FUSIONS) - before <= 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_instance_norm_gradient_of_a_channels_last_batch_of_one(dtype):
    """The input gradient of a channels_last_3d batch of one, against the float64 formula
    (torch 2.13's own CPU kernel gets this case wrong: nvFuser's suite compares with it, so
    the conformance harness sets those tests aside while that stays true)."""
    torch.manual_seed(42)
    x = torch.rand((1, 7, 3, 3, 3), dtype=dtype).to(memory_format=torch.channels_last_3d)
    x.requires_grad = True
    grad_out = torch.randn_like(x)
    InstanceNorm3dNVFuser(7, dtype=dtype)(x).backward(grad_out)
    xd, g = x.detach().double(), grad_out.double()
    mean = xd.mean(dim=(2, 3, 4), keepdim=True)
    invstd = (xd.var(dim=(2, 3, 4), unbiased=False, keepdim=True) + 1e-5).rsqrt()
    x_hat = (xd - mean) * invstd
    expected = invstd * (g - g.mean(dim=(2, 3, 4), keepdim=True)
                         - x_hat * (g * x_hat).mean(dim=(2, 3, 4), keepdim=True))
    torch.testing.assert_close(x.grad.double(), expected, rtol=1e-4, atol=1e-4)
