"""What ``fd.execute`` does with its options, and how it reports inputs that do not fit.

- ``_enable_options`` / ``_disable_options`` name nvFuser's NVFUSER_ENABLE / NVFUSER_DISABLE
  switches; an unknown name is an error, as in nvFuser. ``fuse_matmul`` and
  ``matmul_expr_eval`` change how fusecli segments (``fusecli.segment.rules.Switches``); the
  others change nothing fusecli computes.
- ``capture_debug_output=True`` keeps what the run printed for ``fd.debug_output()``: fusecli
  prints nothing while executing, so that is an empty string.
- ``save_repro_inputs=True`` keeps the inputs' layouts (``repro.layout_copies``) for
  ``fd.last_repro_script()``.
- An input that does not fit its definition raises nvFuser's message (``binding_message``):
  "Expected input 0, T0_g_float[iS0{i0}], to be an at::Tensor but got scalar 2".
- Unseeded random ops draw from the CUDA generator's state, as nvFuser's do
  (``fusecli.frontend.generator``), where the run goes straight to the executors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fusecli.errors import InputError
from fusecli.frontend import session
from fusecli.frontend.generator import seeded_variant
from fusecli.frontend.placement import check_kernel_outputs
from fusecli.ir import dtype as dt
from fusecli.ir import nodes
from fusecli.runtime.segmented import warm_entry
from fusecli.segment.rules import Switches

# nvFuser's option names (csrc/options.cpp), today's and those of the legacy frontend's time.
ENABLE_OPTIONS = frozenset("""
    compile_to_sass cutlass_scheduler fast_math fuse_matmul fuse_multiple_matmuls host_ir_jit
    host_ir_lowering id_model id_model_extra_validation infer_contiguity insert_resharding_after
    io_to_lower_precision kernel_db kernel_debug kernel_lineinfo kernel_profile memory_promotion
    multicast_protocol p2p_protocol p2p_transport parallel_serde reuse_zeroed_memory
    static_fusion_count tma_inner_persistent tma_pointwise tma_reduction wait_debugger
    warn_register_spill ws_normalization
""".split())
DISABLE_OPTIONS = frozenset("""
    compile_to_sass contig_indexing expr_simplify fallback fma greedy_scheduler
    grouped_grid_welford_outer_opt index_hoist infer_contiguity kernel_reuse magic_zero
    matmul_expr_eval multidevice nvrtc_caching nvtx parallel_compile predicate_elimination
    python_inline_definitions resize_scheduler reuse_mismatched_type_registers var_name_remapping
    welford_vectorization
""".split())


@dataclass(frozen=True, slots=True)
class ExecuteOptions:
    print_repro: bool = False
    save_repro_inputs: bool = False
    capture_debug_output: bool = False
    switches: Switches | None = None  # None: nvFuser's defaults

    @staticmethod
    def parse(options: dict[str, Any]) -> ExecuteOptions:
        enable = list(options.get("_enable_options") or ())
        disable = list(options.get("_disable_options") or ())
        for name in enable:
            if name not in ENABLE_OPTIONS:
                raise RuntimeError(f"Unrecognized enable_option: {name}")
        for name in disable:
            if name not in DISABLE_OPTIONS:
                raise RuntimeError(f"Unrecognized disable_option: {name}")
        switches = None
        if "fuse_matmul" in enable or "matmul_expr_eval" in disable:
            switches = Switches(fuse_matmul="fuse_matmul" in enable,
                                matmul_expr_eval="matmul_expr_eval" not in disable)
        return ExecuteOptions(
            print_repro=bool(options.get("print_repro")),
            save_repro_inputs=bool(options.get("save_repro_inputs")),
            capture_debug_output=bool(options.get("capture_debug_output")),
            switches=switches,
        )


def run(fd: Any, fusion: nodes.Fusion, inputs: list[Any], device: Any,
        switches: Switches | None = None) -> list[Any]:
    """Run ``fusion`` (``fd``'s, or no definition's) as the session says, with nvFuser's
    checks and messages. The usual call (no switches, nobody listening, a fusion that passed
    the checks once and has no unseeded random op) goes straight to the warm path: a warm
    call's host time is what the device waits for."""
    try:
        if switches is None and fusion.memo.get("runs_plain"):
            current = session.current()
            if not current.listening and current.run_executes:  # session.runs_directly
                if fd is not None:
                    fd._last_seeds = None
                call = fusion.memo.get("warm_call") or warm_entry(fusion)  # segmented.execute
                return call(inputs, current.rules, current.executor, device)
        return _checked_run(fd, fusion, inputs, device, switches)
    except InputError as error:
        message = binding_message(fusion, inputs)
        if message is None:
            raise
        raise InputError(message) from error


def _checked_run(fd: Any, fusion: nodes.Fusion, inputs: list[Any], device: Any,
                 switches: Switches | None) -> list[Any]:
    check_kernel_outputs(fusion)
    run_fusion, run_inputs = fusion, inputs
    variant = seeded_variant(fusion)
    fusion.memo["runs_plain"] = variant is None  # the checks passed: the same every call
    if (variant is not None and session.runs_directly(fd)
            and len(nodes.flatten_inputs(inputs)) == len(fusion.inputs)):
        run_fusion, run_inputs = variant.fusion, variant.inputs(inputs)
    if fd is not None:  # what validate() compares against: the seeds drawn (no tensors kept)
        fd._last_seeds = run_inputs[len(inputs):] if run_fusion is not fusion else None
    return session.run(fd, run_fusion, run_inputs, device, switches)


# ---------------------------------------------------------------------------------------------
# nvFuser's messages for inputs that do not fit (csrc/expr_evaluator.cpp)
# ---------------------------------------------------------------------------------------------


def binding_message(fusion: nodes.Fusion, inputs: Sequence[Any]) -> str | None:
    """nvFuser's message for the first input whose kind, rank or dtype does not fit; None
    where each does (the mismatch is one fusecli's own message says better: a count, a size,
    strides)."""
    import torch

    from fusecli.ir.printer import Namer, ValuePrinter, fusion_global_uids

    flat = nodes.flatten_inputs(list(inputs))
    if len(flat) != len(fusion.inputs):
        return None
    printer = ValuePrinter(Namer(fusion), fusion_global_uids(fusion))
    for index, (definition, value) in enumerate(zip(fusion.inputs, flat)):
        where = f"Expected input {index}, {printer.value(definition)}, "
        is_tensor = isinstance(value, torch.Tensor)
        if isinstance(definition, nodes.TensorView):
            if not is_tensor:
                return f"{where}to be an at::Tensor but got scalar {_polymorphic(value)}"
            if value.dim() != definition.ndim:
                return (f"{where}to be bound to a tensor of rank {definition.ndim}, "
                        f"but got a tensor of rank {value.dim()}")
            if value.dtype != dt.to_torch(definition.dtype):
                return (f"{where}to be bound to a tensor of dtype {dt.ir_name(definition.dtype)}"
                        f", but got a tensor of dtype {_torch_dtype_name(value.dtype)}")
        elif is_tensor and value.dim() != 0:
            return (f"{where}to be a scalar but got {_torch_dtype_name(value.dtype)} tensor of "
                    f"rank {value.dim()}")
        elif not is_tensor and not _compatible(value, definition.dtype):
            return (f"Scalar value {_polymorphic(value)} is not compatible with the expected "
                    f"data type: {dt.ir_name(definition.dtype)}.")
    return None


def _torch_dtype_name(dtype: Any) -> str:
    try:
        return dt.ir_name(dt.from_torch(dtype))
    except (KeyError, ValueError):
        return str(dtype).removeprefix("torch.")


def _compatible(value: Any, dtype: dt.DataType) -> bool:
    """nvFuser's ``isCompatibleDataType`` between a Python number's dtype and ``dtype``, as
    lenient as fusecli's binding (an int where a float goes, a bool where an int goes)."""
    if isinstance(value, complex):
        return dt.is_complex(dtype)
    if isinstance(value, float):
        return dt.is_floating(dtype) or dt.is_complex(dtype)
    return isinstance(value, bool | int)


def _polymorphic(value: Any) -> str:
    """A number as C++ streams print nvFuser's PolymorphicValue: ``2``, ``0.5``, ``(2,1)``."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, complex):
        return f"({format(value.real, 'g')},{format(value.imag, 'g')})"
    return str(value)
