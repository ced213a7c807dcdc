"""How a run judges its outputs: the float64 reference with the error analysis's bounds, and
one ``OutputDiff`` per output against the reference (``fusecli run`` and ``bisect`` alike)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusecli.errors import PipelineError

UNBOUNDED = "loose: the error analysis has no bound for this output"


def identical_outputs(actual: Sequence[Any], expected: Sequence[Any]) -> list[Any]:
    """Per output, its diff when it is eager torch's bit for bit (``identical_diff``), else
    None; all None when the output counts differ. Computed once per run: it decides whether
    the float64 reference runs, and it is those outputs' diff."""
    from fusecli.compare.diff import identical_diff

    if len(actual) != len(expected):
        return [None] * max(len(actual), len(expected))
    return [identical_diff(got, want) for got, want in zip(actual, expected)]


def float64_reference(
    fusion: Any, inputs: Sequence[Any], options: Any, identical: Sequence[Any] | None = None
) -> tuple[list[Any] | None, list[Any] | None]:
    """The float64 reference's outputs when the options need them, with the error analysis's
    per-element bounds under the analytic tolerance (``fusecli.reference.bounds``).

    With ``identical`` (``identical_outputs``) saying every output is eager torch's bit for
    bit, it has nothing to settle and is not run: on the CPU that is most runs, and it is most
    of their time and memory."""
    from fusecli.reference import run_reference

    if not options.needs_float64:
        return None, None
    if identical is not None and all(same is not None for same in identical):
        return None, None
    analytic = options.tolerance == "analytic"
    result = run_reference(
        fusion, clone_inputs(inputs), float64=True, seed=options.seed, bounds=analytic
    )
    return result.outputs, result.bounds


def diff_outputs(
    fusion: Any,
    inputs: Sequence[Any],
    actual: Sequence[Any],
    expected: Sequence[Any],
    precise: Sequence[Any] | None,
    options: Any,
    bounds: Sequence[Any] | None = None,
    identical: Sequence[Any] | None = None,
) -> list[Any]:
    """Each output against the reference, one ``OutputDiff`` per output.

    ``identical``: ``identical_outputs`` of these outputs when the caller has it (else it is
    computed here); an output that is eager torch's bit for bit passes with that diff.

    ``analytic`` (with the float64 reference ``precise`` and its ``bounds``): floating-point
    values element by element against the float64 value within the error analysis's bound, and
    against eager torch within float32 rounding except for rare rounding flips
    (``fusecli.compare.diff.bounded_mismatch``). An output the analysis has no bound for
    (``UNBOUNDED``: complex, or an op it could not re-evaluate) and every output under
    ``loose`` or with ``--rtol``/``--atol`` are compared with eager torch, tolerances by
    dtype and reduction size, float64 as tie-break. A missing or extra output is a mismatch of
    its own, never dropped by a zip.
    """
    from dataclasses import replace

    import torch

    from fusecli.compare import compare_tensors, tolerance_for
    from fusecli.compare.reductions import reduction_sizes

    if len(actual) != len(expected):  # a lost output must not pass unseen
        raise PipelineError(f"{len(actual)} outputs from the executor, {len(expected)} expected")
    if identical is None:
        identical = identical_outputs(actual, expected)
    reductions = reduction_sizes(fusion, inputs)
    wants_analytic = options.tolerance == "analytic" and options.rtol is None and (
        options.atol is None
    )
    analytic = wants_analytic and precise is not None and bounds is not None
    diffs = []
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        if not isinstance(want, torch.Tensor):  # a scalar output: fd.execute gives a 0-dim
            want = torch.as_tensor(  # tensor, the reference a Python number
                want, dtype=got.dtype if isinstance(got, torch.Tensor) else None,
                device=got.device if isinstance(got, torch.Tensor) else None,
            )
        same = identical[index]
        if same is not None:
            if not wants_analytic:  # the tolerance it would have been judged by, for the report
                same = replace(same, tolerance=tolerance_for(
                    want.dtype, reductions.get(index, 1), rtol=options.rtol, atol=options.atol
                ))
            diffs.append(same)
            continue
        reference = precise[index] if precise is not None else None
        carried = bounds[index] if analytic else None
        bounded = hasattr(carried, "hard") and isinstance(want, torch.Tensor)
        if bounded:
            tolerance = _bounded_tolerance(want, reference, carried)
            element_bounds = (carried.hard, carried.tight)
        else:
            tolerance = tolerance_for(
                want.dtype, reductions.get(index, 1), rtol=options.rtol, atol=options.atol,
                why_loose=UNBOUNDED if analytic and carried is not None else None,
            )
            element_bounds = None
        diffs.append(compare_tensors(
            got, want, tolerance=tolerance, float64_reference=reference,
            against_float64=bounded, bounds=element_bounds,
        ))
    return diffs


def _bounded_tolerance(want: Any, reference: Any, carried: Any) -> Any:
    """What the report shows for a bounded output: the largest relative hard bound."""
    import torch

    from fusecli.compare import Tolerance

    magnitude = reference.detach().to(torch.float64).abs()
    hard = carried.hard.detach().to(reference.device, torch.float64)
    finite = torch.isfinite(hard) & (magnitude > 0)
    rtol = float((hard[finite] / magnitude[finite]).max()) if bool(finite.any()) else 0.0
    unbounded = int((~torch.isfinite(hard)).sum())
    source = (
        f"{str(want.dtype).removeprefix('torch.')} per element: within the error analysis's "
        f"bound of the float64 value (largest {rtol:.2g} relative)"
        + (f", unbounded at {unbounded} elements" if unbounded else "")
        + ", and of eager torch within float32 rounding"
    )
    atol = torch.finfo(want.dtype).smallest_normal if want.is_floating_point() else 0.0
    return Tolerance(rtol, atol, source)


def clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    """Fresh copies with the same strides, for each run: executors and the reference write
    aliased outputs into their inputs."""
    from fusecli.load.inputs import clone_exact

    return list(clone_exact(list(inputs)))


def reference_inputs(fusion: Any, inputs: Sequence[Any]) -> list[Any]:
    """The inputs for the eager reference, which writes into its inputs only the outputs aliased
    to them: the inputs themselves when there are none (no copy of a large input), else fresh
    copies. The executor under test always gets copies: it is not trusted not to write."""
    if any(output.alias_input is not None for output in fusion.outputs):
        return clone_inputs(inputs)
    return list(inputs)
