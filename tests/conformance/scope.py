"""Which of nvFuser's tests the conformance run skips, and why (``plugin.py`` applies it).

- ``OUT_OF_SCOPE``: (reason, pattern in the test's source or node id): what fusecli does not
  do (user schedules, nvFuser's lowered kernel text, several GPUs, Blackwell, profiling...);
- ``WRONG_REFERENCE``: (reason, pattern on the node id, probe): the test's own reference is
  wrong, or fails, on this host's torch; the probe asks torch each session, so a torch that
  fixes it runs the test again.

No side effects at import: the project's tests read these tables too.
"""

from __future__ import annotations

import re

import torch

# (reason, pattern in the test's source or node id): out of fusecli's scope, skipped.
OUT_OF_SCOPE = (
    ("user schedules (fd.sched, schedule())",
     re.compile(r"\bfd\.sched\b|def schedule\(|\.sched\.|definition_op_in_schedule")),
    # nvfuser_direct's scheduling API: transforms and parallelization of a TensorView, the
    # schedule and idm modules, a KernelExecutor compiled by hand
    ("user schedules (direct: parallelize, outer_split, schedule/idm modules, KernelExecutor)",
     re.compile(r"\.parallelize\(|\.(?:outer|inner)_split\(|\bschedule\.\w+|\bidm\.\w+"
                r"|\bKernelExecutor\(")),
    # the CUDA nvFuser generates and its scheduled IR, compared as text: fusecli executes the
    # math (and generates kernels of its own), it does not lower as nvFuser does
    ("nvFuser's lowered CUDA kernel and scheduled IR text (print_kernel, get_cuda_kernel, "
     "get_scheduled_ir)",
     re.compile(r"\bprint_kernel\(|\bget_cuda_kernel\(|\bget_scheduled_ir\("
                r"|\bget_most_recent_scheduled_ir\(")),
    ("multi-GPU (multidevice, DTensor, mesh)",
     re.compile(r"multidevice|DeviceMesh|\bmesh\b|dtensor")),
    ("Blackwell-only (nvfp4, mxfp8, cutlass)",
     re.compile(r"nvfp4|mxfp8|cutlass|is_pre_blackwell\(\)")),
    ("profiling (FusionProfiler, CUPTI)",
     re.compile(r"FusionProfiler|PythonProfiler|profile\(|profile=True|cupti", re.I)),
    ("JAX", re.compile(r"\bjax\b")),
    ("CUDA streams and graphs", re.compile(r"torch\.cuda\.Stream|CUDAGraph|cuda\.graph")),
)



def _torch_instance_norm_backward_is_wrong() -> bool:
    """torch 2.13's CPU kernel: InstanceNorm3d's input gradient for a channels_last_3d batch
    of one is off by ~13 against the float64 formula (a batch of two, or contiguous, is right).
    nvFuser's test_instance_norm takes it as its reference; asked, not assumed, so a torch
    that fixes it runs the tests again."""
    torch.manual_seed(0)
    x = torch.rand((1, 3, 2, 2, 2), dtype=torch.float64).to(memory_format=torch.channels_last_3d)
    x.requires_grad = True
    g = torch.randn_like(x)
    torch.nn.InstanceNorm3d(3, dtype=torch.float64)(x).backward(g)
    xd = x.detach()
    mean = xd.mean(dim=(2, 3, 4), keepdim=True)
    invstd = (xd.var(dim=(2, 3, 4), unbiased=False, keepdim=True) + 1e-5).rsqrt()
    x_hat = (xd - mean) * invstd
    formula = invstd * (g - g.mean(dim=(2, 3, 4), keepdim=True)
                        - x_hat * (g * x_hat).mean(dim=(2, 3, 4), keepdim=True))
    return not torch.allclose(x.grad, formula, atol=1e-9)


def _torch_integer_division_by_zero_raises() -> bool:
    """torch's CPU kernel raises ZeroDivisionError for an integer tensor divided by one holding
    a zero (``torch.div(..., rounding_mode="trunc")``); its CUDA kernel returns the hardware's
    answer. nvFuser's test_integer_division divides ``make_tensor`` draws, in [-9, 10), whose
    divisor holds zeros, and takes that division as its reference: on the CPU the reference
    itself raises, after fusecli has executed the fusion (tests/test_division_by_zero.py
    checks fusecli's answers, at zero divisors too)."""
    try:
        torch.div(torch.tensor([1]), torch.tensor([0]), rounding_mode="trunc")
    except RuntimeError:
        return True
    return False


# (reason, pattern on the node id, probe): the test's own reference is wrong, or fails, on this
# host's torch (the probe shows it, each session), so its verdict says nothing of fusecli:
# skipped.
WRONG_REFERENCE = (
    ("the test's reference is wrong on torch's CPU kernel (InstanceNorm3d backward, "
     "channels_last_3d, batch 1, several channels)",
     re.compile(r"test_instance_norm\[.*training=True.*memory_format=channels_last-"
                r"batch_size=1-channel_size=(?!1-)\d+"),
     _torch_instance_norm_backward_is_wrong),
    ("the test's reference raises on torch's CPU kernel (integer torch.div by a divisor holding "
     "zeros: ZeroDivisionError; CUDA returns a value)",
     re.compile(r"test_integer_division\b"),
     _torch_integer_division_by_zero_raises),
)
