"""``python -m fusecli.bisect SOURCE [...]``: answer one oracle question in this process.

The bisect oracle runs every question in a fresh interpreter through this entry, so that a
crash, an abort or a hang of the fusion under test cannot take bisect down with it. SOURCE is a
repro (``.py``, ``.yaml``) or a question bundle written by the oracle (``.pt``). It prints
``FUSECLI_PHASE load`` and ``FUSECLI_PHASE execute`` as it goes (so that the parent knows where a
hang happened) and, last, ``FUSECLI_VERDICT {json}``. The exit status only summarizes: 0 pass,
1 a failure, 2 a bad question, 4 a missing environment. Copy the command bisect reports to
replay a step by hand.
"""

from __future__ import annotations

import argparse
import os
import sys

PHASE = "FUSECLI_PHASE"
VERDICT = "FUSECLI_VERDICT"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fusecli.bisect", description=__doc__)
    parser.add_argument("source", help="a repro (.py, .yaml) or a question bundle (.pt)")
    parser.add_argument("--index", type=int, default=0, help="which fusion of the file")
    parser.add_argument("--segments", type=int, default=None,
                        help="run only the first N segments on the executor under test")
    parser.add_argument("--rules", default="nvfuser", help="the segmenter's rule profile")
    parser.add_argument("--executor", default="auto")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rtol", type=float, default=None)
    parser.add_argument("--atol", type=float, default=None)
    parser.add_argument("--tolerance", choices=["analytic", "loose"], default="analytic")
    parser.add_argument("--no-tiebreak", action="store_true")
    parser.add_argument("--engine", choices=["fusecli", "nvfuser"], default="fusecli",
                        help="the engine under test (nvfuser: real nvFuser, nvfuser_direct)")
    parser.add_argument("--log-to", default=None,
                        help="with another engine than fusecli: write its segmenter log of "
                        "this run to this file")
    return parser


_answers: int | None = None  # a copy of descriptor 1 the script under test cannot close


def _say(prefix: str, text: str) -> None:
    line = f"\n{prefix} {text}\n".encode()  # on a line of its own after what a script wrote
    if _answers is None:
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
        return
    os.write(_answers, line)


def main(argv: list[str] | None = None) -> int:
    global _answers
    args = _parser().parse_args(argv)
    try:  # a script that closes or redirects descriptor 1 must not silence the answer
        sys.stdout.flush()
        _answers = os.dup(1)
    except OSError:
        _answers = None
    if args.engine == "nvfuser" and "torch" not in sys.modules:
        # nvFuser's wheel needs torch's symbols global: before torch loads
        sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)
    from fusecli.app.pipeline import RunOptions
    from fusecli.bisect.check import Verdict, evaluate, load_verdict
    from fusecli.bisect.questions import load_source

    options = RunOptions(
        executor=args.executor, device=args.device, seed=args.seed, rtol=args.rtol,
        atol=args.atol, float64_tiebreak=not args.no_tiebreak, rules=args.rules,
        tolerance=args.tolerance, engine=args.engine,
    )
    _say(PHASE, "load")
    try:
        fusions = load_source(args.source, device=args.device, seed=args.seed)
        if not 0 <= args.index < len(fusions):
            verdict = Verdict("invalid", message=f"the file holds {len(fusions)} fusions",
                              fusions=len(fusions))
            _say(VERDICT, verdict.to_json())
            return 2
    except Exception as error:
        verdict = load_verdict(error)
        _say(VERDICT, verdict.to_json())
        return 4 if verdict.status == "environment" else 2
    _say(PHASE, "execute")
    from dataclasses import replace

    verdict = evaluate(fusions[args.index], options, args.segments, args.log_to)
    _say(VERDICT, replace(verdict, fusions=len(fusions)).to_json())
    return {"pass": 0, "invalid": 2, "environment": 4}.get(verdict.status, 1)


if __name__ == "__main__":
    sys.exit(main())
