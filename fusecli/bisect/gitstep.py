"""One step of ``git bisect run``: test the checked-out commit of bisect's own worktree.

This file uses the standard library only. ``fusecli bisect --git`` copies it into its run
directory and git runs the copy by path, so checking out an old commit (even of fusecli itself)
cannot change the step while it runs. Usage: ``python gitstep.py SPEC.json``.

Without a build command, the oracle command runs in the worktree with the worktree first on
``PYTHONPATH``, so that ``import fusecli`` (or whatever package the command runs) is the
checked-out commit's. With one (``--build``), the build runs first, through ``bash -c`` in the
worktree, with ``FUSECLI_BUILD_PREFIX`` naming a fresh empty folder for this commit and
``FUSECLI_BISECT_COMMIT`` its hash (both stay set for the oracle); a build that fails makes
the commit untestable. Then that folder goes first on ``PYTHONPATH`` instead, and the questions
are asked with the installed fusecli (``python -m fusecli.bisect REPRO``, one per repro file)
from inside the folder, so that neither the worktree's sources nor the checkout's own fusecli
are imported.

The outcome becomes git bisect's code: 0 good, 1 bad, 125 untestable (bad input, a missing
environment, a commit that does not import or build, a failure of another kind than the one
hunted). Whatever happens, this exits with one of those three: never above 125, which would
abort ``git bisect run``. Each step appends one JSON line to the spec's log.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GOOD, BAD, SKIP = 0, 1, 125
BUILD_TAIL_LINES = 12  # of a failed build's output, kept in the report
_NOT_IMPORTABLE = re.compile(r"^(ImportError|ModuleNotFoundError|SyntaxError|IndentationError)\b")
_VERDICT = "FUSECLI_VERDICT "
# python -m fusecli.bisect's failure statuses, as the kinds --kind names
_FAILURE_KINDS = {"mismatch": "accuracy", "crash": "crash", "died": "crash", "hang": "hang"}
# The build or oracle being waited for: it runs in a session of its own (so that a timeout
# can kill all of it), so when bisect is interrupted, this step must take it down itself.
_running = {}


def _git(*args, cwd):
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    return result.stdout.strip()


def _first_line(text):
    return text.splitlines()[0] if text.strip() else ""


def _last_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _status(code, last):
    return f"exit status {code}: {last}" if last else f"exit status {code}"


def _tail(text, count):
    return [line.rstrip() for line in text.splitlines() if line.strip()][-count:]


def _run(command, timeout, cwd, env, stdout=subprocess.PIPE):
    """(exit status or None, output, how it ended): "exit", "timeout" or "signal"."""
    shell = isinstance(command, str)
    process = subprocess.Popen(
        command, shell=shell, cwd=cwd, env=env, stdout=stdout,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    _running["process"] = process
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        output, _ = process.communicate()
        return None, output, "timeout"
    finally:
        _running.pop("process", None)
    code = process.returncode
    if code < 0 or (shell and 128 < code < 160):
        return code, output, "signal"
    return code, output, "exit"


def _kill(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _interrupted(signum, frame):
    """SIGTERM from fusecli when bisect is interrupted: stop the build or oracle, then go."""
    process = _running.get("process")
    if process is not None:
        _kill(process)
    sys.exit(SKIP)  # through step's cleanup of the build folder


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
    if spec["flavor"] == "question":
        return _classify_question(spec, code, output)
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


def _classify_question(spec, code, output):
    """``python -m fusecli.bisect``'s exit status: 0 pass, 1 a failure (its verdict, the last
    ``FUSECLI_VERDICT`` line, says which), 2 a bad question, 4 a missing environment."""
    verdict = _verdict(output)
    said = ": ".join(str(verdict[k]) for k in ("error_type", "message") if verdict.get(k))
    said = said or _last_line(output)
    if code == 1:
        status = verdict.get("status", "failure")
        reason = f"{status}: {said}" if said else status
        if not _wanted(_FAILURE_KINDS.get(status, "crash"), spec):
            return SKIP, "skip", f"a failure of another kind: {reason}"
        check_str = spec.get("check_str")
        if check_str is not None and check_str not in f"{verdict.get('message', '')}\n{output}":
            return SKIP, "skip", f"a failure without {check_str!r}: {reason}"
        return BAD, "bad", reason
    if code == 2:
        return SKIP, "skip", f"bad question at this commit: {said}"
    if code == 4:
        return SKIP, "skip", f"missing environment: {said}"
    return SKIP, "skip", _status(code, said)


def _verdict(output):
    for line in reversed(output.splitlines()):
        if line.startswith(_VERDICT):
            try:
                return json.loads(line[len(_VERDICT):])
            except ValueError:
                return {}
    return {}


def _build(spec, commit, env):
    """Run the build command: (the folder it installed into, None) or (None, why not)."""
    prefix = tempfile.mkdtemp(prefix=f"{commit[:12]}-", dir=spec["builds"])
    build_env = dict(env, FUSECLI_BUILD_PREFIX=prefix)
    # A build's output can be long (nvFuser's is): it goes to a file, its tail to the report.
    log_path = f"{prefix}.log"
    with open(log_path, "w", encoding="utf-8", errors="replace") as log:
        code, _, ended = _run(["bash", "-c", spec["build"]], spec.get("build_timeout"),
                              spec["repo"], build_env, stdout=log)
    if ended == "exit" and code == 0:
        return prefix, None
    shutil.rmtree(prefix, ignore_errors=True)
    with open(log_path, "rb") as log:
        log.seek(max(0, os.path.getsize(log_path) - 65536))
        lines = _tail(log.read().decode("utf-8", "replace"), BUILD_TAIL_LINES)
    if ended == "signal":
        how = f"killed by signal {-code if code < 0 else code - 128}"
    else:
        how = "timed out" if ended == "timeout" else f"exit status {code}"
    if not lines:
        return None, f"the build failed ({how}) without output"
    # The first line alone is what git's progress and one-line notes show.
    shown = "".join(f"\n  {line}" for line in lines)
    return None, f"the build failed ({how}): {lines[-1]}\nits last lines:{shown}"


def _ask(spec, cwd, env):
    """(git bisect code, outcome, reason, exit status): the oracle command, or each question."""
    if spec["flavor"] != "question":
        exit_status, output, ended = _run(spec["command"], spec["timeout"], cwd, env)
        return (*classify(spec, exit_status, output, ended), exit_status)
    answers = []
    for command in spec["questions"]:
        exit_status, output, ended = _run(command, spec["timeout"], cwd, env)
        code, outcome, reason = classify(spec, exit_status, output, ended)
        if len(spec["questions"]) > 1:
            reason = f"{os.path.basename(command[3])}: {reason}"
        answers.append((code, outcome, reason, exit_status))
        if code == BAD:  # one failing repro makes the commit bad
            return answers[-1]
    # None failed: untestable if any question was, else good.
    return next((a for a in answers if a[0] == SKIP), answers[-1])


def step(spec):
    repo = spec["repo"]
    env = dict(os.environ)
    commit = _git("rev-parse", "HEAD", cwd=repo)
    subject = _git("log", "-1", "--format=%s", "HEAD", cwd=repo)
    started = time.time()
    code, outcome, reason, exit_status = SKIP, "skip", "", None
    prefix = None
    try:
        first, cwd = repo, repo
        env["FUSECLI_BISECT_COMMIT"] = commit
        if spec.get("build"):
            prefix, reason = _build(spec, commit, env)
            env["FUSECLI_BUILD_PREFIX"] = first = prefix or ""
            cwd = prefix if spec["flavor"] == "question" else repo
        path = [first, *spec.get("python_path", []), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
        if not reason and spec.get("import_check"):
            checked, output, ended = _run(spec["import_check"], spec["timeout"], repo, env)
            if ended != "exit" or checked != 0:
                reason = f"does not import: {_last_line(output) or ended}"
        if not reason:
            code, outcome, reason, exit_status = _ask(spec, cwd, env)
    except Exception as error:  # the step must answer git whatever happens
        code, outcome, reason = SKIP, "skip", f"the step failed: {error}"
    finally:
        if prefix is not None:  # an installed build can take gigabytes: one at a time
            shutil.rmtree(prefix, ignore_errors=True)
    record = {
        "commit": commit, "subject": subject, "outcome": outcome, "code": code,
        "exit_status": exit_status, "reason": reason, "seconds": round(time.time() - started, 3),
    }
    with open(spec["log"], "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    sys.stdout.write(f"fusecli-step {commit} {outcome}: {_first_line(reason)}\n")
    sys.stdout.flush()
    return code


def main(argv):
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        with open(argv[1], encoding="utf-8") as handle:
            spec = json.load(handle)
        return step(spec)
    except Exception as error:
        sys.stderr.write(f"fusecli-step: {error}\n")
        return SKIP


if __name__ == "__main__":
    sys.exit(main(sys.argv))
