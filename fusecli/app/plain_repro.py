"""A fusion as a plain nvfuser_direct script that checks its own outputs.

Real nvFuser is judged in a process where fusecli is nowhere: the script holds the definition,
its inputs and, for a wrong result, fusecli's float64 reference of each output with the error
bound the fusion's own roundings allow (``fusecli.reference.bounds``). It raises AssertionError
when an output has another shape or leaves its bound, so "fails the same way" can be asked of
it by running it alone: by ``fusecli bisect --engine nvfuser`` (``minimized.py``) and by a
corpus run's attribution of a wrong result.
"""

from __future__ import annotations

from typing import Any

CHECK_LIMIT = 1 << 16  # elements of an output a plain script checks against stored values


def plain_script(loaded: Any, check: Any = None, exact_limit: int | None = None) -> str:
    """``loaded`` as a plain nvfuser_direct script: the definition, exact inputs (up to
    ``exact_limit`` elements each; larger ones drawn from a seed), ``fd.execute``; with
    ``check`` (``expected_outputs``), code that raises AssertionError when an output has
    another shape or leaves its bound."""
    from fusecli.engines.nvfuser import direct_script

    script = direct_script(loaded, exact_limit)
    body = script.replace("\nfd.execute(inputs)", "\noutputs = fd.execute(inputs)")
    if check:
        body += "\n" + _check_source(check)
    return body.rstrip() + "\n"


def expected_outputs(loaded: Any, options: Any) -> list[tuple[int, Any, Any]] | None:
    """(index, float64 value, error bound) of each output, for a plain repro's own check: the
    bound fusecli's reference gives it, zero for an exact dtype (bool, integers), None where
    there is none (the check then asks for the shape alone) or the output is too large to
    store; None when the reference cannot run."""
    from fusecli.app.judge import float64_reference

    try:
        precise, bounds = float64_reference(loaded.fusion, loaded.inputs, options, None)
    except Exception:
        return None
    if precise is None:
        return None
    bounds = bounds if bounds is not None else [None] * len(precise)
    checks = []
    for index, (value, bound) in enumerate(zip(precise, bounds)):
        if not hasattr(value, "numel"):
            continue
        bound = getattr(bound, "hard", None)  # the bound around the exact value
        if bound is None and not (value.dtype.is_floating_point or value.dtype.is_complex):
            bound = 0.0  # bool and integers: exactly
        if value.numel() > CHECK_LIMIT:
            bound = None
        checks.append((index, value, bound))
    return checks or None


def _check_source(checks: list[tuple[int, Any, Any]]) -> str:
    import torch

    lines = [
        "",
        "# fusecli's float64 reference of each output, with the error bound the fusion's own",
        "# roundings allow (fusecli/reference/bounds.py); nvFuser's output must have its shape",
        "# and stay inside it",
        "def _shape(index, shape):",
        "    if tuple(outputs[index].shape) != shape:",
        "        raise AssertionError(",
        "            f'output {index}: shape {tuple(outputs[index].shape)}, expected {shape}')",
        "",
        "def _check(index, expected, bound):",
        "    got = outputs[index].detach().to('cpu', torch.float64)",
        "    bad = ~((got - expected).abs() <= bound) & ~(got.isnan() & expected.isnan())",
        "    bad &= ~((got == expected) & got.isinf())",
        "    if bad.any():",
        "        where = bad.nonzero()[0].tolist()",
        "        raise AssertionError(",
        "            f'output {index}: {int(bad.sum())} of {bad.numel()} elements outside the '",
        "            f'error bound; at {where}: got {got[tuple(where)].item()!r}, expected '",
        "            f'{expected[tuple(where)].item()!r} +- {bound[tuple(where)].item():.3g}')",
        "",
    ]
    for index, value, _ in checks:
        lines.append(f"_shape({index}, {tuple(value.shape)!r})")
    for index, value, bound in checks:
        if bound is None:
            continue
        value = value.detach().to("cpu", torch.float64)
        bound = torch.as_tensor(bound).detach().to("cpu", torch.float64).expand(value.shape)
        lines.append(f"_check({index}, {_tensor_literal(value)}, {_tensor_literal(bound)})")
    lines.append("print('outputs within fusecli\\'s error bounds')")
    return "\n".join(lines) + "\n"


def _tensor_literal(tensor: Any) -> str:
    from fusecli.load.distributions import python_number

    flat = tensor.contiguous().reshape(-1).tolist()
    values = ", ".join(python_number(float(v)) for v in flat)
    return f"torch.tensor([{values}], dtype=torch.float64).reshape({tuple(tensor.shape)!r})"
