"""``fusecli bisect PATH``: localize a failure to a segment, a minimal repro, or a commit."""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from fusecli.cli.main import (
    JsonCommand,
    debug_enabled,
    guarded_json,
    stdout_closing_early,
    warn_fault_injection,
)
from fusecli.cli.options import check_writable, execution_options, timeout_option

_KINDS = ["auto", "accuracy", "crash", "hang", "any"]


@click.command(cls=JsonCommand)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--git", "git_range", nargs=2, default=None, metavar="GOOD BAD",
              help="Bisect the commits between GOOD and BAD instead; repro files follow --.")
@click.option("--repo", type=click.Path(path_type=Path), default=Path("."), show_default=True,
              help="With --git: the checkout to bisect (fusecli, or what --command runs).")
@click.option("--command", "oracle_command", default=None, metavar="CMD",
              help="With --git: the oracle, a shell command run at each commit with the "
              "checkout (with --build: the build) first on PYTHONPATH ({paths} becomes the "
              "repro files). Default: the commit's own `fusecli run PATH...`.")
@click.option("--build", "build_command", default=None, metavar="CMD",
              help="With --git: a shell command that builds each commit into "
              "$FUSECLI_BUILD_PREFIX (a fresh folder, then first on PYTHONPATH); the installed "
              "fusecli then asks the question of each repro. A failing build skips the commit.")
@click.option("--kind", type=click.Choice(_KINDS), default="auto", show_default=True,
              help="The failure to chase; auto: what the original shows (with --git: any).")
@click.option("--check-str", default=None,
              help="A failure counts only when its message contains this text.")
@timeout_option(120.0, "Seconds per question; longer is a hang.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each question up to N times, to catch and report flaky failures.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Questions asked in parallel.")
@click.option("--mode", type=click.Choice(["all", "segments", "minimize"]), default="all",
              show_default=True, help="Segment bisection, op-level minimization, or both.")
@click.option("--no-shrink", is_flag=True, help="Do not shrink input sizes.")
@click.option("--max-queries", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Stop minimizing after this many questions (the smallest so far is kept).")
@click.option("--max-seconds", type=click.FloatRange(min=1, max=7 * 86400), default=None,
              help="Stop minimizing after this many seconds (the smallest so far is kept).")
@click.option("-o", "--output", "output_dir", type=click.Path(path_type=Path), default=None,
              callback=check_writable,
              help="Folder for repros and replay files (default: a new temporary folder).")
@click.option("--force", is_flag=True, help="Write into a non-empty --output folder.")
@click.option("--in-process", is_flag=True,
              help="Ask questions in this process: faster, but a crash or hang is fatal.")
@click.option("--no-fork", is_flag=True,
              help="Start each question's interpreter from scratch (about 1.5 s each) "
              "instead of forking it from a preloaded one.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--engine", type=click.Choice(["fusecli", "nvfuser"]), default="fusecli",
              show_default=True,
              help="The engine under test: fusecli's pipeline, or real nvFuser (nvfuser_direct "
              "importable; fusecli's reference is then the oracle, and the output folder gets a "
              "plain-nvFuser minimized.py and a report.md to file).")
@execution_options
@guarded_json
def bisect(paths, git_range, repo, oracle_command, build_command, kind, check_str, timeout,
           repeat, jobs, mode, no_shrink, max_queries, max_seconds, output_dir, force,
           in_process, no_fork, as_json, engine, executor, device, rules, seed, rtol, atol,
           tolerance, no_tiebreak) -> int:
    """Localize a failure: the first diverging segment, then the smallest repro that fails.

    Every question runs in a process of its own with a timeout (forked from a preloaded
    interpreter). The minimized repro is written as Python and YAML to the output folder and
    checked to fail alone in a new interpreter.

    \b
    Examples:
      FUSECLI_INJECT_FAULT=exp fusecli bisect fusions/softmax.yaml -o out/
      fusecli bisect repro.py --kind crash --check-str "illegal memory access"
      fusecli bisect --git v0.3 HEAD --repo ~/fusecli -- repro.py
      fusecli bisect --git good bad --command 'python -m mypkg.check {paths}' -- repro.py
      fusecli bisect --git GOOD BAD --repo ~/Fuser --engine nvfuser --build \\
        'pip install --no-deps --no-build-isolation --target "$FUSECLI_BUILD_PREFIX" python' \\
        -- repro.py   (docs/bisect-nvfuser.md)

    \b
    Exit codes: 0 localized, 1 the failure did not reproduce, 2 bad input or usage,
                3 not localized (the repro does not fail alone; only untestable commits),
                4 missing environment.
    """
    from fusecli.app.pipeline import RunOptions
    from fusecli.bisect.driver import BisectOptions, GitRange, run_bisect
    from fusecli.bisect.results import GitReport
    from fusecli.errors import InputError
    from fusecli.report.bisect_view import (
        ProgressLines,
        bisect_json,
        git_json,
        render_bisect,
        render_git,
    )
    from fusecli.report.terminal import terminal
    from fusecli.runtime.faults import FaultInjectionWarning

    if git_range is None and (oracle_command is not None or build_command is not None
                              or repo != Path(".")):
        raise InputError("--command, --build and --repo go with --git GOOD BAD")
    if output_dir is not None and output_dir.is_dir() and any(output_dir.iterdir()) and not force:
        raise InputError(f"{output_dir} is not empty; pass --force to overwrite its files")
    warn_fault_injection()  # said once here; the library's warning would repeat it
    warnings.filterwarnings("ignore", category=FaultInjectionWarning)
    debug = debug_enabled()
    run_options = RunOptions(
        executor=executor, device=device, rules=rules, seed=seed, rtol=rtol, atol=atol,
        float64_tiebreak=not no_tiebreak, tolerance=tolerance, debug=debug, engine=engine,
    )
    if engine != "fusecli" and git_range is None:
        from fusecli.app.engines import resolve_engine

        resolve_engine(engine)  # exit 4 now, without nvFuser, not after the first question
    options = BisectOptions(
        run=run_options, kind=kind, check_str=check_str, timeout=timeout, repeat=repeat,
        jobs=jobs, isolate=not in_process, fork=not no_fork, mode=mode, shrink=not no_shrink,
        max_queries=max_queries, max_seconds=max_seconds, output=output_dir,
    )
    git = None if git_range is None else GitRange(
        *git_range, repo=repo, command=oracle_command, build=build_command,
        engine=getattr(run_options, "engine", "fusecli"),
    )
    errors = terminal(stderr=True)
    with errors.status("bisect: starting") as status:
        lines = ProgressLines(errors.is_terminal)
        report = run_bisect(list(paths), options, git,
                            progress=lambda p: status.update(lines(p)))
    with stdout_closing_early():
        if as_json:
            click.echo(git_json(report) if isinstance(report, GitReport) else bisect_json(report))
        elif isinstance(report, GitReport):
            render_git(report, terminal())
        else:
            render_bisect(report, terminal())
    return report.exit_code
