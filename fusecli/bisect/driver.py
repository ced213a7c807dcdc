"""``fusecli bisect PATH`` as a library function: reproduce, bisect segments, minimize, verify.

1. Ask about the file as given (in a fresh interpreter by default): does it fail, and how?
   The first failing fusion of the file is the one bisected; its verdict fixes the target
   failure (``--kind``, ``--check-str``). With ``--repeat`` N the original runs N times, to
   say how flaky the failure is.
2. Segment bisection: the first segment that diverges, with a repro of it alone.
3. Minimization, starting from that segment when it fails alone: the smallest fusion that still
   fails, written as ``minimized.py`` and ``minimized.yaml`` and asked again in a fresh
   interpreter, where it must fail alone.

Everything bisect writes goes to one output folder (``-o``, else a new temporary one).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fusecli.app.pipeline import RunOptions
from fusecli.bisect.oracle import Answer, Oracle, Target
from fusecli.bisect.questions import Question, shell_line
from fusecli.bisect.results import BisectReport, GitReport, Minimized, Progress, Tracker
from fusecli.bisect.selection import Slicer
from fusecli.errors import InputError, MissingEnvironmentError

MODES = ("all", "segments", "minimize")


@dataclass(frozen=True, slots=True)
class BisectOptions:
    run: RunOptions = RunOptions()
    kind: str = "auto"  # accuracy, crash, hang, any; auto: what the original shows
    check_str: str | None = None
    timeout: float = 120.0  # seconds per question
    repeat: int = 1
    jobs: int = 1
    isolate: bool = True  # each question in a process of its own
    fork: bool = True  # that process forked from a preloaded zygote, not a new interpreter
    mode: str = "all"
    shrink: bool = True
    max_queries: int = 1000
    max_seconds: float | None = None  # minimization's time budget (the smallest is kept)
    output: Path | None = None


def bisect_path(
    path: Path, options: BisectOptions, progress: Callable[[Progress], None] | None = None
) -> BisectReport:
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", str(path))
    out_dir = _output_dir(options.output)
    tracker = Tracker(progress)
    oracle = Oracle(
        options.run, out_dir / "questions", isolate=options.isolate, fork=options.fork,
        timeout=options.timeout, repeat=options.repeat, jobs=options.jobs,
        on_query=tracker.query_done,
    )
    tracker.update("reproduce", str(path))
    index, first = _reproduce(path, oracle, _engine_log(out_dir, options))
    fork_note = _check_forked_questions(path, index, first, oracle)
    if fork_note:  # the forked answer is not the engine's: ask it again, unforked
        index, first = _reproduce(path, oracle, _engine_log(out_dir, options))
    report = BisectReport(str(path), path.stem, False, first.verdict, output_dir=out_dir,
                          engine=options.run.engine)
    if fork_note:
        report.notes.append(fork_note)
    try:
        _localize(path, index, first, oracle, tracker, options, report)
    finally:
        report.queries, report.runs = oracle.queries, oracle.runs
        report.seconds = tracker.elapsed
    return report


def _output_dir(output: Path | None) -> Path:
    if output is None:
        return Path(tempfile.mkdtemp(prefix="fusecli-bisect-"))
    if output.exists() and not output.is_dir():
        raise InputError("-o names a file; give a folder for bisect's output", str(output))
    output.mkdir(parents=True, exist_ok=True)
    return output


def _engine_log(out_dir: Path, options: BisectOptions) -> Path | None:
    """Where another engine's segmenter log of the original is kept (``nvfuser.log``)."""
    engine = options.run.engine
    return None if engine == "fusecli" else out_dir / f"{engine}.log"


def _reproduce(path: Path, oracle: Oracle, log_to: Path | None) -> tuple[int, Answer]:
    """The first fusion of the file that fails, and its answer (every repeat run); with
    ``log_to``, the engine's segmenter log of the last run asked is written there."""
    index, count = 0, 1
    while True:
        question = Question(path=path, index=index, log_to=log_to)
        answer = oracle.ask(question, every_run=True)
        verdict = answer.verdict
        if verdict.status == "environment":
            raise MissingEnvironmentError(verdict.message)
        if verdict.status == "invalid":
            raise InputError(verdict.message, str(path))
        if verdict.failed and verdict.phase == "load":
            what = "does not finish loading" if verdict.status == "hang" else "dies while loading"
            raise InputError(f"the script {what} ({verdict.summary()}): there is no fusion "
                             "to bisect", str(path))
        count = max(count, verdict.fusions)
        if answer.failing or index + 1 >= count:
            return index, answer
        index += 1


def _check_forked_questions(path: Path, index: int, first: Answer, oracle: Oracle) -> str | None:
    """Another engine's questions run in children forked from a preloaded interpreter; the
    original is asked once more in a new interpreter, and where the two answers differ (a
    native library that does not survive the fork), every question goes to a new interpreter."""
    if oracle.zygotes is None or oracle.options.engine == "fusecli":
        return None
    again = oracle.ask(Question(path=path, index=index), fresh=True)
    if again.verdict.signature == first.verdict.signature:
        return None
    oracle.zygotes = None
    return (f"a forked question answered {first.verdict.summary()[:120]!r} where a new "
            f"interpreter answers {again.verdict.summary()[:120]!r}: every question now runs "
            "in a new interpreter (FUSECLI_FORK=0 does so from the start)")


def _localize(
    path: Path,
    index: int,
    first: Answer,
    oracle: Oracle,
    tracker: Tracker,
    options: BisectOptions,
    report: BisectReport,
) -> None:
    from fusecli.bisect.minimize import minimize
    from fusecli.bisect.repro import repro_header
    from fusecli.bisect.segments import SegmentationFailed, find_segment

    failing = [v for v in first.verdicts if v.failed]
    if not failing:
        return
    target = Target.learn(failing[0], options.kind, options.check_str)
    matching = [v for v in first.verdicts if target.matches(v)]
    if not matching:
        report.notes.append(f"it fails, but not as asked ({target.describe()}): "
                            f"{failing[0].summary()}")
        return
    report.reproduced, report.target, report.original = True, target, matching[0]
    oracle.target = target
    if len(matching) < len(first.verdicts):
        report.flaky = f"failed {len(matching)} of {len(first.verdicts)} runs"
    loaded = _load(path, index, options.run)
    report.name = loaded.name
    slicer = _slicer(loaded, options.run, report)
    header = repro_header(str(path), loaded.name, target, report.original, options.run)
    base = Question(path=path, index=index)
    if not oracle.isolate:
        base = Question(loaded=loaded)
    start = slicer.everything() if slicer else None
    engine = options.run.engine != "fusecli"
    if engine and options.mode in ("all", "segments"):
        from fusecli.bisect.engine_bisect import find_engine_segment

        log = _engine_log(report.output_dir, options)
        finding, report.engine_segments, selection = find_engine_segment(
            loaded, log.read_text(encoding="utf-8") if log.is_file() else "", report.original,
            slicer, oracle, tracker, report.output_dir, header,
        )
        report.segments = finding
        if report.engine_segments.note:
            report.notes.append(report.engine_segments.note)
        if selection is not None:
            start = selection
    elif options.mode in ("all", "segments"):
        try:
            finding, replays, selection = find_segment(
                loaded, base, Question(path=path, index=index), slicer, oracle, tracker,
                report.output_dir, header,
            )
        except SegmentationFailed as error:
            report.notes.append(f"no segment bisection: {error}; minimizing at the op level")
        else:
            report.segments = finding
            report.replays.update(replays)
            if selection is not None:
                start = selection
    if options.mode in ("all", "minimize") and slicer is not None:
        result = minimize(slicer, start, oracle, tracker, shrink_sizes=options.shrink,
                          max_queries=options.max_queries, max_seconds=options.max_seconds)
        if result.out_of_budget:
            report.notes.append(f"minimization stopped early: {result.out_of_budget}; the "
                                "smallest failing fusion found is kept")
        report.flaky = report.flaky or result.flaky
        report.minimized = _write_minimized(loaded, result, oracle, tracker, report, options)


def _load(path: Path, index: int, options: RunOptions) -> Any:
    from fusecli.load import load_path

    return load_path(path, device=options.device, seed=options.seed)[index]


def _slicer(loaded: Any, options: RunOptions, report: BisectReport) -> Slicer | None:
    """A slicer fed with the reference's values of every intermediate; None if it cannot be."""
    from fusecli.load.inputs import clone_exact
    from fusecli.reference import run_reference

    try:
        values = run_reference(
            loaded.fusion, [clone_exact(v) for v in loaded.inputs], seed=options.seed,
            keep_intermediates=True,
        ).values
    except Exception as error:
        report.notes.append(f"no minimization: the reference cannot evaluate the fusion ({error})")
        return None
    return Slicer(loaded, values)


def _write_minimized(
    loaded: Any,
    result: Any,
    oracle: Oracle,
    tracker: Tracker,
    report: BisectReport,
    options: BisectOptions,
) -> Minimized:
    from fusecli.bisect.repro import repro_header, write_repro

    piece = result.piece
    what = f"minimized repro of {loaded.name} ({len(piece.ops)} of "
    what += f"{_ops_of(loaded)} ops)"
    header = repro_header(report.path, what, report.target, report.original, options.run)
    out_dir = report.output_dir
    named = replace(piece.loaded, name=f"{loaded.name}_minimized")
    if options.run.engine != "fusecli":
        return _write_engine_minimized(loaded, named, result, oracle, tracker, report, options,
                                       header)
    py_path, yaml_path = write_repro(named, out_dir, "minimized", header)
    tracker.update("verify", f"{py_path.name} in a fresh interpreter")
    asked = time.perf_counter()
    answer = oracle.ask(Question(path=py_path), fresh=True)
    verify_seconds = time.perf_counter() - asked
    report.replays["minimize: first bad (the minimized repro)"] = shell_line(
        oracle.command(Question(path=py_path))
    )
    if result.last_passing is not None:
        kept = out_dir / "steps" / "last_good.pt"
        command = oracle.command(Question(loaded=result.last_passing.loaded), keep_as=kept)
        report.replays["minimize: last good"] = shell_line(command)
    return Minimized(
        ops_before=_ops_of(loaded), ops=piece.ops,
        inputs_before=len(loaded.fusion.inputs), inputs=[_describe(v) for v in piece.loaded.inputs],
        outputs_before=len(loaded.fusion.outputs), outputs=len(piece.outputs),
        repro_py=py_path, repro_yaml=yaml_path, verified=answer.failing,
        verification=answer.verdict.summary(), queries=result.queries + 1,
        seconds=result.seconds + verify_seconds, steps=result.steps,
    )


def _write_engine_minimized(
    loaded: Any,
    named: Any,
    result: Any,
    oracle: Oracle,
    tracker: Tracker,
    report: BisectReport,
    options: BisectOptions,
    header: list[str],
) -> Minimized:
    """The minimized fusion as a plain nvFuser script (``minimized.py``, no fusecli import),
    checked by running it alone; YAML; and ``report.md``."""
    from fusecli.app.plain_repro import expected_outputs
    from fusecli.bisect import engine_bisect as eb
    from fusecli.bisect import engine_report as er
    from fusecli.bisect.repro import write_yaml_repro
    from fusecli.engines.nvfuser_log import parse_log

    out_dir = report.output_dir
    check = None
    if report.target is not None and report.target.kind == "accuracy":
        check = expected_outputs(named, options.run)
    tracker.update("verify", "python minimized.py, alone")
    asked = time.perf_counter()
    # A crash rarely needs the values: a repro a bug report can hold draws large inputs from a
    # seed, and stores every value only when the drawn ones do not fail the same way
    limits = [eb.COMPACT_LIMIT, None] if check is None else [None]
    for limit in limits:
        py_path = eb.write_plain_repro(named, out_dir / "minimized.py", header, check, limit)
        plain = eb.run_plain(py_path, options.timeout)
        verified = eb.plain_matches(plain, report.target, report.original)
        if verified or not eb.stores_fewer_values(named, limit):
            break
    final_yaml = write_yaml_repro(named, out_dir / "minimized.yaml", header, limit)
    report.replays["minimize: the minimized repro, plain nvFuser"] = f"python {py_path}"
    segments = parse_log(plain.log).segments  # it ran with nvFuser's dump on
    findings = er.EngineFindings(
        versions=er.versions(), original_ops=_ops_of(loaded),
        original_bytes=er.input_bytes(loaded.inputs),
        minimized_bytes=er.input_bytes(named.inputs), plain=plain,
        segments=getattr(report, "engine_segments", None),
        minimized_segments=[(s.id, s.scheduler, s.ops) for s in segments],
        fusecli_verdict=er.fusecli_opinion(named, options.run),
        other_failures=_write_others(result, out_dir, header),
    )
    minimized = Minimized(
        ops_before=_ops_of(loaded), ops=result.piece.ops,
        inputs_before=len(loaded.fusion.inputs), inputs=[_describe(v) for v in named.inputs],
        outputs_before=len(loaded.fusion.outputs), outputs=len(result.piece.outputs),
        repro_py=py_path, repro_yaml=final_yaml, verified=verified,
        verification=f"python minimized.py: {plain.status}"
        + (f" ({plain.key})" if plain.key else ""),
        queries=result.queries, seconds=result.seconds + time.perf_counter() - asked,
        steps=result.steps,
    )
    report.minimized = minimized
    report.report_md = er.write_report(report, findings, out_dir / "report.md")
    return minimized


def _write_others(result: Any, out_dir: Path, header: list[str]) -> dict[str, tuple[int, str]]:
    """Each other failure met while minimizing, its smallest fusion as a plain repro."""
    from fusecli.bisect.engine_bisect import write_plain_repro

    written = {}
    for number, (signature, piece) in enumerate(sorted(result.others.items()), 1):
        path = write_plain_repro(piece.loaded, out_dir / "other" / f"other_{number}.py",
                                 [*header[:1], f"another failure, not chased: {signature}"])
        written[signature] = (len(piece.ops), str(path.relative_to(out_dir)))
    return written


def _describe(value: object) -> str:
    shape = getattr(value, "shape", None)
    if shape is None:
        return f"{type(value).__name__} {value!r}"
    dtype = str(value.dtype).removeprefix("torch.")
    return f"{dtype}[{', '.join(str(s) for s in shape)}]"




@dataclass(frozen=True, slots=True)
class GitRange:
    good: str
    bad: str
    repo: Path = Path(".")
    command: str | None = None  # the oracle command; None: the commit's own fusecli run
    build: str | None = None  # run first at each commit (into $FUSECLI_BUILD_PREFIX)
    engine: str = "fusecli"  # with build: the installed fusecli's engine for each question


def run_bisect(
    paths: list[Path],
    options: BisectOptions,
    git: GitRange | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> BisectReport | GitReport:
    """What ``fusecli bisect`` does: a fusion's failure localized, or a git range bisected."""
    if git is None:
        if len(paths) != 1:
            raise InputError(f"bisect takes one repro file, got {len(paths)} (with --git, "
                             "several may follow --)")
        return bisect_path(paths[0], options, progress)
    from fusecli.bisect.gitbisect import GitOptions, git_bisect

    if git.command is None and not paths:
        raise InputError("--git needs repro files after -- (or an oracle --command)")
    if git.engine != "fusecli" and git.build is None and git.command is None:
        raise InputError(f"--git with --engine {git.engine} needs --build CMD: the checkout "
                         "is built at each commit, then asked with the installed fusecli")
    kind = "any" if options.kind == "auto" else options.kind
    git_options = GitOptions(command=git.command, build=git.build, engine=git.engine, kind=kind,
                             check_str=options.check_str, timeout=options.timeout)
    return git_bisect(git.repo, git.good, git.bad, paths, git_options, Tracker(progress))


def _ops_of(loaded: Any) -> int:
    """The ops of the original, counted as a minimized repro's are (``joined.script_ops``)."""
    from fusecli.bisect.joined import script_ops

    return len(script_ops(loaded.fusion.exprs, loaded.fusion.outputs))
