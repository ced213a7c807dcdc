"""What a loader hands on: one fusion definition with the inputs it is to run on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition
    from fusecli.ir.nodes import Fusion
    from fusecli.load.inputs import InputSpec

SourceKind = Literal["python", "yaml"]


@dataclass(frozen=True, slots=True, eq=False)  # eq on tensors is elementwise: compare by identity
class LoadedFusion:
    """One fusion of a repro file and the inputs of one of its ``fd.execute`` calls.

    ``inputs`` are the tensors and Python scalars the call was given, copied before anything
    ran on them. ``line`` is the line of the ``fd.execute`` call (of the document, for YAML).
    ``notices`` are one-line remarks for the user (the CLI prints them; loaders never do).
    ``input_specs`` says how the inputs were made when the file described them (YAML); for a
    Python script it is None and conversion derives specs from the tensors themselves.
    """

    path: Path
    name: str
    fd: FusionDefinition
    inputs: list[Any]
    line: int | None
    source_kind: SourceKind
    notices: tuple[str, ...] = ()
    input_specs: tuple[InputSpec, ...] | None = None

    @property
    def fusion(self) -> Fusion:
        return self.fd.fusion

    def __repr__(self) -> str:
        return (
            f"LoadedFusion(name={self.name!r}, path={str(self.path)!r}, line={self.line}, "
            f"source_kind={self.source_kind!r}, inputs={len(self.inputs)})"
        )

    @property
    def where(self) -> str:
        """``file:line`` for messages about this fusion."""
        return f"{self.path}:{self.line}" if self.line is not None else str(self.path)
