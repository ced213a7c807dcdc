"""The entries of a YAML fusion's ``inputs`` list: checking them, and writing specs as them.

Part of fusecli's YAML format (``docs/yaml-format.md``); ``yaml_format`` reads and writes the
documents around them. A problem is a ``FieldError`` with the path of the field it is about.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from fusecli.load.distributions import (
    DISTRIBUTIONS,
    SCALAR_DTYPES,
    TENSOR_DTYPES,
    Distribution,
    DistributionSpec,
    default_distribution,
    distribution_applies,
    values_storable,
)
from fusecli.load.inputs import (
    InputSpec,
    ScalarSpec,
    TensorSpec,
    contiguous_strides,
    storage_span,
)

TENSOR_FIELDS = (
    "kind", "dtype", "shape", "strides", "device", "values", "distribution", "seed", "note",
)
SCALAR_FIELDS = ("kind", "dtype", "value", "note")

FieldPath = tuple[str | int, ...]  # a field path: ("inputs", 1, "dtype")


class FieldError(Exception):
    def __init__(self, path: FieldPath, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def field_path(path: FieldPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def check_fields(data: dict, allowed: Sequence[str], path: FieldPath) -> None:
    for key in data:
        if key not in allowed:
            raise FieldError(
                (*path, key) if isinstance(key, str) else path,
                f"unknown field {key!r}, expected one of {', '.join(allowed)}",
            )


def input_spec(entry: Any, path: FieldPath, default_seed: int) -> InputSpec:
    if not isinstance(entry, dict):
        raise FieldError(path, "expected a mapping with `kind: tensor` or `kind: scalar`")
    kind = entry.get("kind")
    if kind == "tensor":
        return _tensor(entry, path, default_seed)
    if kind == "scalar":
        return _scalar(entry, path)
    raise FieldError((*path, "kind"), f"expected `tensor` or `scalar`, got {kind!r}")


def _dtype(entry: dict, path: FieldPath, choices: Sequence[str]) -> str:
    dtype = entry.get("dtype")
    if dtype not in choices:
        raise FieldError(
            (*path, "dtype"), f"unknown dtype {dtype!r}, expected one of {', '.join(choices)}"
        )
    return dtype


def _tensor(entry: dict, path: FieldPath, default_seed: int) -> TensorSpec:
    check_fields(entry, TENSOR_FIELDS, path)
    dtype = _dtype(entry, path, list(TENSOR_DTYPES))
    shape = _int_list(entry.get("shape"), (*path, "shape"))
    if "strides" in entry:
        strides = _int_list(entry["strides"], (*path, "strides"))
        if len(strides) != len(shape):
            raise FieldError(
                (*path, "strides"), f"{len(strides)} strides for {len(shape)} dimensions"
            )
    else:
        strides = contiguous_strides(shape)
    on_cpu = False
    if "device" in entry:
        if entry["device"] != "cpu":
            raise FieldError((*path, "device"), "the only device to name is `cpu` "
                              "(nvFuser's CPU scalar tensors); inputs go to the run's device")
        if shape:
            raise FieldError((*path, "device"), "`device: cpu` is for 0-dim tensors only")
        on_cpu = True
    note = entry.get("note")
    if note is not None and not isinstance(note, str):
        raise FieldError((*path, "note"), "expected a string")
    if "values" in entry and "distribution" in entry:
        raise FieldError(path, "give `values` or `distribution`, not both")
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
            raise FieldError((*path, "seed"), f"expected an integer >= 0, got {seed!r}")
    return TensorSpec(
        dtype, shape, strides, distribution=distribution, seed=seed, on_cpu=on_cpu, note=note
    )


def _scalar(entry: dict, path: FieldPath) -> ScalarSpec:
    check_fields(entry, SCALAR_FIELDS, path)
    dtype = _dtype(entry, path, list(SCALAR_DTYPES))
    if "value" not in entry:
        raise FieldError((*path, "value"), "missing")
    return ScalarSpec(dtype, _number(entry["value"], SCALAR_DTYPES[dtype], (*path, "value")))


def _distribution(raw: Any, dtype: str, path: FieldPath) -> DistributionSpec:
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict):
        raise FieldError(path, "expected a distribution name or a mapping with `name`")
    names = [d.value for d in Distribution]
    name = raw.get("name")
    if name not in names:
        raise FieldError(
            (*path, "name"), f"unknown distribution {name!r}, expected one of {', '.join(names)}"
        )
    kind = Distribution(name)
    rule = DISTRIBUTIONS[kind]
    check_fields(raw, ["name", *(param for param, _ in rule.params)], path)
    if not distribution_applies(kind, dtype):
        raise FieldError((*path, "name"), f"{name} does not apply to {dtype} tensors")
    params: dict[str, Any] = {}
    for param, default in rule.params:
        value = raw.get(param, default)
        if value is None:
            raise FieldError((*path, param), "missing")
        if kind is Distribution.RANDINT:
            if not _is_int(value):
                raise FieldError((*path, param), f"expected an integer, got {value!r}")
        elif rule.typed_params:
            value = _number(value, SCALAR_DTYPES[dtype], (*path, param))
        else:
            value = _number(value, float, (*path, param))
        params[param] = value
    _check_params(kind, params, dtype, path)
    return DistributionSpec(kind, tuple(params.items()))


def _check_params(kind: Distribution, params: dict[str, Any], dtype: str, path: FieldPath) -> None:
    if kind is Distribution.NORMAL and params["std"] < 0:
        raise FieldError((*path, "std"), "must be >= 0")
    if kind in (Distribution.UNIFORM, Distribution.RANGE) and params["low"] > params["high"]:
        raise FieldError((*path, "high"), "must be >= low")
    if kind is Distribution.RANDINT:
        if params["low"] >= params["high"]:
            raise FieldError((*path, "high"), "must be > low (high is exclusive)")
        if dtype == "bool" and not 0 <= params["low"] < params["high"] <= 2:
            raise FieldError(path, "bool tensors need 0 <= low < high <= 2")


def _values(raw: Any, dtype: str, span: int, path: FieldPath) -> tuple[Any, ...]:
    if not values_storable(dtype):
        raise FieldError(path, f"{dtype} values cannot be listed; use a distribution")
    if not isinstance(raw, list):
        raise FieldError(path, "expected a list of the storage span's elements")
    if len(raw) != span:
        raise FieldError(
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


def _number(value: Any, python_type: type, path: FieldPath) -> Any:
    """``value`` as ``python_type``; complex numbers are written ``[real, imag]``."""
    if python_type is bool:
        if isinstance(value, bool):
            return value
        raise FieldError(path, f"expected true or false, got {value!r}")
    if python_type is int:
        if _is_int(value):
            return value
        raise FieldError(path, f"expected an integer, got {value!r}")
    if python_type is complex:
        if (
            isinstance(value, list) and len(value) == 2
            and all(_is_real(part) for part in value)
        ):
            return complex(_float(value[0]), _float(value[1]))
        if _is_real(value):
            return complex(_float(value), 0.0)
        raise FieldError(path, f"expected a number or [real, imag], got {value!r}")
    if _is_real(value):
        return _float(value)
    raise FieldError(path, f"expected a number, got {value!r}")


def _float(value: int | float) -> float:
    # PyYAML reads `.nan` as a NaN with the sign bit set; torch and Python write the other one.
    return math.nan if math.isnan(value) else float(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _int_list(raw: Any, path: FieldPath) -> tuple[int, ...]:
    if not isinstance(raw, list):
        raise FieldError(path, f"expected a list of integers, got {raw!r}")
    for index, value in enumerate(raw):
        if not _is_int(value) or value < 0:
            raise FieldError((*path, index), f"expected an integer >= 0, got {value!r}")
    return tuple(raw)


def spec_fields(spec: InputSpec) -> dict[str, Any]:
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
