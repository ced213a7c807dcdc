"""Record real nvFuser's segmentation of fusions, as goldens of nvFuser's behaviour.

Run on a GPU machine with real nvFuser (``nvfuser_direct``; see the project's notes on carrying
the published wheel), from the repository root:

    . .nvfuser/activate.sh
    NVFUSER_DUMP=segmenter_logging,segmented_fusion \\
        PYTHONPATH=. python3 scripts/record-nvfuser-logs.py fusions/ OUTDIR

For every fusion fusecli loads from the paths, the definition as fusecli prints it (nvFuser's
repro format) is executed with nvfuser_direct's ``FusionDefinition`` and ``DataType``, and
``fd.execute`` runs on the fusion's own inputs. What nvFuser prints on stdout while executing
(its segmenter log and the segmented fusion) is written to ``OUTDIR/<name>.log``, followed by
the definition it was given; ``OUTDIR/outcomes.json`` says, per fusion, ``ok`` or the error
nvFuser raised. The only translation is ``define_vector([...], dtype=)``, which the direct
frontend spells as a plain list. ``tests/golden/nvfuser/`` holds one such recording.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)  # before torch: the wheel's c10 symbols

import nvfuser_direct  # noqa: E402
import torch  # noqa: E402

from fusecli.engines.nvfuser import captured_stdout, first_line  # noqa: E402
from fusecli.load import discover, load_path  # noqa: E402


class LegacySpellings:
    """nvfuser_direct's FusionDefinition, taking the spellings fusecli prints."""

    def __init__(self, fd: object) -> None:
        self._fd = fd
        self.ops = fd.ops

    def define_vector(self, elements: list, dtype: object = None) -> list:
        return list(elements)

    def __getattr__(self, name: str) -> object:
        return getattr(self._fd, name)


def definition_of(fd: object) -> str:
    """The ``def nvfuser_fusion...(fd)`` function of fusecli's repro text."""
    text = repr(fd).split("\nwith FusionDefinition()")[0]
    return text[text.index("def nvfuser_fusion"):]


def record(loaded: object, out_dir: Path) -> str:
    body = definition_of(loaded.fd)
    namespace = {"DataType": nvfuser_direct.DataType, "FusionDefinition":
                 nvfuser_direct.FusionDefinition, "torch": torch}
    log, outcome = b"", "ok"
    try:
        exec(body, namespace)
        define = next(v for k, v in namespace.items() if k.startswith("nvfuser_fusion"))
        with nvfuser_direct.FusionDefinition() as fd:
            define(LegacySpellings(fd))
        inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in loaded.inputs]
        with captured_stdout() as sink:
            fd.execute(inputs)
            torch.cuda.synchronize()
        sink.seek(0)
        log = sink.read()
    except Exception as error:  # nvFuser's own failure is a result worth keeping
        outcome = first_line(error)
    footer = b"\n# definition given to nvfuser_direct:\n" + body.encode()
    (out_dir / f"{loaded.name}.log").write_bytes(log + footer)
    return outcome


def main(argv: list[str]) -> int:
    sources, out_dir = [Path(argv[0] if argv else "fusions")], Path(argv[1] if len(argv) > 1
                                                                     else "nvfuser-logs")
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes = {}
    for path in discover(sources):
        try:
            fusions = load_path(path, device="cuda")
        except Exception as error:
            outcomes[path.stem] = f"fusecli could not load it: {error}"
            continue
        for loaded in fusions:
            outcomes[loaded.name] = record(loaded, out_dir)
            print(f"{loaded.name}: {outcomes[loaded.name]}", flush=True)
    (out_dir / "outcomes.json").write_text(json.dumps(outcomes, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
