"""Bisecting another engine's failure (real nvFuser): its segments, plain repros, the bug report.

With ``--engine nvfuser`` the system under test is nvFuser and fusecli is the oracle: every
question runs the fusion through ``nvfuser_direct`` in a new interpreter (a CUDA error poisons a
process; nvFuser's caches must not carry over), and fusecli's reference and error bounds judge
its outputs. What differs from bisecting fusecli's own pipeline:

- **Segments are nvFuser's.** Its segmenter log (``NVFUSER_DUMP=segmented_fusion``) says how it
  cut the fusion. Where its segments match fusecli's model of them scheduler for scheduler,
  each segment is cut out of the fusion as a standalone fusion (fed with the reference's values
  of its inputs) and asked alone, the group named by the error first ("Error from segmentation
  group 8"); the first that fails alone is the culprit and minimization starts from it. Where
  they differ, the report shows nvFuser's segments and minimization starts from everything.
- **Repros are plain nvFuser.** ``minimized.py`` imports ``nvfuser_direct`` and nothing of
  fusecli; it is checked by running ``python minimized.py`` alone, which must fail with the same
  signature (for a wrong result the script itself checks its outputs against values and error
  bounds fusecli computed, and raises).
- **A bug report**: ``report.md``, ready to file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.bisect.check import Verdict
from fusecli.bisect.oracle import Oracle, Target
from fusecli.bisect.questions import Question
from fusecli.bisect.results import SegmentFinding, Step, Tracker
from fusecli.bisect.selection import BuildError, Selection, Slicer
from fusecli.textsafe import one_line

# -- plain repros ----------------------------------------------------------------------------------


COMPACT_LIMIT = 4096  # elements of an input a bug report's repro writes out, when it can


def write_plain_repro(
    loaded: Any, path: Path, header: list[str], check: Any = None, exact_limit: int | None = None
) -> Path:
    """``loaded`` as a plain nvfuser_direct script at ``path`` (``app.plain_repro.
    plain_script``) under fusecli's header."""
    from fusecli.app.plain_repro import plain_script

    lines = [f"# {one_line(line)}" for line in header]
    lines.append(f"# run it: python {one_line(path.name)}   (real nvFuser; no fusecli needed)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + plain_script(loaded, check, exact_limit),
                    encoding="utf-8")
    return path


def stores_fewer_values(loaded: Any, limit: int | None) -> bool:
    """Whether a repro written with ``limit`` draws some input that an exact one stores."""
    from fusecli.load.convert import stores_exactly

    if limit is None:
        return False
    return any(stores_exactly(x) and not stores_exactly(x, limit) for x in loaded.inputs)


@dataclass(slots=True)
class PlainRun:
    status: str  # pass, crash, hang, died
    key: str | None  # the error's signature, when it raised
    text: str  # what it printed on stderr (the end)
    seconds: float
    log: str = ""  # what it printed on stdout: nvFuser's segmenter log


def run_plain(path: Path, timeout: float) -> PlainRun:
    """``python PATH`` alone (``attribution.run_script``), fusecli nowhere imported by it, with
    nvFuser's segmenter dump on; what became of it."""
    from fusecli.app.attribution import run_script
    from fusecli.engines.nvfuser import DUMP
    from fusecli.engines.signature import error_signature

    run = run_script(path, timeout, {"NVFUSER_DUMP": DUMP})
    if run.status == "hang":
        return PlainRun("hang", None, f"no answer within {timeout:g}s", run.seconds, run.stdout)
    key = {"pass": None, "died": f"died: signal {-(run.returncode or 0)}"}.get(
        run.status, error_signature(run.stderr).key)
    text = run.stderr[-8000:] if run.status == "crash" else run.stderr[-4000:]
    return PlainRun(run.status, key, text, run.seconds, run.stdout)


def plain_matches(plain: PlainRun, target: Target, original: Verdict) -> bool:
    """Whether a plain script's run shows the failure being chased."""
    if plain.status == "pass":
        return False
    if target.kind == "hang":
        return plain.status == "hang"
    if target.kind == "accuracy":
        return plain.status == "crash" and "AssertionError" in (plain.key or "")
    if target.check_str is not None:
        return target.check_str in plain.text
    if target.kind == "any":
        return True
    if original.status == "died":
        return plain.status == "died"
    return original.key is not None and plain.key == original.key


# -- nvFuser's own segments ------------------------------------------------------------------------


@dataclass(slots=True)
class EngineSegments:
    """nvFuser's segmentation of the fusion, and why its segments were not asked alone."""

    segments: list[tuple[int, str, tuple[str, ...]]] = field(default_factory=list)
    note: str = ""


def find_engine_segment(
    loaded: Any,
    log: str,
    original: Verdict,
    slicer: Slicer | None,
    oracle: Oracle,
    tracker: Tracker,
    out_dir: Path,
    header: list[str],
) -> tuple[SegmentFinding | None, EngineSegments, Selection | None]:
    """nvFuser's segment that fails alone, its plain repro, and its selection (to minimize
    from); (None, what is known, None) when its segments cannot be cut out of the fusion.
    ``log``: nvFuser's segmenter log of the original (kept by the question that reproduced it)."""
    from fusecli.bisect.segments import segment_selection
    from fusecli.engines.compare import compare_engines, fusecli_segments, nvfuser_segments
    from fusecli.engines.nvfuser_log import parse_log
    from fusecli.segment.segmenter import segment_fusion

    started, asked = time.perf_counter(), oracle.queries
    parsed = parse_log(log)
    known = EngineSegments([(s.id, s.scheduler, s.ops) for s in parsed.segments])
    if not parsed.segments:
        known.note = ("nvFuser printed no final segments (it failed before segmenting, or in "
                      "its segmenter)")
        return None, known, None
    try:
        ours = segment_fusion(loaded.fusion, loaded.inputs, profile=oracle.options.rules)
    except Exception as error:  # fusecli's model is a guide here, not the system under test
        known.note = f"fusecli's segmenter raised {type(error).__name__}: {error}"
        return None, known, None
    comparison = compare_engines(fusecli_segments(ours), nvfuser_segments(parsed), {})
    if not comparison.agree:
        known.note = (f"nvFuser's segments differ from fusecli's model of them "
                      f"({comparison.verdict()}): they cannot be cut out one by one; minimizing "
                      "the whole fusion")
        return None, known, None
    if slicer is None or ours.failure is not None:
        known.note = "the segments cannot be cut out here"
        return None, known, None
    order = list(range(len(ours.segments)))
    named = [i for i, s in enumerate(parsed.segments) if s.id == original.group]
    if named:  # the group the error names goes first
        order.remove(named[0])
        order.insert(0, named[0])
    steps: list[Step] = []
    for position in order:
        segment = ours.segments[position]
        selection = segment_selection(segment, loaded.fusion)
        if selection is None:
            continue
        try:
            piece = slicer.build(selection, name=f"{loaded.name}_segment{position}")
        except BuildError:
            continue
        nv_id, scheduler, ops = known.segments[position]
        tracker.update("segments", f"nvFuser segment group {nv_id} ({scheduler}) alone")
        answer = oracle.ask(Question(loaded=piece.loaded))
        steps.append(Step("segments", f"group {nv_id} ({scheduler}) alone", answer.failing,
                          answer.verdict.summary(), len(piece.ops)))
        if not answer.failing:
            continue
        repro = write_plain_repro(
            piece.loaded, out_dir / f"segment_{position}.py",
            [*header, f"nvFuser's segment group {nv_id} ({scheduler}) alone"],
        )
        finding = SegmentFinding(
            index=position, count=len(parsed.segments), scheduler=scheduler, ops=list(ops),
            decisions=[], ir="", kernel_source=None,
            kernel_note=f"nvFuser's segment group {nv_id}, run alone through nvFuser",
            repro=repro, fails_alone=True, steps=steps,
            queries=oracle.queries - asked, seconds=time.perf_counter() - started,
        )
        return finding, known, piece.selection
    known.note = "no segment of nvFuser's fails alone: the failure needs several segments"
    return None, known, None
