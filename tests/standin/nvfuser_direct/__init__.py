"""A stand-in for real nvFuser's ``nvfuser_direct``, for tests on machines without a GPU.

It is fusecli's frontend (``FusionDefinition``, ``DataType``) whose ``execute`` fails the way
real nvFuser fails, where ``FUSECLI_STANDIN_FAULTS`` says so: rules separated by ``;``, each
``KIND:OP[+OP...]``, that fire when one segment of the fusion (as fusecli's segmenter cuts it)
holds every OP named:

- ``assert``: raises nvFuser's INTERNAL ASSERT text (its location and message, a
  ``Exception raised from`` line and frames), prefixed ``Error from segmentation group N:``
  as nvFuser's parallel compilation does;
- ``noscheduler``: the segmenter's assert, "Can not find a scheduler to schedule fusion
  segment";
- ``wrong``: returns outputs computed with OP wrong (fusecli's fault injection);
- ``shape``: returns every output of rank 1 or more cut to length 1 in its last dimension, as
  nvFuser 0.2.36 drops an expand after a slice of a broadcast dimension;
- ``dead``: the assert, where every OP named is defined by an op no output reads (dead code,
  which nvFuser keeps in its Fusion: a failure can need it);
- ``strided``: the assert, where one segment holds every OP named and one of them reads,
  directly or through views (reshape, permute, broadcast, expand, squeeze), a fusion input
  whose strides leave gaps (a view of a wider buffer), as nvFuser's checks of an input's
  allocation strides do: a failure that needs an input's layout, not the views of it;
- ``hang``: never returns;
- ``segfault``: the process dies of SIGSEGV;
- ``forked``: raises a CUDA initialization error in a child forked from a preloaded
  interpreter (one started with ``python -c``, as bisect's zygotes are), as a native library
  that does not survive a fork would; a new interpreter runs on.

``FUSECLI_STANDIN_STOP=PIDFILE:N`` sends SIGTERM, once, to the process whose pid PIDFILE holds
when a fusion of at most N exprs executes: a CI job's time limit arriving while bisect
minimizes.

With ``NVFUSER_DUMP`` naming ``segmented_fusion`` it prints fusecli's segmentation in nvFuser's
log format on file descriptor 1, as nvFuser does. Tests put ``tests/standin`` first on
``PYTHONPATH``; nothing outside the tests imports it.

Like nvfuser_direct 0.2.36 it rejects two legacy spellings fusecli's own frontend takes:
``add_output(T, stride_order=...)`` (its ``add_output`` takes an output and an optional alias
input; the direct spelling is ``fd.ops.stride_order``), and a contiguity other than None on a
broadcast (size-1) dimension (nvFuser's TensorDomain check, ``csrc/ir/nodes.cpp``).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from fusecli.frontend import DataType  # noqa: F401  (the module's API)
from fusecli.frontend import FusionDefinition as _FusecliDefinition
from fusecli.frontend.binding import incompatible
from fusecli.frontend.descriptors import parse_define_tensor
from fusecli.frontend.state import Tensor

__version__ = "0.0.0+standin"
FAULTS = "FUSECLI_STANDIN_FAULTS"
LOCATIONS = {
    "assert": ("csrc/scheduler/tools/standin_analysis.cpp", 187, "checkCoverage",
               "Expected covered_ids.size() == {n} . Output T{t}_g_float is not covered by "
               "reference T{r}_l_float"),
    "noscheduler": ("csrc/fusion_segmenter.cpp", 4015, "deriveSchedulerType",
                    "Expected scheduler_type != SchedulerType::None . Can not find a "
                    "scheduler to schedule fusion segment"),
}
LOCATIONS["strided"] = LOCATIONS["assert"]


def _rules() -> list[tuple[str, frozenset[str]]]:
    rules = []
    for item in os.environ.get(FAULTS, "").split(";"):
        if ":" in item:
            kind, ops = item.split(":", 1)
            rules.append((kind.strip(), frozenset(o.strip() for o in ops.split("+") if o)))
    return rules


def _assert_text(kind: str, group: int, numbers: int) -> str:
    path, line, function, message = LOCATIONS[kind]
    words = message.format(n=numbers, t=numbers + 3, r=numbers + 1)
    where = f"/workspace/Fuser/{path}:{line}"
    return (
        f"Error from segmentation group {group}:  INTERNAL ASSERT FAILED at {where}, please "
        "report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues. "
        f"\n{words}\nException raised from {function} at {where} (most recent call first):\n"
        "frame #0: nvfuser::nvfCheckFail(char const*, char const*, long, std::string const&) "
        "+ 0xc2 (0x7f455b32d4a6 in libnvfuser_codegen.so)\n"
    )


class FusionDefinition(_FusecliDefinition):
    def define_tensor(self, *args: Any, **kwargs: Any) -> Any:
        spec = parse_define_tensor(args, kwargs)
        shape, contiguity, order = spec["shape"], spec["contiguity"], spec["stride_order"]
        rank = len(shape)
        for dim, size in enumerate(shape):
            position = rank - 1 - order[dim] if order else dim
            if size == 1 and position < len(contiguity) and contiguity[position] is not None:
                raise RuntimeError(
                    "Expected expect_null != contiguity.at(i).has_value() . The contiguity of a "
                    "broadcast/reduction dimension must be None. The contiguity of a "
                    "non-broadcast/reduction dimension must be true/false. "
                    f"alloation_domain=[shape {shape}], contiguity={contiguity}"
                )
        return super().define_tensor(*args, **kwargs)

    def add_output(self, output: Any, *args: Any, **kwargs: Any) -> None:
        alias = args[0] if args else kwargs.get("alias_input")
        if len(args) > 1 or set(kwargs) - {"alias_input"} or not (
            alias is None or isinstance(alias, Tensor)
        ):
            raise incompatible(
                "add_output",
                "The following argument types are supported:\n"
                "    1. (self, output: Scalar) -> None\n"
                "    2. (self, output: Tensor, alias_input: Optional[Tensor] = None) -> None\n"
                f"Invoked with: {output!r}, {args!r}, {kwargs!r}",
            )
        super().add_output(output, *args, **kwargs)

    def execute(self, inputs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        from fusecli.runtime.bind import flatten_inputs
        from fusecli.segment.segmenter import segment_fusion

        self._ensure_defined()
        fusion = self.fusion
        flat = list(flatten_inputs(list(inputs)))
        segmented = segment_fusion(fusion, flat, keep_log=True)
        _maybe_stop(len(fusion.exprs))
        if "segmented_fusion" in os.environ.get("NVFUSER_DUMP", ""):
            from fusecli.report.segmentation_view import nvfuser_log

            os.write(1, nvfuser_log(segmented).encode())
        for kind, ops in _rules():
            if kind == "dead" and ops <= _dead_ops(fusion):
                raise RuntimeError(_assert_text("assert", 0, len(fusion.exprs)))
            group = next((s for s in segmented.segments
                          if ops <= {e.op.value for e in s.exprs}), None)
            if group is None or (kind == "strided" and not _reads_gapped_input(
                    fusion, flat, [e for e in group.exprs if e.op.value in ops])):
                continue
            if kind in LOCATIONS:
                raise RuntimeError(_assert_text(kind, group.id, len(fusion.exprs)))
            if kind == "hang":
                while True:
                    time.sleep(1)
            if kind == "segfault":
                os.kill(os.getpid(), signal.SIGSEGV)
            if kind == "forked" and sys.argv[:1] == ["-c"]:
                raise RuntimeError("CUDA error: initialization error")
            if kind == "wrong":
                return _with_fault(super(), inputs, sorted(ops))
            if kind == "shape":
                outputs = super().execute(inputs, *args, **kwargs)
                return [o[..., :1] if getattr(o, "ndim", 0) else o for o in outputs]
        return super().execute(inputs, *args, **kwargs)


def _maybe_stop(exprs: int) -> None:
    """``FUSECLI_STANDIN_STOP`` (above)."""
    stop = os.environ.get("FUSECLI_STANDIN_STOP")
    if not stop:
        return
    pidfile, _, most = stop.rpartition(":")
    sent = pidfile + ".sent"
    if exprs <= int(most) and os.path.exists(pidfile) and not os.path.exists(sent):
        open(sent, "w").close()
        with open(pidfile) as handle:
            os.kill(int(handle.read()), signal.SIGTERM)


def _dead_ops(fusion: Any) -> set[str]:
    """The ops of the exprs none of the fusion's outputs needs."""
    needed = {o.value.uid for o in fusion.outputs}
    dead = set()
    for expr in reversed(fusion.exprs):
        if any(o.uid in needed for o in expr.outputs):
            needed.update(v.uid for v in expr.inputs)
        else:
            dead.add(expr.op.value)
    return dead


_VIEWS = frozenset({"reshape", "permute", "broadcast", "expand", "squeeze"})


def _reads_gapped_input(fusion: Any, flat: list[Any], exprs: list[Any]) -> bool:
    """Whether one of ``exprs`` reads, directly or through view ops, an input whose strides
    leave gaps (``strided`` above)."""
    given = {v.uid: x for v, x in zip(fusion.inputs, flat)}
    producer = {o.uid: e for e in fusion.exprs for o in e.outputs}
    for expr in exprs:
        for value in expr.inputs:
            while value.uid in producer and producer[value.uid].op.value in _VIEWS:
                value = producer[value.uid].inputs[0]
            if _gapped(given.get(value.uid)):
                return True
    return False


def _gapped(tensor: Any) -> bool:
    """A tensor whose elements do not fill the span of storage its strides reach (dimensions
    of size 1 and stride-0 expanded ones aside)."""
    if not hasattr(tensor, "stride"):
        return False
    dims = sorted(((stride, size) for size, stride in zip(tensor.shape, tensor.stride())
                   if size > 1 and stride != 0), reverse=True)
    expected = 1
    for stride, size in reversed(dims):
        if stride != expected:
            return True
        expected = stride * size
    return False


def _with_fault(parent: Any, inputs: Any, ops: list[str]) -> list[Any]:
    """The outputs with ``ops`` computed wrongly (fusecli's fault injection, this call only)."""
    import warnings

    saved = os.environ.get("FUSECLI_INJECT_FAULT")
    os.environ["FUSECLI_INJECT_FAULT"] = ",".join(ops)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return parent.execute(inputs)
    finally:
        if saved is None:
            os.environ.pop("FUSECLI_INJECT_FAULT", None)
        else:
            os.environ["FUSECLI_INJECT_FAULT"] = saved
