"""Closing the pool of preloaded interpreters that bisect questions fork from
(``fusecli.bisect.fresh``): every zygote is told to exit before any is waited for, and all
share one deadline, so a pool of N exits in about one interpreter's exit time, not N."""

from __future__ import annotations

import subprocess

from fusecli.bisect import fresh


class _Stdin:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name, self.closed = log, name, False

    def close(self) -> None:
        self.closed = True
        self.log.append(f"release {self.name}")


class _Process:
    """A zygote's process that exits once its input is closed; ``stuck`` never does."""

    def __init__(self, log: list[str], name: str, stuck: bool = False) -> None:
        self.log, self.name, self.stuck = log, name, stuck
        self.stdin = _Stdin(log, name)
        self.killed = False

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        self.log.append(f"wait {self.name}")
        if self.stuck and not self.killed:
            raise subprocess.TimeoutExpired("zygote", timeout or 0)
        return 0

    def kill(self) -> None:
        self.killed = True
        self.log.append(f"kill {self.name}")


def _pool(log: list[str], names: str, stuck: str = "") -> fresh.Zygotes:
    pool = fresh.Zygotes()
    for name in names:
        zygote = fresh.Zygote.__new__(fresh.Zygote)  # no interpreter started
        zygote.process = _Process(log, name, stuck=name in stuck)
        pool.started.append(zygote)
    return pool


def test_every_zygote_is_told_to_exit_before_any_is_waited_for() -> None:
    log: list[str] = []
    _pool(log, "abcd").close()
    assert log[:4] == ["release a", "release b", "release c", "release d"]
    assert log[4:] == ["wait a", "wait b", "wait c", "wait d"]


def test_a_zygote_that_does_not_exit_is_killed_and_the_rest_still_close(monkeypatch) -> None:
    monkeypatch.setattr(fresh, "CLOSE_SECONDS", 0.0)
    log: list[str] = []
    pool = _pool(log, "abc", stuck="b")
    pool.close()
    assert "kill b" in log and "kill a" not in log and "kill c" not in log
    assert log.index("kill b") < log.index("wait c") and not pool.started
