"""``--compile``'s graphs compiled ahead, in child processes: in parallel, and crash-safe.

Inductor keeps what it compiles on disk (its FX graph cache and Triton's kernel cache), so a
graph compiled in one process is loaded, not compiled, in another. Compiling a hundred
population members one after the other in the timed run costs minutes of one core; here
``K`` child processes (``--compile-workers``) each draw the same population again (the same
members for the same seed, minimum size and torch version), compile their share exactly as the
timed run will (``vs_nvfuser.compiled_graph`` of the reference on the member's inputs, which
also calls the compiled graph once) and report each member as they go. The timed run then
compiles every member itself, loading what is cached.

A graph whose compile or first call kills its process (Inductor's generated code has
segfaulted on strided inputs) would end the whole timed run; here it ends one child. The
member it was compiling is recorded as crashed, a new child takes the rest of the share, and
the timed run does not compile that member: its row says why.

As a script (what the children run): ``precompile.py N SEED MIN_ELEMENTS DEVICE NAME...``
prints ``ok<TAB>name<TAB>seconds`` or ``error<TAB>name<TAB>message`` per member, in order.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Ahead:
    """What compiling ahead found: seconds per member compiled, errors, crashed members."""

    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    crashed: dict[str, str] = field(default_factory=dict)  # member -> how its process ended
    wall: float = 0.0
    workers: int = 0

    def summary(self) -> str:
        count = len(self.seconds) + len(self.errors) + len(self.crashed)
        median = (f", median {statistics.median(self.seconds.values()):.1f} s each"
                  if self.seconds else "")
        line = (f"torch.compile ahead: {len(self.seconds)} of {count} graphs compiled in "
                f"{self.wall:.0f} s by {self.workers} processes{median}")
        return line + "".join(f"\n    {name}: its compile ended the process ({how})"
                              for name, how in self.crashed.items())


def child_command(population: int, seed: int, min_elements: int,
                  device: str = "cuda") -> list[str]:
    """The command of a child compiling members of that population (names follow it)."""
    return [sys.executable, __file__, str(population), str(seed), str(min_elements), device]


def precompile(names: list[str], command: list[str], workers: int) -> Ahead:
    """Run ``command`` + a share of ``names`` in each of ``workers`` child processes at once,
    again for the rest of a share where one dies."""
    ahead, lock = Ahead(workers=workers), threading.Lock()
    started = time.perf_counter()

    def share(remaining: list[str]) -> None:
        while remaining:
            child = subprocess.run(command + remaining, capture_output=True, text=True)
            for line in child.stdout.splitlines():
                status, name, detail = (line.split("\t", 2) + ["", ""])[:3]
                if name not in remaining:
                    continue
                remaining.remove(name)
                with lock:
                    if status == "ok":
                        ahead.seconds[name] = float(detail)
                    else:
                        ahead.errors[name] = detail
            if child.returncode != 0 and remaining:  # it died compiling its next member
                how = (f"signal {-child.returncode}" if child.returncode < 0
                       else f"exit {child.returncode}: {_last_line(child.stderr)}")
                with lock:
                    ahead.crashed[remaining.pop(0)] = how

    threads = [threading.Thread(target=share, args=(names[k::workers],))
               for k in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ahead.wall = time.perf_counter() - started
    return ahead


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:100] if lines else "no message"


def _child(population: int, seed: int, min_elements: int, device: str,
           names: list[str]) -> None:
    import torch
    import torch._inductor.config
    from population import draw
    from vs_nvfuser import compiled_graph

    from fusecli.reference import run_reference

    torch._inductor.config.compile_threads = 2  # the children share the host's cores
    members = {m.name: m for m in draw(population, seed, min_elements)}
    for name in names:
        member, started = members[name], time.perf_counter()
        try:
            inputs = member.make_inputs(device)

            def eager(*tensors, fusion=member.fd.fusion):
                return run_reference(fusion, list(tensors)).outputs

            compiled_graph(eager, inputs)
            print(f"ok\t{name}\t{time.perf_counter() - started:.3f}", flush=True)
        except Exception as error:  # the timed run meets it again and notes it in the row
            text = (str(error).strip().splitlines() or [type(error).__name__])[0][:100]
            print(f"error\t{name}\t{text}", flush=True)
        if device == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:])
