"""A planned launch as one generated Python function: what a compiled warm run calls.

``Launch.plain`` returns it. Its source is written for the launch (its ``source``
attribute shows it): one argument per segment input and per scalar read anew, each output and
workspace made by one ``torch.empty_strided`` call (``new_empty_strided`` of an input of the
same dtype on the launch's device where there is one: no keywords to parse, a fifth less host
time on this project's CPU), every 8-byte parameter slot written by one
``struct.pack_into`` (pointers, and the scalars the signature decides as the bit patterns they
are packed to once), scalars read anew packed into their own slots, then cuLaunchKernel on
torch's current stream. Loops over slots, the zip of buffers with slots and one ctypes write
per slot cost a few microseconds of host time per launch, all of it before the device starts.

Its ``ahead()`` makes the next call's outputs and workspaces (``runtime.spares``): a compiled
warm run calls it after its last launch, while the device runs the kernels, where they run long
enough to hide it; the next call launches into them without allocating first.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import torch

from fusecli.runtime.spares import SPARES, Spare


def _slot_bits(typed_class: Any, value: object) -> int:
    """The 8-byte slot's content once ``value`` is written to it as ``typed_class`` (the rest
    zero): a constant the function writes with the slot's neighbours."""
    slot = ctypes.c_uint64(0)
    typed_class.from_buffer(slot).value = value
    return slot.value


def build(launch: Any, pointers: dict[int, int], fixed: dict[int, tuple[Any, object]],
          called: dict[int, tuple[Any, int, Callable[[object], object] | str | None]],
          fresh: list[tuple[int, int]]) -> Callable[..., list[torch.Tensor]]:
    """The function for ``launch``. By slot: ``pointers`` workspaces made once (their
    addresses), ``fixed`` (typed slot, packed number) for numbers the signature decides,
    ``called`` (typed slot, argument index, packing) for scalars read anew: a function, or
    None for a Python number the typed slot takes as it is, or ``"item"`` for a 0-dim tensor's
    ``item()``; ``fresh`` (slot, bytes) workspaces made per call; the launch's inputs and
    outputs come from the plan."""
    from fusecli.runtime.launch import allocated_layout, cuda_driver, nbytes_of

    count = len(launch.kernel.args)
    arguments = 1 + max([position for _, position in launch.inputs]
                        + [index for _, index, _ in called.values()], default=-1)
    names: dict[str, Any] = {
        "LOCK": launch.lock, "STREAM": torch._C._cuda_getCurrentRawStream,
        "EMPTY": torch.empty_strided, "LAUNCH": cuda_driver().launchKernel,
        "PACK": struct.Struct("<" + "".join(
            "8x" if slot in called else "Q" for slot in range(count))).pack_into,
        "SLOTS": launch.slots, "DEVICE": launch.device, "SPARE": Spare(), "HOLD": SPARES.hold,
    }
    buffers = [(slot, *allocated_layout(shape, strides, logical), dtype)
               for slot, _, shape, dtype, logical, strides in launch.outputs]
    buffers += [(slot, (max(1, nbytes),), (1,), torch.uint8) for slot, nbytes in fresh]
    nbytes = sum(nbytes_of(shape, strides, dtype) for _, shape, strides, dtype in buffers)
    made = [f"b{slot}" for slot, *_ in buffers]
    for slot, shape, strides, dtype in buffers:
        names[f"S{slot}"], names[f"R{slot}"], names[f"D{slot}"] = shape, strides, dtype

    like = {dtype: position for dtype, position in launch.like.items() if position < arguments}

    def allocations(prefix: str, inputs: dict) -> list[str]:  # like an input of its dtype
        return [f"{prefix}{slot} = a{inputs[dtype]}.new_empty_strided(S{slot}, R{slot})"
                if dtype in inputs else
                f"{prefix}{slot} = EMPTY(S{slot}, R{slot}, dtype=D{slot}, device=DEVICE)"
                for slot, _, _, dtype in buffers]

    values: dict[int, str] = {slot: f"a{position}.data_ptr()"
                              for slot, position in launch.inputs}
    values.update((slot, f"b{slot}.data_ptr()") for slot, *_ in buffers)
    for slot, address in pointers.items():
        names[f"K{slot}"] = address
        values[slot] = f"K{slot}"
    for slot, (typed, number) in fixed.items():
        names[f"K{slot}"] = _slot_bits(type(typed), number)
        values[slot] = f"K{slot}"
    written = [values[slot] for slot in range(count) if slot not in called]
    packed = []
    for slot, (typed, index, pack) in called.items():
        names[f"T{slot}"], names[f"P{slot}"] = typed, pack
        value = (f"a{index}" if pack is None else f"a{index}.item()" if pack == "item"
                 else f"P{slot}(a{index})")
        packed.append(f"T{slot}.value = {value}")
    g, b = launch.grid, launch.block
    call = (f"LAUNCH({launch.address}, {g[0]}, {g[1]}, {g[2]}, {b[0]}, {b[1]}, {b[2]}, "
            f"{launch.shared}, stream, {launch.params}, 0)")
    parameters = ", ".join(f"a{n}" for n in range(arguments))
    bound = ", ".join(made) + ("," if len(made) == 1 else "")
    body = [
        f"def launch({parameters}):",
        "    with LOCK:",
        "        stream = STREAM(INDEX)",
    ]
    if buffers:
        body += [
            "        kept = SPARE.entry",
            "        if kept is not None and kept[0] == stream:",
            f"            {bound} = kept[1]",
            "            SPARE.entry = None",
            "        else:",
            *(f"            {line}" for line in allocations("b", like)),
        ]
    body += [
        f"        PACK(SLOTS, 0{''.join(', ' + value for value in written)})",
        *(f"        {line}" for line in packed),
        f"        {call}",
    ]
    outputs = made[:len(launch.outputs)]  # workspaces made per call are dropped once queued
    body.append(f"    return [{', '.join(outputs)}]")
    body += [  # the next call's buffers, made while the device runs this call's kernels
        "def ahead():",
        "    with LOCK:",
        *(f"        {line}" for line in allocations("b", {})),
        f"        SPARE.entry = (STREAM(INDEX), [{', '.join(made)}])",
        f"        HOLD(SPARE, {nbytes})",
    ]
    source = "\n".join(body) + "\n"
    names["INDEX"] = launch.index
    exec(compile(source, "<fusecli plain launch>", "exec"), names)  # noqa: S102
    function = names["launch"]
    function.source, function.ahead = source, names["ahead"]
    function.nbytes, function.buffers = nbytes, len(buffers)
    return function
