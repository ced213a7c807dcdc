"""The JSON document of DESIGN.md: ``{"ok": bool, "fusions": [...]}``."""

from __future__ import annotations

import json
from typing import Any

from fusecli.app.pipeline import FusionOutcome, RunReport


def fusion_record(outcome: FusionOutcome, with_engines: bool = True) -> dict[str, Any]:
    outputs = []
    for index, diff in enumerate(outcome.outputs):
        record = diff.to_json()
        record["index"] = index
        outputs.append(record)
    record = {
        "path": outcome.path,
        "name": outcome.name,
        "ok": outcome.ok,
        "status": outcome.status,
        "error": outcome.error,
        "detail": outcome.detail,
        "segments": [
            {
                "id": s.id,
                "scheduler": s.scheduler,
                "executor": s.executor,
                "exprs": list(s.exprs),
                "fallback": s.fallback,
            }
            for s in outcome.segments
        ],
        "check": outcome.check,
        "outputs": outputs,
        "notices": list(outcome.notices),
        "seconds": round(outcome.seconds, 6),
    }
    if with_engines and outcome.engines is not None:  # --compare-engines
        from fusecli.report.engines_view import comparison_record

        record["engines"] = {
            engine: fusion_record(outcome.engines[engine], with_engines=False)
            for engine in ("fusecli", "nvfuser")
        }
        record["engines"]["comparison"] = comparison_record(outcome.engines["comparison"])
    return record


def run_report_json(report: RunReport, clusters: list | None = None) -> str:
    """``{"ok", "fusions"}``, plus ``clusters`` (failures grouped by signature) when given."""
    document: dict[str, Any] = {
        "ok": report.ok and report.interrupted is None,
        "fusions": [fusion_record(f) for f in report.fusions],
    }
    if report.notices:
        document["notices"] = list(report.notices)
    if report.interrupted is not None:
        document["interrupted"] = report.interrupted
    if clusters is not None:
        from fusecli.report.run_view import clusters_record

        document["clusters"] = clusters_record(clusters)
    return json.dumps(document, indent=2, allow_nan=False)
