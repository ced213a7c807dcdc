"""A repro that calls ``fd.execute`` 100 times on a 500 MB input, through ``fusecli run``.

Real repros warm up and time a fusion in a loop; fusecli must check it once (one record per
fusion and input signature), without copying the input per call, in seconds and a few times the
input's memory. This writes such a script (a float32 input of ``--mb`` MB, a pointwise chain and
a row sum, executed ``--calls`` times), runs ``fusecli run`` on it in a child process, and prints
the wall time, the child's peak resident memory, and the number of fusion records.

    python benchmarks/repeated_execute.py                 # 500 MB, 100 calls
    python benchmarks/repeated_execute.py --mb 64 --calls 10
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                          is_cpu=False)
    T1 = fd.ops.mul(T0, T0)
    S2 = fd.define_scalar(2.0, dtype=DataType.Double)
    T3 = fd.ops.add(T1, S2)
    T4 = fd.ops.sum(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T3)
    fd.add_output(T4)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.randn(({rows}, 16384), dtype=torch.float32, device='cuda:0')]
for _ in range(5):
    fd.execute(inputs)  # warm-up
torch.cuda.synchronize()
start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)
start.record()
for _ in range({timed}):
    out = fd.execute(inputs)
end.record()
torch.cuda.synchronize()
print(start.elapsed_time(end) / {timed}, "ms per call")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500, help="input size in MB (float32)")
    parser.add_argument("--calls", type=int, default=100, help="fd.execute calls in all")
    args = parser.parse_args()
    rows = max(1, args.mb * 2**20 // (16384 * 4))
    with tempfile.TemporaryDirectory(prefix="fusecli-repeated-") as folder:
        path = Path(folder) / "repeated_execute.py"
        path.write_text(SCRIPT.format(rows=rows, timed=max(1, args.calls - 5)), encoding="utf-8")
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "fusecli", "run", str(path), "--json"],
            capture_output=True, text=True, check=False,
        )
        seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KB
    if result.returncode not in (0, 1):
        sys.exit(f"fusecli run failed (exit {result.returncode}): {result.stderr.strip()}")
    fusions = json.loads(result.stdout)["fusions"]
    statuses = ", ".join(sorted({f["status"] for f in fusions}))
    input_mb = rows * 16384 * 4 / 2**20
    print(f"input            {input_mb:.0f} MB float32 [{rows}, 16384], {args.calls} calls")
    print(f"records          {len(fusions)} ({statuses})")
    print(f"wall             {seconds:.1f} s  (fusecli run, start to exit)")
    print(f"peak memory      {peak_mb:.0f} MB  ({peak_mb / input_mb:.1f}x the input)")


if __name__ == "__main__":
    main()
