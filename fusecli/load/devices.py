"""Sending a script's CUDA device requests to the CPU, on machines without CUDA.

Repro scripts put their inputs on ``'cuda:0'``. While ``cuda_mapped_to_cpu()`` is active, what a
script asks to place on a CUDA device lands on the CPU instead: the ``device=`` argument of
torch's factory functions and of ``torch.testing.make_tensor``, ``Tensor.cuda()``,
``Tensor.to('cuda')`` (or a CUDA ``torch.device``, or a device ordinal), ``Tensor.new_*``,
``torch.set_default_device('cuda')``, and the timing, profiling and stream calls scripts make
around a fusion (``fusecli.load.cuda_stand_ins``). ``torch.cuda.is_available()`` still says
False, and ``tensor.is_cuda`` is False.

The CUDA generator is ``fusecli.frontend.generator.HOST``: ``torch.manual_seed`` (and
``torch.cuda.manual_seed``) seed it as they seed torch's, and ``torch.cuda.get_rng_state``,
``set_rng_state`` and ``initial_seed`` read and set it, so that unseeded random ops in a
fusion draw what nvFuser's draw after the same seed.

What a script places on the CPU itself (``device='cpu'``, ``.cpu()``, ``.to('cpu')``) is a
copy marked as such (``fusecli.frontend.placement``): the frontend then treats it as nvFuser
treats a CPU tensor on a GPU machine (refused by ``from_pytorch`` unless it is a scalar).

Everything patched is restored on exit, also when the script raised.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fusecli.frontend.generator import HOST
from fusecli.frontend.placement import HOST_MARK, mark_placed_on_cpu, unmarked
from fusecli.load.cuda_stand_ins import STAND_INS

# torch functions whose keyword ``device=`` places the result.
FACTORY_FUNCTIONS = (
    "arange", "as_tensor", "empty", "empty_like", "empty_strided", "eye", "full", "full_like",
    "linspace", "logspace", "normal", "ones", "ones_like", "rand", "rand_like", "randint",
    "randint_like", "randn", "randn_like", "randperm", "scalar_tensor", "tensor",
    "tril_indices", "triu_indices", "zeros", "zeros_like",
)
TENSOR_FACTORY_METHODS = (
    "new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros",
)
# Positional index of the device argument, where a function also takes it positionally.
POSITIONAL_DEVICE = {"as_tensor": 2}


@dataclass(slots=True)
class DeviceMapping:
    """What happened while mapping: how many CUDA requests went to the CPU."""

    mapped: int = 0
    _restore: list[Callable[[], None]] = field(default_factory=list)
    # calls under way that a script placed on CUDA: the CPU tensors torch makes inside them
    # (torch.testing.make_tensor's own) stand for CUDA ones, unmarked
    _placing_on_cuda: int = 0

    @property
    def notice(self) -> str | None:
        return "CUDA devices mapped to the CPU" if self.mapped else None


def is_cuda_device(device: object) -> bool:
    """True for ``'cuda'``, ``'cuda:1'``, ``torch.device('cuda')`` and a device ordinal."""
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        try:
            return torch.device(device).type == "cuda"
        except RuntimeError:
            return False  # not a device string: let torch say what is wrong with it
    return isinstance(device, int) and not isinstance(device, bool)


def is_cpu_device(device: object) -> bool:
    """True for ``'cpu'`` and ``torch.device('cpu')``."""
    if isinstance(device, torch.device):
        return device.type == "cpu"
    return isinstance(device, str) and device.split(":")[0] == "cpu"


@contextlib.contextmanager
def cuda_mapped_to_cpu() -> Iterator[DeviceMapping]:
    mapping = DeviceMapping()
    try:
        for name in FACTORY_FUNCTIONS:
            _patch(mapping, torch, name, _device_argument_mapper)
        for name in TENSOR_FACTORY_METHODS:
            _patch(mapping, torch.Tensor, name, _device_argument_mapper)
        _patch(mapping, torch.testing, "make_tensor", _device_argument_mapper)
        _patch(mapping, torch.Tensor, "cuda", _tensor_cuda)
        _patch(mapping, torch.Tensor, "cpu", _tensor_cpu)
        _patch(mapping, torch.Tensor, "to", _tensor_to)
        _patch(mapping, torch.Tensor, "pin_memory", _tensor_pin_memory)
        _patch(mapping, torch, "set_default_device", _set_default_device)
        for owner in (torch, torch.random, torch.cuda):
            _patch(mapping, owner, "manual_seed", _manual_seed)
        _patch(mapping, torch.cuda, "manual_seed_all", _manual_seed)
        for name, stand_in in _CUDA_GENERATOR.items():
            _patch(mapping, torch.cuda, name, _standing_in(stand_in))
        _patch(mapping, torch.cuda, "synchronize", _synchronize)
        for (submodule, name), stand_in in STAND_INS.items():
            owner = getattr(torch.cuda, submodule) if submodule else torch.cuda
            _patch(mapping, owner, name, _standing_in(stand_in))
        yield mapping
    finally:
        for restore in reversed(mapping._restore):
            restore()
        mapping._restore.clear()


Wrapper = Callable[[DeviceMapping, Callable[..., Any], str], Callable[..., Any]]


def _patch(mapping: DeviceMapping, owner: Any, name: str, make_wrapper: Wrapper) -> None:
    """Replace ``owner.name`` by a wrapper; remember how to put things back exactly.

    Tensor methods are inherited from torch's C base class: restoring them means deleting the
    override, not setting the inherited function on ``torch.Tensor``.
    """
    original = getattr(owner, name, None)
    if original is None:
        return
    owned = name in vars(owner)
    setattr(owner, name, make_wrapper(mapping, original, name))
    if owned:
        mapping._restore.append(lambda: setattr(owner, name, original))
    else:
        mapping._restore.append(lambda: delattr(owner, name))


def _device_argument_mapper(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    position = POSITIONAL_DEVICE.get(name)

    @functools.wraps(original)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if position is not None and len(args) > position:
            device = args[position]
        if is_cuda_device(kwargs.get("device")):
            kwargs["device"] = "cpu"
            kwargs.pop("pin_memory", None)  # pinning needs CUDA
        elif position is not None and len(args) > position and is_cuda_device(args[position]):
            args = (*args[:position], "cpu", *args[position + 1 :])
        elif is_cpu_device(device) and not mapping._placing_on_cuda:
            return mark_placed_on_cpu(original(*args, **kwargs))
        else:
            return original(*args, **kwargs)
        mapping.mapped += 1
        mapping._placing_on_cuda += 1
        try:
            return unmarked(original(*args, **kwargs))
        finally:
            mapping._placing_on_cuda -= 1

    return mapped


def _tensor_cuda(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    def cuda(
        self: torch.Tensor,
        device: Any = None,
        non_blocking: bool = False,
        memory_format: torch.memory_format = torch.preserve_format,
    ) -> torch.Tensor:
        mapping.mapped += 1
        # A copy, as moving a CPU tensor to a GPU makes one (torch's own ``to``: unmarked).
        return torch._C.TensorBase.to(self, "cpu", non_blocking=non_blocking, copy=True,
                                      memory_format=memory_format)

    return functools.wraps(original)(cuda)


def _tensor_cpu(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    def cpu(self: torch.Tensor, memory_format: torch.memory_format = torch.preserve_format,
            ) -> torch.Tensor:
        # A copy, as moving a (stand-in) CUDA tensor to the CPU makes one; marked as on the CPU.
        copied = torch._C.TensorBase.to(self, "cpu", copy=True, memory_format=memory_format)
        return copied if mapping._placing_on_cuda else mark_placed_on_cpu(copied)

    return functools.wraps(original)(cpu)


def _tensor_to(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    @functools.wraps(original)
    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        moved = to_cpu = False
        if args and is_cuda_device(args[0]):
            args = ("cpu", *args[1:])
            moved = True
        if is_cuda_device(kwargs.get("device")):
            kwargs["device"] = "cpu"
            moved = True
        if not moved and not mapping._placing_on_cuda:
            to_cpu = is_cpu_device(args[0] if args else kwargs.get("device"))
        if moved:
            mapping.mapped += 1
        if (moved or to_cpu) and len(args) <= 3:  # unless copy was passed positionally:
            kwargs["copy"] = True  # (device, dtype, nb, copy); a copy, as a move makes one
        result = original(self, *args, **kwargs)
        if to_cpu or (not moved and getattr(self, HOST_MARK, False) and result is not self
                      and not mapping._placing_on_cuda):
            mark_placed_on_cpu(result)  # on the CPU, or converted from a tensor that is
        return result

    return to


def _tensor_pin_memory(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    @functools.wraps(original)
    def pin_memory(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self  # pinning needs CUDA; on the CPU it changes nothing a fusion sees

    return pin_memory


def _set_default_device(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    @functools.wraps(original)
    def set_default_device(device: Any) -> None:
        if is_cuda_device(device):
            mapping.mapped += 1
            device = "cpu"
        original(device)

    return set_default_device


def _standing_in(stand_in: object) -> Wrapper:
    """A wrapper maker that puts ``stand_in`` in the original's place, counting its uses."""

    def make(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
        if isinstance(stand_in, type):  # a class (Event, Stream): scripts may subclass it
            return stand_in

        def standing_in(*args: Any, **kwargs: Any) -> Any:
            mapping.mapped += 1
            return stand_in(*args, **kwargs)  # type: ignore[operator]

        standing_in.__name__ = name
        standing_in.__doc__ = f"torch.cuda.{name}, as it means on the host (CUDA mapped to the CPU)"
        return standing_in

    return make


def _manual_seed(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    """Seeds torch's CPU generator as it did, and the CUDA generator's stand-in."""

    @functools.wraps(original)
    def manual_seed(seed: int) -> Any:
        result = original(seed)  # torch.cuda's queues the call until CUDA starts: harmless
        HOST.manual_seed(int(seed))
        return result

    return manual_seed


_CUDA_GENERATOR = {
    "get_rng_state": lambda device="cuda": HOST.get_state(),
    "set_rng_state": lambda new_state, device="cuda": HOST.set_state(new_state),
    "initial_seed": lambda: HOST.reserve(0)[0],
}


def _synchronize(mapping: DeviceMapping, original: Callable, name: str) -> Callable:
    @functools.wraps(original)
    def synchronize(device: Any = None) -> None:
        return None  # nothing runs asynchronously on the CPU

    return synchronize


DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` where torch has CUDA, else ``cpu``; ``cuda`` must be available."""
    from fusecli.errors import InputError, MissingEnvironmentError

    if device not in DEVICE_CHOICES:
        raise InputError(f"unknown device {device!r}, expected one of {', '.join(DEVICE_CHOICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise MissingEnvironmentError("device 'cuda' was asked for, but torch has no CUDA here")
    return device
