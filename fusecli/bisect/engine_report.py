"""``report.md`` for another engine's failure (real nvFuser): a bug report, ready to file,
with the versions asked of a new interpreter, the minimized repro, the exact error, the sizes
before and after, nvFuser's segmentation and fusecli's second opinion."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fusecli.bisect.engine_bisect import EngineSegments, PlainRun
from fusecli.textsafe import md_code, md_fence, one_line

# -- versions and the report -----------------------------------------------------------------------


_PROBE = """
import os, sys, json
sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)
import torch
found = {"torch": torch.__version__, "cuda": torch.version.cuda,
         "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none"}
try:
    import nvfuser_direct
    found["nvfuser"] = getattr(nvfuser_direct, "__version__", "unknown")
except Exception as error:
    found["nvfuser"] = f"not importable ({type(error).__name__})"
print(json.dumps(found))
"""


def versions(timeout: float = 120.0) -> dict[str, str]:
    """nvFuser's, torch's and CUDA's versions and the GPU, asked in a new interpreter."""
    import platform

    from fusecli import __version__

    found = {"fusecli": __version__, "python": platform.python_version()}
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=timeout)
        found.update(json.loads(done.stdout.strip().splitlines()[-1]))
    except Exception as error:  # the report says what could not be asked
        found["probe"] = f"failed: {type(error).__name__}"
    return found


def input_bytes(inputs: Any) -> int:
    total = 0
    for value in inputs:
        nbytes = getattr(value, "nbytes", None)
        total += int(nbytes) if nbytes is not None else 0
    return total


@dataclass(slots=True)
class EngineFindings:
    """What ``report.md`` needs beyond the BisectReport."""

    versions: dict[str, str]
    original_ops: int
    original_bytes: int
    minimized_bytes: int
    plain: PlainRun | None
    segments: EngineSegments | None
    minimized_segments: list[tuple[int, str, tuple[str, ...]]]
    fusecli_verdict: str
    other_failures: dict[str, tuple[int, str]]  # signature -> (ops, repro path)


def write_report(report: Any, findings: EngineFindings, path: Path) -> Path:
    """``report.md``: a bug report for nvFuser, ready to file. Names, paths and messages from
    the user's file are escaped (``fusecli.textsafe``): they cannot start a line or a block."""
    original = report.original
    minimized = report.minimized
    title = original.summary() if original is not None else "nvFuser failure"
    if original is not None and original.key:
        title = original.message
    out = [f"# {one_line(title, limit=200)}", ""]
    v = findings.versions
    out += [
        "## Environment",
        "",
        f"- nvFuser: {v.get('nvfuser', '?')}",
        f"- torch: {v.get('torch', '?')}, CUDA {v.get('cuda', '?')}",
        f"- GPU: {v.get('gpu', '?')}",
        f"- found with fusecli {v.get('fusecli', '?')} (python {v.get('python', '?')}): "
        + md_code(f"fusecli bisect --engine nvfuser {shlex.quote(Path(report.path).name)}"),
        "",
    ]
    if minimized is not None:
        ops = ", ".join(minimized.ops)
        out += [
            "## Repro",
            "",
            f"{len(minimized.ops)} ops ({ops}), reduced from {findings.original_ops} ops; "
            f"inputs {findings.minimized_bytes:,} bytes, from {findings.original_bytes:,}. "
            "Run with `python minimized.py`; it needs nothing but nvFuser and torch.",
            "",
            *md_fence(Path(minimized.repro_py).read_text(encoding="utf-8").rstrip(), "python"),
            "",
        ]
    out += ["## Error", ""]
    plain = findings.plain
    text = plain.text if plain is not None and plain.status != "pass" else (
        original.detail if original is not None else "")
    out += [*md_fence(_trim(text or (original.summary() if original else ""))), ""]
    if original is not None and original.key:
        out += [f"Signature: {md_code(original.key)}", ""]
    if plain is not None:
        verdict = "fails the same way" if minimized and minimized.verified else (
            f"does not fail the same way ({plain.status}: {one_line(plain.key or '')})")
        out += [f"`python minimized.py` alone, with no fusecli in the process: {verdict}.", ""]
    out += ["## nvFuser's segmentation", ""]
    if findings.minimized_segments:
        out.append("Of the minimized fusion:")
        out += [f"- group {i}: `{s}`: {', '.join(o)}" for i, s, o in findings.minimized_segments]
    else:
        out.append("Of the minimized fusion: nvFuser printed no final segments (it fails before "
                   "or while segmenting).")
    known = findings.segments
    if known is not None and known.segments:
        out += ["", "Of the original fusion:"]
        out += [f"- group {i}: `{s}`: {', '.join(o)}" for i, s, o in known.segments]
    if report.segments is not None:
        finding = report.segments
        out += ["", f"The first segment that fails alone: group {finding.index} "
                f"(`{finding.scheduler}`), {len(finding.ops)} ops."]
    elif known is not None and known.note:
        out += ["", known.note + "."]
    out += ["", "## A second opinion: fusecli's model", "", one_line(findings.fusecli_verdict), ""]
    if findings.other_failures:
        out += ["## Other failures met while minimizing (other bugs, not chased)", ""]
        for signature, (ops, repro) in sorted(findings.other_failures.items()):
            out.append(f"- {md_code(signature[:200])}: {ops} ops, {one_line(repro)}")
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def _trim(text: str, lines: int = 14) -> str:
    kept = [line for line in text.strip().splitlines() if not line.startswith("frame #")]
    if len(kept) > lines:
        kept = kept[:lines] + ["..."]
    return "\n".join(kept)


def fusecli_opinion(loaded: Any, options: Any) -> str:
    """fusecli's own pipeline on the minimized fusion: its segments, and whether it runs it
    correctly."""
    from dataclasses import replace

    from fusecli.bisect.check import evaluate
    from fusecli.bisect.repro import executor_name

    ours = replace(options, engine="fusecli", executor="auto")
    try:
        from fusecli.segment.segmenter import segment_fusion

        segmented = segment_fusion(loaded.fusion, loaded.inputs, profile=ours.rules)
        cut = "; ".join(f"{s.scheduler}: {', '.join(e.op.value for e in s.exprs)}"
                        for s in segmented.segments) or "no segments"
        verdict = evaluate(loaded, ours)
    except Exception as error:  # a second opinion that fails says so
        return f"fusecli could not run it: {type(error).__name__}: {error}"
    outcome = "runs it and matches eager torch" if verdict.status == "pass" else (
        f"fails too: {verdict.summary()}")
    return (f"fusecli segments it as [{cut}] and {outcome} (its executor: "
            f"{executor_name(ours.executor)}).")
