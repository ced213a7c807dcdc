"""One step of ``git bisect run``: test the checked-out commit with that commit's own code.

This file uses the standard library only. ``fusecli bisect --git`` copies it into its run
directory and git runs the copy by path, so checking out an old commit (even of fusecli itself)
cannot change the step while it runs. Usage: ``python gitstep.py SPEC.json``.

The oracle command runs in the repository with the repository first on ``PYTHONPATH``, so that
``import fusecli`` (or whatever package the command runs) is the checked-out commit's. Its
outcome becomes git bisect's code: 0 good, 1 bad, 125 untestable (bad input, a missing
environment, a commit that does not import, a failure of another kind than the one hunted).
Whatever happens, this exits with one of those three: never above 125, which would abort
``git bisect run``. Each step appends one JSON line to the spec's log.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

GOOD, BAD, SKIP = 0, 1, 125
_NOT_IMPORTABLE = re.compile(r"^(ImportError|ModuleNotFoundError|SyntaxError|IndentationError)\b")


def _git(*args, cwd):
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    return result.stdout.strip()


def _last_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _status(code, last):
    return f"exit status {code}: {last}" if last else f"exit status {code}"


def _run(command, spec, cwd, env):
    """(exit status or None, output, how it ended): "exit", "timeout" or "signal"."""
    shell = isinstance(command, str)
    process = subprocess.Popen(
        command, shell=shell, cwd=cwd, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=spec["timeout"])
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        output, _ = process.communicate()
        return None, output, "timeout"
    code = process.returncode
    if code < 0 or (shell and 128 < code < 160):
        return code, output, "signal"
    return code, output, "exit"


def _wanted(kind, spec):
    return spec["kind"] in (kind, "any")


def classify(spec, code, output, ended):
    """(git bisect code, outcome, reason) for the oracle command's result."""
    if ended == "timeout":
        reason = f"hang: no answer within {spec['timeout']:g}s"
        return (BAD, "bad", reason) if _wanted("hang", spec) else (SKIP, "skip", reason)
    if ended == "signal":
        number = -code if code < 0 else code - 128
        reason = f"crash: killed by signal {number}"
        return (BAD, "bad", reason) if _wanted("crash", spec) else (SKIP, "skip", reason)
    last = _last_line(output)
    if code == 0:
        return GOOD, "good", "the command passed"
    if "Traceback (most recent call last)" in output and _NOT_IMPORTABLE.match(last):
        return SKIP, "skip", f"does not import: {last}"
    if spec.get("check_str") is not None:
        if spec["check_str"] in output:
            return BAD, "bad", f"exit status {code}, output has {spec['check_str']!r}"
        return SKIP, "skip", f"exit status {code} without {spec['check_str']!r}: {last}"
    if spec["flavor"] == "fusecli":
        return _classify_fusecli(spec, code, last)
    if code == SKIP or code > 125:
        return SKIP, "skip", _status(code, last)
    return BAD, "bad", _status(code, last)


def _classify_fusecli(spec, code, last):
    """``fusecli run``'s exit codes: 1 mismatch, 2 bad input, 3 pipeline failure, 4 environment."""
    if code == 1:
        reason = f"mismatch against eager torch: {last}"
        return (BAD, "bad", reason) if _wanted("accuracy", spec) else (SKIP, "skip", reason)
    if code == 3:
        reason = f"the pipeline failed: {last}"
        return (BAD, "bad", reason) if _wanted("crash", spec) else (SKIP, "skip", reason)
    if code == 2:
        return SKIP, "skip", f"bad input at this commit: {last}"
    if code == 4:
        return SKIP, "skip", f"missing environment: {last}"
    return SKIP, "skip", _status(code, last)


def step(spec):
    repo = spec["repo"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
    commit = _git("rev-parse", "HEAD", cwd=repo)
    subject = _git("log", "-1", "--format=%s", "HEAD", cwd=repo)
    started = time.time()
    code, outcome, reason, exit_status = SKIP, "skip", "", None
    try:
        checked = None
        if spec.get("import_check"):
            checked, output, ended = _run(spec["import_check"], spec, repo, env)
            if ended != "exit" or checked != 0:
                reason = f"does not import: {_last_line(output) or ended}"
        if not reason:
            exit_status, output, ended = _run(spec["command"], spec, repo, env)
            code, outcome, reason = classify(spec, exit_status, output, ended)
    except Exception as error:  # the step must answer git whatever happens
        code, outcome, reason = SKIP, "skip", f"the step failed: {error}"
    record = {
        "commit": commit, "subject": subject, "outcome": outcome, "code": code,
        "exit_status": exit_status, "reason": reason, "seconds": round(time.time() - started, 3),
    }
    with open(spec["log"], "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    sys.stdout.write(f"fusecli-step {commit} {outcome}: {reason}\n")
    sys.stdout.flush()
    return code


def main(argv):
    try:
        with open(argv[1], encoding="utf-8") as handle:
            spec = json.load(handle)
        return step(spec)
    except Exception as error:
        sys.stderr.write(f"fusecli-step: {error}\n")
        return SKIP


if __name__ == "__main__":
    sys.exit(main(sys.argv))
