"""fusecli's YAML fusion format, version 1 (``docs/yaml-format.md``): reading and writing.

A document holds a name, the definition as nvFuser prints it, and the inputs: tensors as dtype,
shape, strides and either their values or a distribution and seed; scalars as dtype and value.
Files are read with ``yaml.SafeLoader`` only, checked field by field (an error names the file,
the line and the field: ``fusion.yaml:9: inputs[1].dtype: unknown dtype 'bf16', ...``), and
the definition runs through ``load.restricted``, so a YAML file cannot run arbitrary code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fusecli.errors import InputError
from fusecli.frontend import session as frontend_session
from fusecli.load.devices import resolve_device
from fusecli.load.inputs import (
    DISTRIBUTIONS,
    SCALAR_DTYPES,
    TENSOR_DTYPES,
    Distribution,
    DistributionSpec,
    InputSpec,
    ScalarSpec,
    TensorSpec,
    contiguous_strides,
    default_distribution,
    distribution_applies,
    make_input,
    storage_span,
    values_storable,
)
from fusecli.load.model import LoadedFusion
from fusecli.load.restricted import run_definition

FORMAT_VERSION = 1
VERSION_KEY = "fusecli_yaml"
DOCUMENT_FIELDS = (VERSION_KEY, "name", "description", "definition", "inputs")
TENSOR_FIELDS = (
    "kind", "dtype", "shape", "strides", "device", "values", "distribution", "seed", "note",
)
SCALAR_FIELDS = ("kind", "dtype", "value", "note")

Path_ = tuple[str | int, ...]  # a field path: ("inputs", 1, "dtype")


@dataclass(frozen=True, slots=True)
class FusionDocument:
    name: str | None
    definition: str
    inputs: tuple[InputSpec, ...]
    line: int  # of the document's first field
    definition_line: int | None  # of the definition text's first line, for block scalars


class _FieldError(Exception):
    def __init__(self, path: Path_, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def field_path(path: Path_) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


# --- reading ----------------------------------------------------------------------------------


def load_yaml(path: str | Path, *, device: str = "auto", seed: int = 0) -> list[LoadedFusion]:
    """One LoadedFusion per document of the YAML file at ``path``.

    Tensor inputs are made on ``device`` (``auto``: CUDA where available). An input without a
    ``seed`` gets ``seed + its index``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file: {exc}", str(path)) from None
    documents = parse_documents(text, str(path), seed=seed)
    target = resolve_device(device)
    loaded = []
    for index, document in enumerate(documents):
        name = document.name or (path.stem if index == 0 else f"{path.stem}#{index + 1}")
        with frontend_session.capturing(
            frontend_session.Session(map_cuda_to_cpu=target == "cpu", run_executes=False)
        ):
            fd = _define(document, str(path))
        inputs = []
        for position, spec in enumerate(document.inputs):
            try:
                inputs.append(make_input(spec, target))
            except (RuntimeError, ValueError, TypeError) as exc:
                raise InputError(
                    f"inputs[{position}]: cannot make this input: {exc}",
                    f"{path}:{document.line}",
                ) from exc
        expected = len(fd.fusion.inputs)
        if len(inputs) != expected:
            raise InputError(
                f"inputs: {len(inputs)} inputs listed, but the definition takes {expected}",
                f"{path}:{document.line}",
            )
        loaded.append(
            LoadedFusion(
                path=path, name=name, fd=fd, inputs=inputs, line=document.line,
                source_kind="yaml", input_specs=document.inputs,
            )
        )
    return loaded


def _define(document: FusionDocument, filename: str):
    def where(line: int | None) -> str:
        if line is None or document.definition_line is None:
            return f"{filename}:{document.definition_line or document.line}"
        return f"{filename}:{document.definition_line + line - 1}"

    return run_definition(document.definition, f"<{filename} definition>", where)


def parse_documents(text: str, filename: str, *, seed: int = 0) -> list[FusionDocument]:
    """The fusion documents of a YAML text, checked against the schema."""
    documents = []
    for data, node in _compose(text, filename):
        try:
            documents.append(_document(data, node, seed))
        except _FieldError as exc:
            where = f"{filename}:{_line_of(node, exc.path)}"
            raise InputError(f"{field_path(exc.path)}: {exc.message}", where) from None
    if not documents:
        raise InputError("no fusion document in this file", filename)
    return documents


def _compose(text: str, filename: str) -> list[tuple[Any, yaml.Node]]:
    """(data, node) per non-empty document; nodes keep the lines for error messages."""
    loader = yaml.SafeLoader(text)
    found = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            data = loader.construct_document(node)
            if data is not None:
                found.append((data, node))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{filename}:{mark.line + 1}" if mark is not None else filename
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"not valid YAML: {problem}", where) from None
    finally:
        loader.dispose()
    return found


def _line_of(node: yaml.Node, path: Path_) -> int:
    """The line of the deepest node along ``path`` that exists."""
    line = node.start_mark.line + 1
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((value for key, value in node.value if key.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if part < len(node.value) else None
        if child is None:
            break
        node, line = child, child.start_mark.line + 1
    return line


def _definition_line(node: yaml.Node) -> int | None:
    """The file line of the definition text's first line, when it is a block scalar (``|``)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if key.value == "definition" and isinstance(value, yaml.ScalarNode):
            if value.style in ("|", ">"):
                return value.start_mark.line + 2
            return value.start_mark.line + 1
    return None


def _document(data: Any, node: yaml.Node, seed: int) -> FusionDocument:
    if not isinstance(data, dict):
        raise _FieldError((), "a fusion document is a mapping with `fusecli_yaml: 1`")
    _check_fields(data, DOCUMENT_FIELDS, ())
    if VERSION_KEY not in data:
        raise _FieldError((VERSION_KEY,), f"missing: a fusion document starts with "
                          f"`{VERSION_KEY}: {FORMAT_VERSION}`")
    version = data[VERSION_KEY]
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise _FieldError((VERSION_KEY,), f"version {version!r} is not one this fusecli reads "
                          f"(it reads version {FORMAT_VERSION})")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise _FieldError(("name",), f"expected a string, got {name!r}")
    for key in ("definition", "inputs"):
        if key not in data:
            raise _FieldError((key,), "missing")
    definition = data["definition"]
    if not isinstance(definition, str):
        raise _FieldError(("definition",), "expected the definition's text (use `definition: |`)")
    inputs = data["inputs"]
    if not isinstance(inputs, list):
        raise _FieldError(("inputs",), "expected a list of inputs")
    specs = tuple(
        _input(entry, ("inputs", index), seed + index) for index, entry in enumerate(inputs)
    )
    return FusionDocument(
        name=name, definition=definition, inputs=specs, line=node.start_mark.line + 1,
        definition_line=_definition_line(node),
    )


def _check_fields(data: dict, allowed: Sequence[str], path: Path_) -> None:
    for key in data:
        if key not in allowed:
            raise _FieldError(
                (*path, key) if isinstance(key, str) else path,
                f"unknown field {key!r}, expected one of {', '.join(allowed)}",
            )


def _input(entry: Any, path: Path_, default_seed: int) -> InputSpec:
    if not isinstance(entry, dict):
        raise _FieldError(path, "expected a mapping with `kind: tensor` or `kind: scalar`")
    kind = entry.get("kind")
    if kind == "tensor":
        return _tensor(entry, path, default_seed)
    if kind == "scalar":
        return _scalar(entry, path)
    raise _FieldError((*path, "kind"), f"expected `tensor` or `scalar`, got {kind!r}")


def _dtype(entry: dict, path: Path_, choices: Sequence[str]) -> str:
    dtype = entry.get("dtype")
    if dtype not in choices:
        raise _FieldError(
            (*path, "dtype"), f"unknown dtype {dtype!r}, expected one of {', '.join(choices)}"
        )
    return dtype


def _tensor(entry: dict, path: Path_, default_seed: int) -> TensorSpec:
    _check_fields(entry, TENSOR_FIELDS, path)
    dtype = _dtype(entry, path, list(TENSOR_DTYPES))
    shape = _int_list(entry.get("shape"), (*path, "shape"))
    if "strides" in entry:
        strides = _int_list(entry["strides"], (*path, "strides"))
        if len(strides) != len(shape):
            raise _FieldError(
                (*path, "strides"), f"{len(strides)} strides for {len(shape)} dimensions"
            )
    else:
        strides = contiguous_strides(shape)
    on_cpu = False
    if "device" in entry:
        if entry["device"] != "cpu":
            raise _FieldError((*path, "device"), "the only device to name is `cpu` "
                              "(nvFuser's CPU scalar tensors); inputs go to the run's device")
        if shape:
            raise _FieldError((*path, "device"), "`device: cpu` is for 0-dim tensors only")
        on_cpu = True
    note = entry.get("note")
    if note is not None and not isinstance(note, str):
        raise _FieldError((*path, "note"), "expected a string")
    if "values" in entry and "distribution" in entry:
        raise _FieldError(path, "give `values` or `distribution`, not both")
    if "values" in entry:
        values = _values(entry["values"], dtype, storage_span(shape, strides), (*path, "values"))
        return TensorSpec(dtype, shape, strides, values=values, on_cpu=on_cpu, note=note)
    if "distribution" in entry:
        distribution = _distribution(entry["distribution"], dtype, (*path, "distribution"))
    else:
        distribution = default_distribution(dtype)
    seed = None
    if DISTRIBUTIONS[distribution.kind].random:
        seed = entry.get("seed", default_seed)
        if not _is_int(seed) or seed < 0:
            raise _FieldError((*path, "seed"), f"expected an integer >= 0, got {seed!r}")
    return TensorSpec(
        dtype, shape, strides, distribution=distribution, seed=seed, on_cpu=on_cpu, note=note
    )


def _scalar(entry: dict, path: Path_) -> ScalarSpec:
    _check_fields(entry, SCALAR_FIELDS, path)
    dtype = _dtype(entry, path, list(SCALAR_DTYPES))
    if "value" not in entry:
        raise _FieldError((*path, "value"), "missing")
    return ScalarSpec(dtype, _number(entry["value"], SCALAR_DTYPES[dtype], (*path, "value")))


def _distribution(raw: Any, dtype: str, path: Path_) -> DistributionSpec:
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict):
        raise _FieldError(path, "expected a distribution name or a mapping with `name`")
    names = [d.value for d in Distribution]
    name = raw.get("name")
    if name not in names:
        raise _FieldError(
            (*path, "name"), f"unknown distribution {name!r}, expected one of {', '.join(names)}"
        )
    kind = Distribution(name)
    rule = DISTRIBUTIONS[kind]
    _check_fields(raw, ["name", *(param for param, _ in rule.params)], path)
    if not distribution_applies(kind, dtype):
        raise _FieldError((*path, "name"), f"{name} does not apply to {dtype} tensors")
    params: dict[str, Any] = {}
    for param, default in rule.params:
        value = raw.get(param, default)
        if value is None:
            raise _FieldError((*path, param), "missing")
        if kind is Distribution.RANDINT:
            if not _is_int(value):
                raise _FieldError((*path, param), f"expected an integer, got {value!r}")
        elif kind is Distribution.FULL:
            value = _number(value, SCALAR_DTYPES[dtype], (*path, param))
        else:
            value = _number(value, float, (*path, param))
        params[param] = value
    _check_params(kind, params, dtype, path)
    return DistributionSpec(kind, tuple(params.items()))


def _check_params(kind: Distribution, params: dict[str, Any], dtype: str, path: Path_) -> None:
    if kind is Distribution.NORMAL and params["std"] < 0:
        raise _FieldError((*path, "std"), "must be >= 0")
    if kind is Distribution.UNIFORM and params["low"] > params["high"]:
        raise _FieldError((*path, "high"), "must be >= low")
    if kind is Distribution.RANDINT:
        if params["low"] >= params["high"]:
            raise _FieldError((*path, "high"), "must be > low (high is exclusive)")
        if dtype == "bool" and not 0 <= params["low"] < params["high"] <= 2:
            raise _FieldError(path, "bool tensors need 0 <= low < high <= 2")


def _values(raw: Any, dtype: str, span: int, path: Path_) -> tuple[Any, ...]:
    if not values_storable(dtype):
        raise _FieldError(path, f"{dtype} values cannot be listed; use a distribution")
    if not isinstance(raw, list):
        raise _FieldError(path, "expected a list of the storage span's elements")
    if len(raw) != span:
        raise _FieldError(
            path,
            f"{len(raw)} values for a storage span of {span} elements "
            "(1 + sum((size - 1) * stride), in storage order)",
        )
    python_type = SCALAR_DTYPES[dtype]
    values = []
    for index, value in enumerate(raw):
        number = _number(value, python_type, (*path, index))
        values.append([number.real, number.imag] if python_type is complex else number)
    return tuple(values)


def _number(value: Any, python_type: type, path: Path_) -> Any:
    """``value`` as ``python_type``; complex numbers are written ``[real, imag]``."""
    if python_type is bool:
        if isinstance(value, bool):
            return value
        raise _FieldError(path, f"expected true or false, got {value!r}")
    if python_type is int:
        if _is_int(value):
            return value
        raise _FieldError(path, f"expected an integer, got {value!r}")
    if python_type is complex:
        if (
            isinstance(value, list) and len(value) == 2
            and all(_is_real(part) for part in value)
        ):
            return complex(_float(value[0]), _float(value[1]))
        if _is_real(value):
            return complex(_float(value), 0.0)
        raise _FieldError(path, f"expected a number or [real, imag], got {value!r}")
    if _is_real(value):
        return _float(value)
    raise _FieldError(path, f"expected a number, got {value!r}")


def _float(value: int | float) -> float:
    # PyYAML reads `.nan` as a NaN with the sign bit set; torch and Python write the other one.
    return math.nan if math.isnan(value) else float(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _int_list(raw: Any, path: Path_) -> tuple[int, ...]:
    if not isinstance(raw, list):
        raise _FieldError(path, f"expected a list of integers, got {raw!r}")
    for index, value in enumerate(raw):
        if not _is_int(value) or value < 0:
            raise _FieldError((*path, index), f"expected an integer >= 0, got {value!r}")
    return tuple(raw)


# --- writing ----------------------------------------------------------------------------------


class _Flow(dict):
    """A mapping written on one line (``{kind: tensor, dtype: float32, ...}``)."""


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def _represent_flow(dumper: yaml.SafeDumper, mapping: _Flow) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", mapping, flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Flow, _represent_flow)


def dump_document(name: str | None, definition: str, specs: Sequence[InputSpec]) -> str:
    """One document in the format ``parse_documents`` reads."""
    document: dict[str, Any] = {VERSION_KEY: FORMAT_VERSION}
    if name is not None:
        document["name"] = name
    document["definition"] = definition
    document["inputs"] = [_Flow(_spec_fields(spec)) for spec in specs]
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)


def _spec_fields(spec: InputSpec) -> dict[str, Any]:
    if isinstance(spec, ScalarSpec):
        value = spec.value
        if isinstance(value, complex):
            value = [value.real, value.imag]
        return {"kind": "scalar", "dtype": spec.dtype, "value": value}
    fields: dict[str, Any] = {
        "kind": "tensor", "dtype": spec.dtype, "shape": list(spec.shape),
        "strides": list(spec.strides),
    }
    if spec.on_cpu:
        fields["device"] = "cpu"
    if spec.values is not None:
        fields["values"] = [list(v) if isinstance(v, list | tuple) else v for v in spec.values]
    else:
        assert spec.distribution is not None
        distribution: dict[str, Any] = {"name": spec.distribution.kind.value}
        for param, value in spec.distribution.params:
            distribution[param] = [value.real, value.imag] if isinstance(value, complex) else value
        fields["distribution"] = distribution
        if spec.seed is not None:
            fields["seed"] = spec.seed
    if spec.note is not None:
        fields["note"] = spec.note
    return fields
