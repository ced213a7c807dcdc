"""fusecli's YAML fusion format, version 1 (``docs/yaml-format.md``): reading and writing.

A document holds a name, the definition as nvFuser prints it, and the inputs: tensors as dtype,
shape, strides and either their values or a distribution and seed; scalars as dtype and value.
Files are read with ``yaml.SafeLoader`` only, checked field by field (an error names the file,
the line and the field: ``fusion.yaml:9: inputs[1].dtype: unknown dtype 'bf16', ...``), and
the definition runs through ``load.restricted``, so a YAML file cannot run arbitrary code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fusecli.errors import InputError
from fusecli.frontend import session as frontend_session
from fusecli.frontend.definition import FusionDefinition
from fusecli.load.devices import resolve_device
from fusecli.load.inputs import InputSpec, make_input
from fusecli.load.model import LoadedFusion
from fusecli.load.restricted import run_definition
from fusecli.load.source_text import read_source
from fusecli.load.yaml_inputs import (
    FieldError,
    FieldPath,
    check_fields,
    field_path,
    input_spec,
    spec_fields,
)

FORMAT_VERSION = 1
VERSION_KEY = "fusecli_yaml"
DOCUMENT_FIELDS = (VERSION_KEY, "name", "description", "definition", "inputs")


@dataclass(frozen=True, slots=True)
class FusionDocument:
    name: str | None
    definition: str
    inputs: tuple[InputSpec, ...]
    line: int  # of the document's first field
    definition_line: int | None  # of the definition text's first line, for block scalars
    inputs_line: int  # of the inputs list
    input_lines: tuple[int, ...]  # of each input


# --- reading ----------------------------------------------------------------------------------


def load_yaml(path: str | Path, *, device: str = "auto", seed: int = 0) -> list[LoadedFusion]:
    """One LoadedFusion per document of the YAML file at ``path``.

    Tensor inputs are made on ``device`` (``auto``: CUDA where available). An input without a
    ``seed`` gets ``seed + its index``.
    """
    path = Path(path)
    try:
        text = read_source(path)
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
            except (RuntimeError, ValueError, TypeError, OverflowError) as exc:
                raise InputError(
                    f"inputs[{position}]: cannot make this input: {exc}",
                    f"{path}:{document.input_lines[position]}",
                ) from exc
        expected = len(fd.fusion.inputs)
        if len(inputs) != expected:
            raise InputError(
                f"inputs: {len(inputs)} inputs listed, but the definition takes {expected}",
                f"{path}:{document.inputs_line}",
            )
        loaded.append(
            LoadedFusion(
                path=path, name=name, fd=fd, inputs=inputs, line=document.line,
                source_kind="yaml", input_specs=document.inputs,
            )
        )
    return loaded


def _define(document: FusionDocument, filename: str) -> FusionDefinition:
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
        except FieldError as exc:
            where = f"{filename}:{_line_of(node, exc.path)}"
            field = field_path(exc.path)  # empty for the document itself
            raise InputError(f"{field}: {exc.message}" if field else exc.message,
                             where) from None
    if not documents:
        raise InputError("no fusion document in this file", filename)
    return documents


class _Loader(yaml.SafeLoader):
    """SafeLoader without aliases: ``*name`` could make a small file stand for a billion
    values (the "billion laughs"), and fusecli's own files never need one."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in a fusecli YAML file",
                self.peek_event().start_mark,
            )
        return super().compose_node(parent, index)


def _compose(text: str, filename: str) -> list[tuple[Any, yaml.Node]]:
    """(data, node) per non-empty document; nodes keep the lines for error messages."""
    loader = _Loader(text)
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
    except RecursionError:  # [[[[...]]]] nested deeper than the parser's recursion goes
        raise InputError("not valid YAML: nested too deeply", filename) from None
    finally:
        loader.dispose()
    return found


def _line_of(node: yaml.Node, path: FieldPath) -> int:
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
        raise FieldError((), "a fusion document is a mapping with `fusecli_yaml: 1`")
    check_fields(data, DOCUMENT_FIELDS, ())
    if VERSION_KEY not in data:
        raise FieldError(
            (VERSION_KEY,), f"missing: a fusion document starts with `{VERSION_KEY}: 1`"
        )
    version = data[VERSION_KEY]
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise FieldError(
            (VERSION_KEY,),
            f"version {version!r} is not one this fusecli reads (it reads {FORMAT_VERSION})",
        )
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise FieldError(("name",), f"expected a string, got {name!r}")
    for key in ("definition", "inputs"):
        if key not in data:
            raise FieldError((key,), "missing")
    definition = data["definition"]
    if not isinstance(definition, str):
        raise FieldError(("definition",), "expected the definition's text (use `definition: |`)")
    inputs = data["inputs"]
    if not isinstance(inputs, list):
        raise FieldError(("inputs",), "expected a list of inputs")
    specs = tuple(
        input_spec(entry, ("inputs", index), seed + index) for index, entry in enumerate(inputs)
    )
    return FusionDocument(
        name=name, definition=definition, inputs=specs, line=node.start_mark.line + 1,
        definition_line=_definition_line(node),
        inputs_line=_line_of(node, ("inputs",)),
        input_lines=tuple(_line_of(node, ("inputs", index)) for index in range(len(specs))),
    )


# --- writing ----------------------------------------------------------------------------------


class _Flow(dict):
    """A mapping written on one line (``{kind: tensor, dtype: float32, ...}``)."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # shared values written out, never as *aliases
        return True


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    # A character YAML would read back as another (NEL, a line or paragraph separator, a lone
    # surrogate) or not at all is written in a double-quoted string, escaped.
    if any(not char.isprintable() and char not in "\n\t" for char in text):
        style = '"'
    else:
        style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


class _OneLine(str):
    """A name or a note from the user's file: written on one line, in a double-quoted string
    with escapes when it holds a newline or another character that is not printable."""


def _represent_one_line(dumper: yaml.SafeDumper, text: _OneLine) -> yaml.Node:
    style = None if text.isprintable() else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style=style)


def _represent_flow(dumper: yaml.SafeDumper, mapping: _Flow) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", mapping, flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_OneLine, _represent_one_line)
_Dumper.add_representer(_Flow, _represent_flow)


def dump_document(name: str | None, definition: str, specs: Sequence[InputSpec]) -> str:
    """One document in the format ``parse_documents`` reads."""
    document: dict[str, Any] = {VERSION_KEY: FORMAT_VERSION}
    if name is not None:
        document["name"] = _OneLine(name)
    document["definition"] = definition
    document["inputs"] = []
    for spec in specs:
        fields = spec_fields(spec)
        if "note" in fields:
            fields["note"] = _OneLine(fields["note"])
        document["inputs"].append(_Flow(fields))
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
