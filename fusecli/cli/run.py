"""``fusecli run PATH...``: execute fusions and diff every output against eager torch."""

from __future__ import annotations

from pathlib import Path

import click

from fusecli.cli.main import (
    EXIT_INTERRUPTED,
    JsonCommand,
    debug_enabled,
    guarded_json,
    note_folder_discovery,
    stdout_closing_early,
    stdout_reserved,
    warn_fault_injection,
)
from fusecli.cli.options import (
    check_writable,
    engine_options,
    execution_options,
    timeout_option,
)


@click.command(cls=JsonCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@execution_options
@click.option("-v", "--verbose", is_flag=True, help="Also show each fusion's inputs.")
@click.option("--strict", is_flag=True,
              help="A kernel-scheduler segment the cupy executor cannot run is an error "
              "(exit 3) instead of running on ATen (expr_eval segments are ATen by design).")
@click.option("--junit", type=click.Path(path_type=Path), default=None, callback=check_writable,
              help="Also write a JUnit XML report here (one testcase per fusion).")
@click.option("--force", is_flag=True, help="Overwrite the --junit file if it exists.")
@timeout_option(600.0, "Seconds one file may take to load, and each of its fusions to run; "
                "past it, that fusion is an error (exit 3) and the run goes on.")
@click.option("--all-calls", is_flag=True,
              help="Check every fd.execute call of a script, not one per fusion and input "
              "signature (dtypes, shapes, strides, devices, scalar values).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (one per GPU where there are GPUs).")
@click.option("--shard", default=None, metavar="K/N",
              help="Run only the K-th of N slices of the sorted file list (CI matrices).")
@engine_options
@guarded_json
def run(paths, as_json, executor, device, rules, seed, rtol, atol, tolerance, no_tiebreak, verbose,
        strict, junit, force, timeout, all_calls, jobs, shard, engine, compare_engines) -> int:
    """Run fusions (files or directories) and compare every output with eager PyTorch.

    \b
    Examples:
      fusecli run fusions/matmul_reshape_permute.py
      fusecli run fusions/ --json > report.json
      fusecli run fusions/ --jobs 2 --shard 1/4 --junit results.xml
      fusecli run fusions/ --compare-engines     (real nvFuser too, on a GPU machine)

    --engine nvfuser runs the fusions through real nvFuser instead (its outputs judged the
    same way); --compare-engines runs both, diffs both against eager torch and compares their
    segmentations. Without nvfuser_direct importable, both exit 4.

    Each file runs in a worker process of its own, killed past --timeout: a script that exits,
    crashes or hangs is that file's error record and the run goes on. With --engine nvfuser,
    each cluster of failures is attributed to nvFuser or to fusecli's translation by running
    its smallest fusion as a plain nvfuser_direct script.
    """
    from fusecli.app.attribution import attribute_clusters
    from fusecli.app.corpus import cluster_failures, parse_shard, run_corpus
    from fusecli.app.pipeline import RunOptions
    from fusecli.errors import InputError
    from fusecli.report.json_view import run_report_json
    from fusecli.report.junit import write_junit
    from fusecli.report.run_view import render_clusters, render_engine_comparisons, render_run
    from fusecli.report.terminal import terminal

    if junit is not None and junit.is_file() and not force:
        raise InputError(f"--junit {junit} exists; pass --force to overwrite it")
    warn_fault_injection()
    options = RunOptions(
        executor=executor, device=device, rules=rules, seed=seed, rtol=rtol, atol=atol,
        float64_tiebreak=not no_tiebreak, tolerance=tolerance, strict=strict, timeout=timeout,
        all_calls=all_calls,
        debug=debug_enabled(), engine=engine, compare_engines=compare_engines,
    )
    if engine != "fusecli" or compare_engines:
        from fusecli.app.engines import resolve_engine

        resolve_engine("nvfuser")  # exit 4 now, not once per fusion, when nvFuser is not here
    selected = parse_shard(shard)
    errors = terminal(stderr=True)
    note_folder_discovery(paths)
    with stdout_reserved(), errors.status("running...") as status:
        report = run_corpus(
            list(paths), options, jobs=jobs, shard=selected,
            progress=lambda p: status.update(f"running {p}"),
        )
        clusters = cluster_failures(report)
        if not report.interrupted:
            status.update("attributing failures...")
            try:
                attribute_clusters(clusters, options, jobs)
            except KeyboardInterrupt as stop:
                report.interrupted = str(stop) or "interrupted"
    for notice in [*report.notices, *sorted({n for f in report.fusions for n in f.notices})]:
        errors.print(f"fusecli: note: {notice}", style="dim", markup=False, highlight=False)
    if junit is not None:
        write_junit(report, junit)
    with stdout_closing_early():
        if as_json:
            click.echo(run_report_json(report, clusters))
        else:
            console = terminal()
            render_run(report, console, errors, verbose=verbose)
            render_engine_comparisons(report, console)
            render_clusters(clusters, console)
    if report.interrupted:
        errors.print(f"fusecli: {report.interrupted}: the report covers the "
                     f"{len(report.fusions)} fusion(s) that finished", style="bold red")
        return EXIT_INTERRUPTED
    return report.exit_code
