"""Find real nvFuser's failures: random fusions run as plain nvfuser_direct scripts.

For each seed, ``fuzz_fusion`` draws a fusion (every op family, zero-size and size-1 dims,
strided, expanded and sliced inputs); it is written twice into OUT:

- ``direct/fuzz_SEED.py``: a plain nvfuser_direct script (``fusecli convert --to direct``'s
  spelling, exact input values), run with no fusecli in the process;
- ``fusecli/fuzz_SEED.py``: the same fusion as a fusecli repro, for ``fusecli run --engine
  nvfuser`` and ``fusecli bisect --engine nvfuser``.

Each plain script runs in a process of its own (``--jobs`` at once, killed at ``--timeout``).
The summary counts pass / error / died / hang and groups errors by nvFuser's assert location;
``OUT/hunt.json`` holds every record. Run on the GPU machine with nvFuser's wheel unpacked:

    . .nvfuser/activate.sh; PYTHONPATH=.:$PYTHONPATH python3 scripts/nvfuser-hunt.py \
        --seeds 0 400 --out /tmp/hunt --jobs 12
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

PRELUDE = "import os, sys; sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)\n"


def write(seed: int, out: Path, max_ops: int) -> tuple[Path, Path] | None:
    from fusecli.bisect.random_fusion import fuzz_fusion
    from fusecli.bisect.repro import write_repro
    from fusecli.load.convert import exact_specs, to_direct

    try:
        loaded = fuzz_fusion(seed, max_ops=max_ops).loaded
        exact = replace(loaded, input_specs=exact_specs(loaded))
        direct = out / "direct" / f"fuzz_{seed}.py"
        direct.parent.mkdir(parents=True, exist_ok=True)
        direct.write_text(PRELUDE + to_direct(exact) + "\n", encoding="utf-8")
        repro, _ = write_repro(loaded, out / "fusecli", f"fuzz_{seed}", [f"fuzz seed {seed}"],
                               yaml=False)
    except Exception as error:  # the generator or the writer: say so, go on
        print(f"seed {seed}: not written: {type(error).__name__}: {error}", file=sys.stderr)
        return None
    return direct, repro


def run_plain(script: Path, timeout: float) -> dict:
    from fusecli.app.attribution import run_script
    from fusecli.engines.signature import error_signature

    run = run_script(script, timeout)
    status = "error" if run.status == "crash" else run.status
    record = {"file": str(script), "status": status, "code": run.returncode,
              "seconds": round(run.seconds, 2)}
    if status not in ("pass", "hang"):
        record["tail"] = run.stderr[-3000:]
        record["signature"] = (error_signature(run.stderr).key if status == "error"
                               else f"signal {-run.returncode}")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs=2, type=int, default=(0, 100), metavar=("FIRST", "END"))
    parser.add_argument("--max-ops", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    written = [w for s in range(*args.seeds) if (w := write(s, args.out, args.max_ops))]
    print(f"{len(written)} fusions written to {args.out}", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        records = list(pool.map(lambda w: run_plain(w[0], args.timeout), written))
    (args.out / "hunt.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
    counts = collections.Counter(r["status"] for r in records)
    print("plain nvfuser_direct:", dict(counts))
    clusters = collections.defaultdict(list)
    for record in records:
        if record["status"] != "pass":
            clusters[record.get("signature", record["status"])].append(record["file"])
    for signature, files in sorted(clusters.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(files):4d}  {signature[:160]}\n      e.g. {files[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
