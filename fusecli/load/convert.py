"""``fusecli convert``: a Python repro to YAML and back, losslessly (``docs/yaml-format.md``),
and to a repro today's nvFuser runs (``--to direct``: ``import nvfuser_direct``).

Lossless means: the definition's records print identically, every input keeps its dtype, shape,
strides and kind exactly, and input values stored in the file come back bit for bit. A Python
script does not say how it drew its inputs, so converting one stores each tensor's values when
its storage span has at most ``MAX_STORED_ELEMENTS`` elements, and otherwise its layout with a
seeded ``range`` over its values (and a note saying so). Converted Python makes every input with an
expression that reproduces exactly what the YAML file loads.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

from fusecli.errors import InputError
from fusecli.frontend.repro import definition_text, repro_script
from fusecli.ir.nodes import TensorView
from fusecli.load.embedded import TEXT_SUFFIXES
from fusecli.load.inputs import InputSpec, TensorSpec, input_source, spec_for_value
from fusecli.load.model import LoadedFusion
from fusecli.runtime.bind import flatten_inputs

DEFINITION_FUNCTION = "nvfuser_fusion"  # the function name written in YAML definitions
FORMATS = {"yaml": (".yaml", ".yml"), "python": (".py",), "direct": (".py",)}
_VECTOR = re.compile(r"^(\s+)(V\d+) = fd\.define_vector\((.*)\)$")
_TENSOR = re.compile(r"^(\s+T\d+ = fd\.define_tensor\()(.*)\)$")
_CONTIGUITY = re.compile(r"contiguity=\[[^\]]*\]")
_ORDERED_OUTPUT = re.compile(r"^(\s+)fd\.add_output\((T\d+), stride_order=(\[[^\]]*\])\)$")


def input_specs(loaded: LoadedFusion) -> tuple[InputSpec, ...]:
    """How ``loaded``'s inputs are made: as the file said (YAML) or as read off the values."""
    if loaded.input_specs is not None:
        return loaded.input_specs
    fusion_inputs = loaded.fusion.inputs
    specs = []
    for index, value in enumerate(flatten_inputs(loaded.inputs)):  # a vector's values too
        declared = fusion_inputs[index] if index < len(fusion_inputs) else None
        on_cpu = isinstance(declared, TensorView) and declared.is_cpu
        specs.append(spec_for_value(value, index, on_cpu, loaded.where))
    return tuple(specs)


def to_yaml(loaded: LoadedFusion) -> str:
    from fusecli.load.yaml_format import dump_document

    definition = definition_text(loaded.fd, DEFINITION_FUNCTION)
    return dump_document(loaded.name, definition, input_specs(loaded))


def to_python(loaded: LoadedFusion, *, imports: bool = True, device: str = "cuda:0") -> str:
    """A runnable repro in nvFuser's format whose inputs are exactly ``loaded``'s.

    ``imports=False`` leaves out the header and imports, for a second fusion in one script.
    """
    specs = input_specs(loaded)
    header = [f"fusecli: {loaded.name}, converted from {loaded.path.name}"]
    header += [
        f"input {index}: {spec.note}"
        for index, spec in enumerate(specs)
        if isinstance(spec, TensorSpec) and spec.note
    ]
    script = repro_script(loaded.fd, None, header=header)
    if not imports:
        script = script[script.index("\ndef ") + 1 :]
    lines = ["inputs = [", *(f"    {input_source(spec, device)}," for spec in specs), "]"]
    lines.append("fd.execute(inputs)")
    return script + "\n".join(lines) + "\n"


def to_direct(loaded: LoadedFusion, *, imports: bool = True, device: str = "cuda:0") -> str:
    """``to_python``'s repro in the spelling of nvFuser's direct frontend (``nvfuser_direct``),
    which today's nvFuser runs.

    fusecli prints every call in its canonical keyword form (``shape=``, ``dims=``,
    ``keepdim=``, ``contiguity=``), which the direct frontend takes. It has no ``define_vector``:
    a vector of scalars becomes the plain list of them; a vector of ``n`` values bound at
    execute becomes ``n`` scalar inputs (``fd.execute`` takes them flattened, as the
    converted inputs are). Its ``add_output`` takes no ``stride_order``: the output is
    ``fd.ops.stride_order(T, stride_order=...)`` instead. It rejects a contiguity other than
    None on a broadcast (size-1) dimension, which the legacy frontend took: that becomes None.
    """
    script = to_python(loaded, imports=imports, device=device)
    script = script.replace(
        "from nvfuser import FusionDefinition, DataType",
        "from nvfuser_direct import FusionDefinition, DataType",
    )
    lines = []
    for line in script.split("\n"):
        line = _direct_contiguity(line)
        ordered = _ORDERED_OUTPUT.match(line)
        if ordered is not None:
            indent, name, order = ordered.groups()
            ordered_name = f"{name}_ordered"
            lines.append(
                f"{indent}{ordered_name} = fd.ops.stride_order({name}, stride_order={order})"
            )
            lines.append(f"{indent}fd.add_output({ordered_name})")
            continue
        match = _VECTOR.match(line)
        if match is None:
            lines.append(line)
            continue
        indent, name, args = match.groups()
        elements = args.removesuffix(", dtype=DataType.Int")
        if elements.startswith("["):
            lines.append(f"{indent}{name} = {elements}")
            continue
        scalars = [f"{name}_{index}" for index in range(int(elements))]
        lines += [f"{indent}{s} = fd.define_scalar(dtype=DataType.Int)" for s in scalars]
        lines.append(f"{indent}{name} = [{', '.join(scalars)}]")
    return "\n".join(lines)


def _direct_contiguity(line: str) -> str:
    """A ``define_tensor`` line with None as the contiguity of each broadcast (size-1) dim.

    Contiguity is listed in allocation order: logical dim ``i`` sits at position
    ``rank - 1 - stride_order[i]`` (at ``i`` without a stride order).
    """
    match = _TENSOR.match(line)
    if match is None:
        return line
    call = ast.parse(f"f({match.group(2)})", mode="eval").body
    assert isinstance(call, ast.Call)
    wanted = ("shape", "contiguity", "stride_order")
    given = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in wanted}
    shape, contiguity = given.get("shape"), given.get("contiguity")
    if not isinstance(shape, list) or not isinstance(contiguity, list):
        return line
    order = given.get("stride_order") or []
    rank = len(shape)
    for dim, size in enumerate(shape):
        position = rank - 1 - order[dim] % rank if order else dim  # negative orders wrap
        if size == 1 and 0 <= position < len(contiguity):
            contiguity[position] = None
    fixed = "contiguity=[" + ", ".join(str(c) for c in contiguity) + "]"
    return _CONTIGUITY.sub(fixed, line, count=1)


EXACT_LIMIT = 1 << 20  # elements of one input's storage written out exactly


def stores_exactly(value: object, limit: int = EXACT_LIMIT) -> bool:
    """Whether a repro lists every value of ``value`` (a tensor whose storage spans at most
    ``limit`` elements, of a dtype whose values can be written), rather than drawing it."""
    import torch

    from fusecli.load.inputs import storage_span, values_storable

    if not isinstance(value, torch.Tensor):
        return False
    dtype = str(value.dtype).removeprefix("torch.")
    span = storage_span(tuple(value.shape), tuple(value.stride()))
    return span <= limit and values_storable(dtype)


def exact_specs(loaded: LoadedFusion, limit: int = EXACT_LIMIT) -> tuple[InputSpec, ...]:
    """Input specs that store every value of an input of at most ``limit`` elements, for
    lossless repros; a larger input is drawn over the same range from a seed."""
    from fusecli.load.inputs import storage_values

    specs = []
    for index, (value, declared) in enumerate(zip(loaded.inputs, loaded.fusion.inputs)):
        on_cpu = isinstance(declared, TensorView) and declared.is_cpu
        if isinstance(value, list | tuple):  # a vector's values: scalar inputs, flattened
            specs += [spec_for_value(v, index, False, loaded.where) for v in value]
        elif stores_exactly(value, limit):
            dtype = str(value.dtype).removeprefix("torch.")
            specs.append(TensorSpec(dtype, tuple(value.shape), tuple(value.stride()),
                                    values=storage_values(value), on_cpu=on_cpu))
        else:
            specs.append(spec_for_value(value, index, on_cpu, loaded.where))
    return tuple(specs)


def format_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    return next((name for name, suffixes in FORMATS.items() if suffix in suffixes), None)


def convert(loaded: Sequence[LoadedFusion], to: str) -> str:
    """All fusions of one file as one text: YAML documents, or one script."""
    if to == "yaml":
        return "---\n".join(to_yaml(fusion) for fusion in loaded)
    write = to_direct if to == "direct" else to_python
    return "\n".join(write(fusion, imports=index == 0) for index, fusion in enumerate(loaded))


def convert_file(
    src: str | Path, dst: str | Path | None = None, *, to: str | None = None, force: bool = False
) -> str:
    """Convert the repro at ``src`` (a script, YAML, or a text holding a repro); return the
    text, and write it to ``dst`` when given.

    ``to`` is ``yaml``, ``python`` or ``direct`` (a Python repro for ``nvfuser_direct``); by
    default it follows ``dst``'s suffix, else it is the other format than ``src``'s. An existing
    ``dst`` is only replaced with ``force``.
    """
    from fusecli.load import load_path

    src = Path(src)
    source_format = format_of(src)
    if source_format is None and (src.suffix.lower() in TEXT_SUFFIXES or not src.suffix):
        source_format = "python"  # the repro inside an issue or a log (load.embedded)
    if source_format is None:
        raise InputError(
            "cannot convert this file: expected .py, .yaml, .yml, or a text holding a repro "
            f"({', '.join(TEXT_SUFFIXES)})",
            str(src),
        )
    target = _target_format(source_format, None if dst is None else Path(dst), to)
    if dst is not None and Path(dst).exists() and not force:
        raise InputError("the file exists; pass --force to replace it", str(dst))
    text = convert(load_path(src, device="cpu"), target)
    if dst is not None:
        Path(dst).write_text(text, encoding="utf-8")
    return text


def _target_format(source_format: str, dst: Path | None, to: str | None) -> str:
    if to is not None and to not in FORMATS:
        raise InputError(f"unknown format {to!r}, expected one of {', '.join(FORMATS)}")
    dst_format = format_of(dst) if dst is not None else None
    if dst is not None and dst_format is None and to is None:
        raise InputError("cannot tell the format from the suffix; name it with --to", str(dst))
    if to is not None and dst is not None and dst.suffix.lower() not in FORMATS[to]:
        raise InputError(f"the suffix says {dst_format}, but {to} was asked for", str(dst))
    if to is not None:
        return to
    if dst_format is not None:
        return dst_format
    return "python" if source_format == "yaml" else "yaml"
