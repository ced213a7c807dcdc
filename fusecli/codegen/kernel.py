"""What code generation hands the runtime: a kernel's source, launch and argument plan.

A ``Kernel`` is plain data: the CUDA C source of one ``extern "C"`` function, the launch
configuration chosen for the segment's actual sizes, the heuristics that chose it (as text a
person reads in ``fusecli codegen`` output), and the argument plan: which runtime value each
kernel parameter takes, in order. ``Unsupported`` is the other answer: the segment has no
generator (or uses an op or dtype the renderer lacks), and why; the runtime falls back to ATen
and shows that reason.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Scalar, TensorView


class ArgKind(enum.Enum):
    INPUT = "input"  # a segment input tensor: its data pointer
    OUTPUT = "output"  # a segment output: allocated by the runtime, its data pointer
    SCALAR = "scalar"  # a scalar value of the fusion, passed by value
    HOST_SCALAR = "host_scalar"  # a 0-dim CPU tensor input, read on the host, passed by value
    RNG_SEED = "rng_seed"  # a random op's Philox seed, 64 bits by value (see fusecli.ir.rng)
    RNG_OFFSET = "rng_offset"  # a random op's Philox offset, 64 bits by value
    WORKSPACE = "workspace"  # global scratch memory of ``nbytes`` the launch provides


@dataclass(frozen=True, slots=True)
class KernelArg:
    """One kernel parameter: its C name and type, and the runtime value that fills it.

    ``value`` is the IR value (a TensorView or Scalar; None for a workspace); ``expr`` the
    random expr whose seed or offset an RNG_SEED or RNG_OFFSET parameter carries; ``shape``
    the concrete shape of an output's buffer: its logical shape, less its expanded broadcast
    dims (size 1 there: the kernel writes each distinct value once); ``logical_shape`` the
    output's shape where that differs (else empty), to which the runtime expands the buffer
    (stride 0 along those dims, as nvFuser allocates them); ``strides`` the buffer's strides
    where the output has a stride order other than its logical one
    (``FusionGraph.output_orders``). A WORKSPACE parameter is ``nbytes`` bytes of device
    memory; with ``zeroed`` they must be zero on entry, and the kernel leaves them zero again,
    so that a launch may keep one such buffer for all its calls (a grid reduction's arrival
    counters).
    """

    kind: ArgKind
    name: str
    ctype: str
    dtype: DataType
    value: TensorView | Scalar | None
    expr: Expr | None = None
    shape: tuple[int, ...] = ()
    logical_shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()  # an output buffer's, where not contiguous (its stride order)
    nbytes: int = 0
    zeroed: bool = False


@dataclass(frozen=True, slots=True)
class Kernel:
    """One generated kernel, specialized for the sizes, strides and alignment it was made for."""

    name: str
    source: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    args: tuple[KernelArg, ...]
    heuristics: str  # the launch plan the generator made, in words
    params: str = ""  # the scheduler's heuristic parameters it was made from
    # Segment outputs the kernel does not write: the exprs (meta ops, in order) the runtime
    # evaluates after it, on ATen, to make them views of what the kernel has (codegen.views)
    views: tuple[Expr, ...] = ()

    def describe(self) -> str:
        """Launch parameters, the scheduler's parameters and the generator's plan, one line
        each, as ``fusecli codegen`` shows them."""
        return "\n".join(
            [
                f"kernel {self.name}: grid {self.grid}, block {self.block}, "
                f"shared memory {self.shared_mem} bytes",
                *([f"params: {self.params}"] if self.params else []),
                f"heuristics: {self.heuristics}",
            ]
        )


@dataclass(frozen=True, slots=True)
class Unsupported:
    """No kernel for this segment; ``reason`` says why (shown in reports and JSON).
    ``splittable``: the generator itself refused (its ops passed ``support.why_not``): a
    smaller segment may have a kernel, so the runtime may run this one as parts
    (``runtime.parts``)."""

    reason: str
    splittable: bool = False


class UnsupportedError(Exception):
    """Raised inside generation; ``generate`` turns it into an ``Unsupported`` answer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
