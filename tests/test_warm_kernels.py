"""A kernel's step in the compiled warm run (``runtime.warm_kernels``) and ``Launch.plain``
with scalars read anew each call, on the CPU: the kernel is generated for real, the driver's
launch is a stand-in that records the parameter slots as the kernel would read them."""

from __future__ import annotations

import types

import pytest
import torch

from fusecli.codegen import ArgKind, generate
from fusecli.frontend import DataType, FusionDefinition
from fusecli.runtime import launch as launch_module
from fusecli.runtime.launch import Launch, Prepared
from fusecli.runtime.warm_kernels import fixed_numbers, kernel_reads_env, kernel_step
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion


def _dropout() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        seed = fd.define_scalar(None, dtype=DataType.Int)
        offset = fd.define_scalar(None, dtype=DataType.Int)
        scale = fd.define_scalar(None, dtype=DataType.Double)
        drawn = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), shape=[8, 64],
                               rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
        keep = fd.ops.lt(drawn, fd.define_scalar(0.9, dtype=DataType.Double))
        fd.add_output(fd.ops.mul(fd.ops.where(keep, x, fd.define_scalar(0.0)), scale))
    return fd


@pytest.fixture
def planned(monkeypatch):
    """The dropout's kernel planned as a warm launch on a stand-in device; ``calls`` gets the
    parameter slots of each launch, read when the driver is called."""
    fd = _dropout()
    x = torch.randn(8, 64)
    inputs = [x, 7, 12, 1.5]
    (segment,) = segment_fusion(fd.fusion, inputs).segments
    kernel = generate(segment, RuntimeInfo(fd.fusion, inputs), [x])
    launch = Launch.plan(segment, Prepared(kernel, types.SimpleNamespace(ptr=1)),
                         torch.device("cuda", 0))
    calls: list[list[int]] = []
    streams: list[int] = []  # the device index each launch asked the stream of

    def stream_of(index: int) -> int:
        streams.append(index)
        return 0

    driver = types.SimpleNamespace(
        launchKernel=lambda *arguments: calls.append(list(launch.slots)))
    monkeypatch.setattr(launch_module, "cuda_driver", lambda: driver)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", stream_of, raising=False)
    empty = torch.empty_strided
    monkeypatch.setattr(torch, "empty_strided",
                        lambda size, stride, dtype, device: empty(size, stride, dtype=dtype))
    return fd, segment, kernel, launch, calls, streams


def _slot(kernel, kind: ArgKind) -> int:
    return next(n for n, arg in enumerate(kernel.args) if arg.kind is kind)


def test_a_plain_launch_writes_each_calls_seed_offset_and_scale(planned) -> None:
    fd, segment, kernel, launch, calls, streams = planned
    executor = types.SimpleNamespace(poison=False, synchronize=False)
    seed, offset = _slot(kernel, ArgKind.RNG_SEED), _slot(kernel, ArgKind.RNG_OFFSET)
    scale = _slot(kernel, ArgKind.SCALAR)
    run = launch.plain(executor, {}, {seed: (1, "random"), offset: (2, "random"),
                                      scale: (3, "number")})
    assert run is not None
    x = torch.randn(8, 64)
    for number, (s, o, factor) in enumerate([(7, 12, 1.5), (-1, 16, 0.25)]):
        (out,) = run(x, s, o, factor)
        assert out.shape == (8, 64)
        slots = calls[number]
        assert slots[seed] == s % 2**64 and slots[offset] == o
        assert torch.tensor([slots[scale]]).view(torch.float32)[0].item() == factor
    assert streams == [launch.index] * 2  # the device's stream, not an argument's index
    assert launch.plain(executor, {}, {seed: (1, "random")}) is None  # the scale has no value


def test_a_plain_launch_of_fixed_numbers_only_writes_them_on_the_devices_stream(planned) -> None:
    fd, segment, kernel, launch, calls, streams = planned
    executor = types.SimpleNamespace(poison=False, synchronize=False)
    seed, offset = _slot(kernel, ArgKind.RNG_SEED), _slot(kernel, ArgKind.RNG_OFFSET)
    scale = _slot(kernel, ArgKind.SCALAR)
    run = launch.plain(executor, {seed: 5, offset: 4, scale: 2.0})
    (out,) = run(torch.randn(8, 64))
    (slots,) = calls
    assert slots[seed] == 5 and slots[offset] == 4
    assert torch.tensor([slots[scale]]).view(torch.float32)[0].item() == 2.0
    assert streams == [launch.index]


def test_the_warm_step_passes_the_scalars_read_anew_as_locals(planned) -> None:
    """The compiled run's step for the kernel: one plain call taking the segment's tensor and
    the three scalar inputs' locals, and no environment kept for them."""
    fd, segment, kernel, launch, calls, streams = planned
    dynamic = {v.uid for v in fd.fusion.inputs[1:]}
    program = types.SimpleNamespace(lines=[], names={"BASE": {}}, fixed=set(), dynamic=dynamic,
                                    with_env=False, name=lambda prefix, value: f"{prefix}1")
    assert not kernel_reads_env(segment, launch, set(), dynamic)
    assert kernel_reads_env(segment, launch, set(), set())  # read anew, or from the environment
    assert fixed_numbers(program, launch) == {}
    kernel_step(program, segment, launch,
                types.SimpleNamespace(poison=False, synchronize=False))
    (line,) = program.lines
    x, seed, offset, scale = (f"v{v.uid}" for v in fd.fusion.inputs)
    called = line.split("= P1(")[1].rstrip(")").split(", ")
    assert called[0] == x and sorted(called[1:]) == sorted([seed, offset, scale]), line


def test_a_plain_launch_launches_into_the_buffers_its_ahead_made(planned, monkeypatch) -> None:
    """``ahead()`` makes the next call's outputs (``runtime.spares``), and that call launches
    into them without allocating first; a call without them allocates before launching, and
    on another stream they are not used (the allocator ties a buffer to its stream)."""
    fd, segment, kernel, launch, calls, streams = planned
    events: list[str] = []
    made: list = []
    empty = torch.empty_strided

    def allocate(size, stride, dtype, device):
        events.append("allocate")
        made.append(empty(size, stride, dtype=dtype, device=device))
        return made[-1]

    monkeypatch.setattr(torch, "empty_strided", allocate)
    monkeypatch.setattr(launch_module, "cuda_driver", lambda: types.SimpleNamespace(
        launchKernel=lambda *arguments: events.append("launch")))
    stream = [0]
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: stream[0],
                        raising=False)
    executor = types.SimpleNamespace(poison=False, synchronize=False)
    seed, offset = _slot(kernel, ArgKind.RNG_SEED), _slot(kernel, ArgKind.RNG_OFFSET)
    scale = _slot(kernel, ArgKind.SCALAR)
    run = launch.plain(executor, {seed: 5, offset: 4, scale: 2.0})
    x = torch.randn(8, 64)
    (first,) = run(x)
    assert events == ["allocate", "launch"] and first is made[0]
    assert (run.nbytes, run.buffers) == (x.numel() * 4, 1)
    run.ahead()
    (second,) = run(x)
    assert events[2:] == ["allocate", "launch"] and second is made[1]
    (third,) = run(x)  # taken once: a call after it allocates again
    assert events[4:] == ["allocate", "launch"] and third is made[2]
    run.ahead()
    stream[0] = 7
    (fourth,) = run(x)
    assert fourth is made[4] and events[6:] == ["allocate", "allocate", "launch"]


@pytest.mark.parametrize("ends", ["kernel", "aten"])
@pytest.mark.parametrize("moved", [8 << 20, 512 << 20], ids=["short", "long"])
def test_a_run_makes_buffers_ahead_after_its_last_launch_where_it_hides_them(ends, moved):
    """``allocate_ahead``: each plain launch's ``ahead()`` after the run's last step where
    that step is a plain launch moving enough bytes to hide all their buffers; none where the
    run ends with other work (it would wait on them) or the kernel is short."""
    from fusecli.runtime.warm import _Program
    from fusecli.runtime.warm_kernels import allocate_ahead

    def plain(buffers):
        function = types.SimpleNamespace(nbytes=16 << 20, buffers=buffers)
        function.ahead = lambda: None
        return function

    x = torch.empty(moved // 4, dtype=torch.float32)
    segment = types.SimpleNamespace(inputs=[types.SimpleNamespace(uid=3)])
    program = _Program({}, set(), set(), set())
    plains = [plain(1), plain(2)]
    last = (plains[-1], segment) if ends == "kernel" else None
    allocate_ahead(program, plains, last, {3: x})
    expected = ends == "kernel" and (16 << 20) + moved >= (40 << 20) * 3
    assert program.lines == ([f"{name}()" for name, value in program.names.items()
                              if value in (plains[0].ahead, plains[1].ahead)]
                             if expected else [])
    assert len(program.lines) == (2 if expected else 0)


def test_a_scalar_read_anew_whose_uid_is_0_is_a_local_too() -> None:
    """uid 0 is the first value a process makes (a definition that starts with a scalar input):
    read anew each call, it is still a plain launch's argument, not a reason to keep the
    environment."""
    from fusecli.ir.dtype import DataType as IrDataType
    from fusecli.ir.nodes import Scalar

    param = types.SimpleNamespace(kind=ArgKind.SCALAR, value=Scalar(IrDataType.Double, uid=0))
    launch = types.SimpleNamespace(others=[(0, param, None)])
    segment = types.SimpleNamespace(candidate=types.SimpleNamespace(definition=lambda v: None),
                                    inputs=[])
    assert not kernel_reads_env(segment, launch, set(), {0})
    assert kernel_reads_env(segment, launch, set(), set())


def test_a_host_scalar_tensor_is_read_each_call_by_the_plain_launch(monkeypatch) -> None:
    """A 0-dim CPU tensor input is passed by value (HOST_SCALAR): the warm step hands the
    tensor itself to the plain launch, which packs its value read on the host at each call,
    so that the run keeps no environment for it."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(fd.ops.mul(x, s))
    x, s = torch.randn(8, 64), torch.tensor(2.5)
    (segment,) = segment_fusion(fd.fusion, [x, s]).segments
    kernel = generate(segment, RuntimeInfo(fd.fusion, [x, s]), [x, s])
    launch = Launch.plan(segment, Prepared(kernel, types.SimpleNamespace(ptr=1)),
                         torch.device("cuda", 0))
    slot = _slot(kernel, ArgKind.HOST_SCALAR)
    calls: list[list[int]] = []
    monkeypatch.setattr(launch_module, "cuda_driver", lambda: types.SimpleNamespace(
        launchKernel=lambda *arguments: calls.append(list(launch.slots))))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0, raising=False)
    empty = torch.empty_strided
    monkeypatch.setattr(torch, "empty_strided",
                        lambda size, stride, dtype, device: empty(size, stride, dtype=dtype))
    assert not kernel_reads_env(segment, launch, set(), set())
    program = types.SimpleNamespace(lines=[], names={"BASE": {}}, fixed=set(), dynamic=set(),
                                    with_env=False, name=lambda prefix, value: f"{prefix}1")
    executor = types.SimpleNamespace(poison=False, synchronize=False)
    plain = kernel_step(program, segment, launch, executor)
    assert plain is not None
    (line,) = program.lines
    arguments = line.split("= P1(")[1].rstrip(")").split(", ")
    assert arguments == [f"v{value.uid}" for value in segment.inputs]
    given = [x if value.uid == fd.fusion.inputs[0].uid else s for value in segment.inputs]
    for value in (2.5, -0.125):
        s.fill_(value)
        plain(*given)
        assert torch.tensor([calls[-1][slot]]).view(torch.float32)[0].item() == value


def test_a_plain_launch_makes_its_outputs_like_an_input_of_their_dtype(monkeypatch) -> None:
    """An output of an input's dtype is that input's ``new_empty_strided`` (same device, no
    keywords), with the layout ``torch.empty_strided`` would give it; one of another dtype,
    and the next call's buffers made ahead, take ``torch.empty_strided``."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
        fd.add_output(fd.ops.cast(x, DataType.Half))
    x = torch.randn(8, 64)
    (segment,) = segment_fusion(fd.fusion, [x]).segments
    kernel = generate(segment, RuntimeInfo(fd.fusion, [x]), [x])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)  # the index of a CPU plan
    cpu = torch.device("cpu")
    launch = Launch.plan(segment, Prepared(kernel, types.SimpleNamespace(ptr=1)), cpu, [x])
    assert launch.like == {torch.float32: 0}
    monkeypatch.setattr(launch_module, "cuda_driver", lambda: types.SimpleNamespace(
        launchKernel=lambda *arguments: None))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0, raising=False)
    empty, made = torch.empty_strided, []

    def counted(size, stride, dtype, device):
        made.append(dtype)
        return empty(size, stride, dtype=dtype, device=device)

    monkeypatch.setattr(torch, "empty_strided", counted)
    plain = launch.plain(types.SimpleNamespace(poison=False, synchronize=False))
    assert ".new_empty_strided(" in plain.source
    outputs = plain(x)
    assert made == [torch.float16]  # the float output was made like x
    for (_, _, shape, dtype, logical, strides), output in zip(launch.outputs, outputs):
        size, stride = launch_module.allocated_layout(shape, strides, logical)
        assert (output.dtype, tuple(output.shape), output.stride()) == (dtype, size, stride)
    plain.ahead()
    assert made == [torch.float16, torch.float32, torch.float16]


@pytest.mark.parametrize("kept", [True, False], ids=["small", "large"])
def test_a_grid_reductions_partials_are_made_once_where_small(monkeypatch, kept) -> None:
    """An outer reduction split over blocks writes partials to a workspace before reading
    them: a plain launch makes it once (calls on one stream run in order) up to
    KEPT_WORKSPACE_BYTES, and per call above it."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    x = torch.randn(65536, 64)
    (segment,) = segment_fusion(fd.fusion, [x]).segments
    kernel = generate(segment, RuntimeInfo(fd.fusion, [x]), [x])
    workspaces = [n for n, arg in enumerate(kernel.args)
                  if arg.kind is ArgKind.WORKSPACE and not arg.zeroed]
    assert workspaces, kernel.describe()
    monkeypatch.setattr(launch_module, "KEPT_WORKSPACE_BYTES", 1 << 30 if kept else 0)
    launch = Launch.plan(segment, Prepared(kernel, types.SimpleNamespace(ptr=1)),
                         torch.device("cuda", 0))
    slots: list[list[int]] = []
    monkeypatch.setattr(launch_module, "cuda_driver", lambda: types.SimpleNamespace(
        launchKernel=lambda *arguments: slots.append(list(launch.slots))))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0, raising=False)
    empty, made = torch.empty_strided, []

    def counted(size, stride, dtype, device):
        made.append(dtype)
        return empty(size, stride, dtype=dtype)

    monkeypatch.setattr(torch, "empty_strided", counted)
    for name in ("empty", "zeros"):  # the workspaces made once, on the CPU
        made_once = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda size, dtype=None, device=None,
                            made_once=made_once: made_once(size, dtype=dtype))
    plain = launch.plain(types.SimpleNamespace(poison=False, synchronize=False))
    for _ in range(3):
        plain(x)
    per_call = made.count(torch.uint8)
    assert per_call == (0 if kept else 3 * len(workspaces))
    if kept:
        assert len({tuple(s[n] for n in workspaces) for s in slots}) == 1


def test_a_float_read_anew_is_written_as_float32_rounds_it(planned) -> None:
    """A float parameter read anew is written into its slot as the Python float it is: the
    slot holds what float32's conversion gives (to nearest, infinity past the largest)."""
    import numpy as np

    fd, segment, kernel, launch, calls, streams = planned
    scale = _slot(kernel, ArgKind.SCALAR)
    run = launch.plain(types.SimpleNamespace(poison=False, synchronize=False),
                       {_slot(kernel, ArgKind.RNG_SEED): 1, _slot(kernel, ArgKind.RNG_OFFSET): 2},
                       {scale: (1, "number")})
    assert f"T{scale}.value = a1\n" in run.source
    for factor in (0.1, -1e39, 3.4028235677973366e38, 1e-46, -0.0):
        run(torch.randn(8, 64), factor)
        written = calls[-1][scale] & 0xFFFFFFFF
        with np.errstate(over="ignore"):
            assert written == int(np.float32(factor).view(np.uint32)), factor
