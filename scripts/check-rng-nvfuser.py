"""fusecli's random draws against real nvFuser's, for explicit seeds and offsets.

On the GPU machine, with nvFuser's wheel unpacked (``. .nvfuser/activate.sh``):

    PYTHONPATH=.:$PYTHONPATH python3 scripts/check-rng-nvfuser.py

Each case defines ``uniform`` or ``normal`` with ``rng_seed`` and ``rng_offset`` given as
scalar inputs (nvfuser_direct's ``rand_like``/``randn_like`` take no seed; fusecli draws them
with the same code, from the tensor's shape), runs it through fusecli's ``fd.execute`` (a generated
kernel, Philox in the kernel) and through nvfuser_direct (the same definition, translated as
``--engine nvfuser`` translates it), and counts the elements whose bits differ. fusecli's
contract (fusecli/ir/rng.py): uniform draws bit-exact, normals within a few ulps. One line per
case; the exit status is 1 where a uniform differs or a normal is off by more than 8 ulps.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)  # before torch: the nvFuser wheel needs it

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from vs_nvfuser import nvfuser_definition, nvfuser_module  # noqa: E402

from fusecli.frontend import DataType, FusionDefinition  # noqa: E402

DTYPES = {DataType.Float: torch.float32, DataType.BFloat16: torch.bfloat16,
          DataType.Half: torch.float16, DataType.Double: torch.float64}


def define(kind: str, dtype: DataType, shape: list[int]):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), contiguity=[True] * len(shape),
                             dtype=dtype)
        seed = fd.define_scalar(dtype=DataType.Int)
        offset = fd.define_scalar(dtype=DataType.Int)
        first, second = (-2.0, 3.0) if kind == "uniform" else (1.0, 2.5)
        out = getattr(fd.ops, kind)(fd.define_scalar(first), fd.define_scalar(second),
                                    fd.ops.shape(x), rng_seed=seed, rng_offset=offset,
                                    dtype=dtype)
        fd.add_output(out)
    return fd


def main() -> int:
    nvfuser, missing = nvfuser_module()
    if nvfuser is None:
        print(f"check-rng-nvfuser: nvfuser_direct not available ({missing})")
        return 4
    failed = 0
    for kind in ("uniform", "normal"):
        for dtype, torch_dtype in DTYPES.items():
            for seed, offset, shape in ((0, 0, [1031]), (2**40 + 7, 12, [33, 257])):
                fd = define(kind, dtype, shape)
                x = torch.zeros(shape, device="cuda", dtype=torch_dtype)
                inputs = [x, seed, offset]
                ours = fd.execute(inputs)[0]
                theirs = nvfuser_definition(fd, kind, inputs, nvfuser).execute(inputs)[0]
                differ = int((ours != theirs).sum())
                scale = torch.finfo(torch_dtype).eps * theirs.double().abs().clamp(min=1.0)
                worst = float(((ours.double() - theirs.double()).abs() / scale).max())
                exact = kind == "uniform"
                bad = differ > 0 if exact else worst > 8
                failed += bad
                print(f"{'FAIL' if bad else 'ok  '} {kind:<10} {str(torch_dtype):<15} "
                      f"seed {seed:<14} offset {offset:<3} {differ:>6} of {x.numel()} differ, "
                      f"worst {worst:.1f} ulp")
    print(f"check-rng-nvfuser: {failed} case(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
