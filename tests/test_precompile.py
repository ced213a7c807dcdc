"""benchmarks/precompile.py: compiling in child processes survives a child that dies."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from precompile import precompile  # noqa: E402

# A stand-in child: reports each name as compiled, fails "bad" as a compile error would, and
# dies by SIGSEGV on "crash" (as Inductor's generated code has) or exits on "quit".
CHILD = r"""
import os, signal, sys
for name in sys.argv[1:]:
    if name == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if name == "quit":
        print("dying", file=sys.stderr)
        sys.exit(3)
    status = "error" if name == "bad" else "ok"
    print(f"{status}\t{name}\t" + ("no kernel" if name == "bad" else "1.5"), flush=True)
"""


def test_every_member_is_compiled_once_and_a_crash_ends_only_its_member() -> None:
    names = ["a", "crash", "b", "bad", "c", "quit", "d"]
    ahead = precompile(names, [sys.executable, "-c", CHILD], workers=1)
    assert sorted(ahead.seconds) == ["a", "b", "c", "d"]
    assert all(seconds == 1.5 for seconds in ahead.seconds.values())
    assert ahead.errors == {"bad": "no kernel"}
    assert ahead.crashed == {"crash": "signal 11", "quit": "exit 3: dying"}
    summary = ahead.summary()
    assert summary.startswith("torch.compile ahead: 4 of 7 graphs compiled")
    assert "crash: its compile ended the process (signal 11)" in summary


def test_the_shares_of_several_children_cover_every_member() -> None:
    names = [f"m{k}" for k in range(9)] + ["crash"]
    ahead = precompile(names, [sys.executable, "-c", CHILD], workers=3)
    assert sorted(ahead.seconds) == sorted(names[:-1])
    assert list(ahead.crashed) == ["crash"] and ahead.workers == 3
