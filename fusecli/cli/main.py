"""The ``fusecli`` command group, and how errors become one line and an exit code.

torch is never imported here: ``fusecli --help`` must answer at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from fusecli import __version__

EXIT_INTERRUPTED = 125  # SIGINT or SIGTERM: what finished is reported (never above 125)


class Context:
    def __init__(self, debug: bool) -> None:
        self.debug = debug


def debug_enabled() -> bool:
    """Whether ``fusecli --debug`` was given (tracebacks instead of one-line errors)."""
    context = click.get_current_context().find_object(Context)
    return context is not None and context.debug


def fail(message: str, exit_code: int, as_json: bool = False) -> None:
    """Print ``fusecli: error: message`` on stderr and exit; never above 125. ``as_json``
    (the command's ``--json``): stdout still gets its one document, saying so."""
    from fusecli.report.terminal import escape_controls

    if as_json:
        try:
            click.echo(error_document(message))
        except OSError:  # stdout is what failed (a full disk, a closed pipe)
            _silence_stdout()
    click.echo(f"fusecli: error: {escape_controls(message)}", err=True)
    sys.exit(min(exit_code, 125))


def error_document(message: str) -> str:
    """The ``--json`` document of a command that failed before it had results."""
    return json.dumps({"ok": False, "fusions": [], "error": message}, indent=2)


def guarded(command: Callable[..., int], json_flag: str | None = None) -> Callable[..., Any]:
    """Run a command body; FusecliError -> its exit code, anything else -> 3; --debug re-raises.
    ``json_flag``: the keyword of the command's ``--json`` flag; when it is given, an error
    also prints ``error_document`` on stdout."""
    import functools

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from fusecli.errors import FusecliError

        debug = debug_enabled()
        as_json = json_flag is not None and bool(kwargs.get(json_flag))
        try:
            code = command(*args, **kwargs)
        except FusecliError as error:
            if debug:
                raise
            fail(str(error), error.exit_code, as_json)
        except KeyboardInterrupt as stop:
            fail(str(stop) or "interrupted", EXIT_INTERRUPTED, as_json)
        except BrokenPipeError:  # stdout closed early (| head): nothing left to say
            _silence_stdout()
            sys.exit(0)
        except Exception as error:  # a bug in fusecli: say so, in one line
            if debug:
                raise
            fail(
                f"internal error: {type(error).__name__}: {error} "
                "(rerun with --debug for a traceback)",
                3, as_json,
            )
        sys.exit(min(code or 0, 125))

    return wrapper


def guarded_json(command: Callable[..., int]) -> Callable[..., Any]:
    """``guarded`` for a command whose ``--json`` flag is the keyword ``as_json``."""
    return guarded(command, json_flag="as_json")


class JsonCommand(click.Command):
    """A command with ``--json`` whose usage errors (a bad option value, an unwritable
    output) also print ``error_document`` on stdout: a reader of stdout always gets one."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> click.Context:
        wants_json = "--json" in args[: args.index("--") if "--" in args else len(args)]
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as error:
            if wants_json:
                click.echo(error_document(error.format_message()))
            raise


@contextlib.contextmanager
def stdout_reserved() -> Iterator[None]:
    """While the block runs, file descriptor 1 is stderr: what scripts, subprocesses and
    nvFuser's C++ write there cannot precede the results (one JSON document) on stdout."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1: nothing to keep clean
        yield
        return
    os.dup2(2, 1)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()  # what Python code printed during the block: to stderr too
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def stdout_closing_early() -> Iterator[None]:
    """Writing results to a reader that stopped reading (``| head``) is not an error: the
    command still exits with its own code. Any other failure to write them (``> /dev/full``,
    a full disk) is an InputError (exit 2): the results are lost, and no traceback says so."""
    from fusecli.errors import InputError

    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError as error:
        _silence_stdout()
        reason = error.strerror or str(error)
        raise InputError(f"cannot write the results to stdout: {reason}") from None


def note_folder_discovery(paths: Iterable[Path]) -> None:
    """Say once, on stderr, that the repro scripts found in folders run as Python code."""
    if any(path.is_dir() for path in paths):
        click.echo(
            "fusecli: note: the repro scripts found in folders are executed as Python code "
            "with your privileges; run only folders you trust",
            err=True,
        )


def _silence_stdout() -> None:
    # Python flushes stdout again at exit; point it at /dev/null so that flush cannot fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt("terminated")


def hoist_debug(argv: list[str]) -> list[str]:
    """``--debug`` may stand anywhere (every error says "rerun with --debug"); click wants it
    before the subcommand. Arguments after ``--`` are left alone."""
    end = argv.index("--") if "--" in argv else len(argv)
    if "--debug" not in argv[:end]:
        return argv
    rest = [a for a in argv[:end] if a != "--debug"]
    return ["--debug", *rest, *argv[end:]]


def warn_fault_injection() -> None:
    faults = os.environ.get("FUSECLI_INJECT_FAULT", "").strip()
    if faults:
        click.secho(
            f"fusecli: WARNING: FUSECLI_INJECT_FAULT={faults}: executors compute these ops "
            "WRONGLY on purpose (fault injection for testing)",
            err=True, fg="red", bold=True,
        )


class _Commands(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_debug(list(args)))


@click.group(cls=_Commands,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="fusecli")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """A fusion debugger for nvFuser-style fusion definitions.

    Give it a repro script printed by nvFuser or Thunder (run verbatim, with `nvfuser`
    resolved to fusecli's frontend) or a YAML fusion.

    \b
    Exit codes: 0 ok, 1 mismatch against eager torch, 2 bad input or usage,
                3 the pipeline failed on this fusion, 4 missing environment (GPU, CuPy).
    """
    ctx.obj = Context(debug)


def register() -> None:
    from fusecli.cli import bench, bisect, codegen, convert, explain, ir, run

    cli.add_command(run.run)
    cli.add_command(explain.explain)
    cli.add_command(bisect.bisect)
    cli.add_command(codegen.codegen)
    cli.add_command(bench.bench)
    cli.add_command(convert.convert)
    cli.add_command(ir.ir)


def main() -> None:
    from fusecli.engines.nvfuser import prepare_dlopen

    prepare_dlopen(sys.argv[1:])  # real nvFuser's wheel loads only so, and only before torch
    register()
    signal.signal(signal.SIGTERM, _terminated)  # a CI runner's stop: report what finished
    cli(prog_name="fusecli")
