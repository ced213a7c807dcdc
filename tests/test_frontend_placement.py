"""Where tensors live and where random numbers come from, as a script on a GPU machine sees it
with nvFuser, while fusecli maps CUDA to the CPU."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition, session
from fusecli.frontend.direct import DirectFusionDefinition
from fusecli.load.devices import cuda_mapped_to_cpu


@pytest.fixture
def cuda_mapped():
    """What fusecli sets up around a script: CUDA requests land on the CPU."""
    mapped = session.Session(map_cuda_to_cpu=True, listening=False)
    with session.capturing(mapped), cuda_mapped_to_cpu():
        yield


# -- placement -------------------------------------------------------------------------------


@pytest.mark.parametrize("frontend", [FusionDefinition, DirectFusionDefinition])
def test_from_pytorch_refuses_a_tensor_the_script_put_on_the_cpu(cuda_mapped, frontend):
    on_gpu = torch.randn(4, 4, device="cuda")
    moved_back = torch.randn(4, 4, device="cuda").cpu()
    with frontend() as fd:
        fd.add_output(fd.ops.relu(fd.from_pytorch(on_gpu)))  # stands for a CUDA tensor
        for cpu_tensor in (torch.randn(4, 4, device="cpu"), moved_back):
            with pytest.raises(ValueError, match="Found unsupported device cpu, only scalar CPU"):
                fd.from_pytorch(cpu_tensor)


def test_a_cpu_scalar_is_an_is_cpu_input_and_cuda_made_tensors_are_not(cuda_mapped):
    scalar = torch.tensor(2.0, device="cpu")
    made = torch.testing.make_tensor((3,), dtype=torch.float32, device="cuda")
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(scalar), fd.from_pytorch(made)
        fd.add_output(fd.ops.add(t1, t0))
    text = repr(fd)
    assert "shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True" in text
    assert "shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False" in text
    assert torch.equal(fd.execute([scalar, made])[0], made + 2.0)


def test_an_output_computed_from_cpu_scalars_alone_is_refused(cuda_mapped):
    inputs = [torch.tensor(2.0, device="cpu"), torch.randn(3, device="cuda")]
    with DirectFusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        three = fd.define_scalar(3.0)
        fd.add_output(fd.ops.add(t0, three))  # no kernel can write a CPU tensor
        fd.add_output(fd.ops.add(t1, three))
    with pytest.raises(RuntimeError, match="KernelExecutor does not support the Fusion provided"):
        fd.execute(inputs)


# -- random numbers ----------------------------------------------------------------------------


def _random_fusions():
    def define(fd, seeded):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        low, high = fd.define_scalar(0.3, DataType.Float), fd.define_scalar(1.7, DataType.Float)
        seeds = {}
        if seeded:
            seeds = {"rng_seed": fd.define_scalar(DataType.Int),
                     "rng_offset": fd.define_scalar(DataType.Int)}
        fd.add_output(fd.ops.mul(t0, fd.ops.uniform(low, high, shape=[5, 9], **seeds)))

    with FusionDefinition() as stateful:
        define(stateful, seeded=False)
    with FusionDefinition() as stateless:
        define(stateless, seeded=True)
    return stateful, stateless


def test_unseeded_random_ops_draw_from_the_cuda_generator(cuda_mapped):
    stateful, stateless = _random_fusions()
    x = torch.randn(5, 9, device="cuda")
    seed = 2**62 + 12345
    torch.manual_seed(seed)
    state = torch.cuda.get_rng_state()
    draws = [stateful.execute([x])[0] for _ in range(4)]
    for offset, drawn in enumerate(draws):  # each call moves the generator on by one op
        assert torch.equal(drawn, stateless.execute([x, seed, offset])[0])
    assert not torch.equal(draws[0], draws[1])
    torch.cuda.set_rng_state(state)
    assert torch.equal(stateful.execute([x])[0], draws[0])
    torch.manual_seed(seed)
    assert torch.equal(stateful.execute([x])[0], draws[0])


def test_the_same_seed_gives_the_same_draws_in_another_process(cuda_mapped, tmp_path):
    stateful, _ = _random_fusions()
    x = torch.ones(5, 9)
    torch.manual_seed(7)
    here = [stateful.execute([x])[0] for _ in range(2)]
    script = textwrap.dedent("""
        import sys, torch
        from fusecli.frontend import DataType, FusionDefinition
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
            low = fd.define_scalar(0.3, DataType.Float)
            high = fd.define_scalar(1.7, DataType.Float)
            fd.add_output(fd.ops.mul(t0, fd.ops.uniform(low, high, shape=[5, 9])))
        torch.manual_seed(7)
        draws = [fd.execute([torch.ones(5, 9)])[0] for _ in range(2)]
        torch.save(draws, sys.argv[1])
    """)
    saved = tmp_path / "draws.pt"  # drawn where nothing maps CUDA: plain fusecli.frontend
    subprocess.run([sys.executable, "-c", script, str(saved)], check=True)
    there = torch.load(saved)
    assert all(torch.equal(a, b) for a, b in zip(here, there, strict=True))
