"""The measured table of launch parameters, and its choices applied to a segment's heuristics.

``benchmarks/sweep.py --write-table fusecli/segment/tuning.json`` times every scheduler's
variants (``variants.py``) over the benchmark population on the GPU and writes this package's
``tuning.json``: per (scheduler, size class) the variant chosen, as its knob values, where its
geometric-mean gain over the defaults is at least ``MIN_GAIN`` and it beats the default in most
segments of the class (``chosen``); the classes that keep their defaults, with their numbers;
and the provenance (device, population, seed, commit). The measurements it came from lie beside
it (``tuning.measurements.json``), kept out of the package.

``tuned`` applies the choice of a segment's size class where it is one of the segment's own
variants (``variant_grid``: lanes that divide its rows, threads its rows can use, rows that fit
in registers where kept there), and keeps the default params otherwise. An absent table, or one
with no choices (as shipped until the sweep has run), leaves every default as it is.

``FUSECLI_TUNING``: unset, the package's table; ``off``, the defaults everywhere; a path, the
table there. It is read when params are first chosen under that setting; ``fd.execute`` keeps
the segmentations it made before a change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from fusecli.errors import InputError
from fusecli.segment.candidate import Candidate
from fusecli.segment.heuristics import HeuristicParams, Sizes
from fusecli.segment.variants import knobs, size_class, variant_grid

ENV_VAR = "FUSECLI_TUNING"
TABLE = Path(__file__).with_name("tuning.json")
FORMAT = 1
MIN_GAIN = 1.03  # geometric-mean speedup over a class's defaults that a choice must reach

Knobs = Mapping[str, Any]  # variants.knobs: field name -> value


@dataclass(frozen=True, slots=True)
class Table:
    """The choices by (scheduler, size class), and where they came from."""

    choices: Mapping[tuple[str, str], Knobs] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    schedulers: frozenset[str] = field(init=False)  # those with a choice: the others skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "schedulers", frozenset(name for name, _ in self.choices))


def chosen(entry: Mapping[str, Any]) -> bool:
    """Whether a class's summary (``sweep.summarize``'s) makes its best variant the choice."""
    return (entry["best"] is not None and entry["gain"] >= MIN_GAIN
            and 2 * entry["wins"] > entry["segments"])


def table_document(summary: Sequence[Mapping[str, Any]],
                   provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON ``load`` reads: each summary entry (with its best's ``knobs``) a choice or a
    class whose defaults are kept, and the provenance, ``MIN_GAIN`` included."""
    choices = [dict(entry) for entry in summary if chosen(entry)]
    kept = [{k: v for k, v in entry.items() if k != "knobs"}
            for entry in summary if not chosen(entry)]
    return {"format": FORMAT, "provenance": {**provenance, "min_gain": MIN_GAIN},
            "choices": choices, "defaults_kept": kept}


def load(path: Path) -> Table:
    """The table written at ``path`` (``table_document``'s JSON)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT:
            raise ValueError(f"format {document.get('format')!r}, not {FORMAT}")
        choices = {(entry["scheduler"], entry["size_class"]):
                   {name: _frozen(value) for name, value in entry["knobs"].items()}
                   for entry in document["choices"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise InputError(f"not a tuning table ({type(error).__name__}: {error}); write one "
                         f"with benchmarks/sweep.py --write-table, or set {ENV_VAR}=off",
                         where=str(path)) from error
    return Table(choices, document.get("provenance", {}))


def _frozen(value: Any) -> Any:
    """JSON's lists as the tuples params hold (a transpose's ``tiles``)."""
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value


def active() -> Table:
    """The table ``FUSECLI_TUNING`` names (module docstring)."""
    return _table_for(os.environ.get(ENV_VAR, ""))


@cache
def _table_for(setting: str) -> Table:
    if setting.strip().lower() == "off":
        return Table()
    if not setting:
        return load(TABLE) if TABLE.is_file() else Table()
    return load(Path(setting))


def tuned(scheduler: str, candidate: Candidate, sizes: Sizes,
          params: HeuristicParams | None, table: Table | None = None
          ) -> HeuristicParams | None:
    """``params`` with the knobs ``table`` (default: ``active()``) chose for their size class,
    where those are a variant of them at these sizes; else ``params`` as they are."""
    table = active() if table is None else table
    if params is None or scheduler not in table.schedulers:
        return params
    choice = table.choices.get((scheduler, size_class(candidate, params, sizes)))
    if choice is None:
        return params
    return next((variant for variant in variant_grid(params, scheduler)
                 if knobs(variant) == choice), params)
