"""Printing a definition as nvFuser prints it: ``repr(fd)`` and ``repro_script_for(inputs)``.

The legacy format is nvFuser's (``python/nvfuser/__init__.py``, ``FusionDefinition::print``):
an optional header of versions, the imports, ``def nvfuser_fusion_idN(fd : FusionDefinition)``,
the records with inline lists, the ``with`` block, the inputs, and ``fd.execute(inputs)``.
The direct frontend's (``python/nvfuser_direct/__init__.py``) prints the definition that
``fusecli.frontend.translate`` writes from the IR, with no blank lines around it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fusecli.textsafe import one_line

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition
    from fusecli.ir.nodes import Fusion


def definition_text(fd: FusionDefinition, function_name: str | None = None) -> str:
    if function_name is None:
        function_name = (
            "nvfuser_incomplete_fusion" if fd.id() is None else f"nvfuser_fusion_id{fd.id()}"
        )
    lines = [f"def {function_name}(fd : FusionDefinition) -> None :"]
    lines += [f"    {record.text()}" for record in fd.records]
    return "\n".join(lines) + "\n"


def repro_script(
    fd: FusionDefinition,
    inputs: Sequence[Any] | None = None,
    header: Sequence[str] = (),
    module: str = "nvfuser",
) -> str:
    """A runnable script: the definition, its inputs (if given) and ``fd.execute(inputs)``.

    ``header`` (comment lines) may quote a user's names and paths: each becomes one safe line.
    """
    function_name = f"nvfuser_fusion_id{fd.id() if fd.id() is not None else 0}"
    parts = [*(f"# {one_line(line)}" for line in header)]
    parts += ["import torch", f"from {module} import FusionDefinition, DataType", ""]
    parts.append(definition_text(fd, function_name))
    parts += ["with FusionDefinition() as fd:", f"    {function_name}(fd)", ""]
    if inputs is not None:
        parts.append("inputs = [")
        parts += [f"    {input_expression(value)}," for value in inputs]
        parts += ["]", "fd.execute(inputs)"]
    return "\n".join(parts) + "\n"


def direct_repro_script(fusion: Fusion, inputs: Sequence[Any] | None = None) -> str:
    """``nvfuser_direct``'s ``repro_script_for``: the header has no nvFuser version, the inputs
    are written as ``str`` writes numbers, and floats' storage as ``torch.randn(n, ...)``."""
    from fusecli.frontend.translate import translate_fusion

    header = [line for line in version_header() if not line.startswith("nvfuser version")]
    text = "".join(f"# {line}\n" for line in header)
    text += "import torch\nfrom nvfuser_direct import FusionDefinition, DataType\n"
    text += translate_fusion(fusion)
    text += "with FusionDefinition() as fd:\n    nvfuser_fusion(fd)\n"
    if inputs is not None:
        text += "\ninputs = [\n"
        text += "".join(f"    {direct_input_expression(value)},\n" for value in inputs)
        text += "]\nfd.execute(inputs)\n"
    return text


def direct_input_expression(value: Any) -> str:
    import torch

    if not isinstance(value, torch.Tensor):
        text = str(value)  # nvfuser_direct's: str(), with inf and nan made Python
        text = re.sub(r"\binf\b", 'float("inf")', text)
        return re.sub(r"\bnan\b", 'float("nan")', text)
    if value.is_contiguous() or not value.dtype.is_floating_point:
        return input_expression(value)
    shape, strides = tuple(value.shape), tuple(value.stride())
    return (f"torch.randn({_storage_size(value)}, dtype={value.dtype}, device='cuda:0')"
            f".as_strided({shape}, {strides})")


def layout_copies(inputs: Sequence[Any]) -> list[Any]:
    """Each tensor input as a meta tensor of its dtype, shape and strides (what a repro script
    says of it, without its memory); other inputs as they are."""
    import torch

    return [
        torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="meta")
        if isinstance(v, torch.Tensor) else v
        for v in inputs
    ]


def _storage_size(value: Any) -> int:
    """Elements a strided tensor reaches: 1 + the largest offset (0 when it has none)."""
    if value.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(value.shape, value.stride()))


def version_header() -> list[str]:
    """The comment lines nvFuser's repro_script_for starts with (since nvFuser PR #2578)."""
    import torch

    from fusecli.frontend import version

    lines = ["CUDA devices:"]
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            lines.append(f" {index}: {torch.cuda.get_device_name(index)}")
    else:
        lines.append(" none (fusecli maps CUDA tensors to the CPU)")
    lines += [
        f"torch version: {torch.__version__}",
        f"cuda version: {torch.version.cuda}",
        f"nvfuser version: {version()}",
    ]
    return lines


def input_expression(value: Any) -> str:
    """Python source that makes an input like ``value``, as nvFuser's repro printer writes it."""
    import torch

    from fusecli.frontend.records import format_double

    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, int | complex):
        return repr(value)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"cannot print an input of type {type(value).__name__}")
    dtype = f"torch.{str(value.dtype).removeprefix('torch.')}"
    device = "'cuda:0'"
    shape = tuple(value.shape)
    if value.is_contiguous():
        return f"torch.testing.make_tensor({shape}, dtype={dtype}, device={device})"
    storage = _storage_size(value)
    if value.dtype.is_floating_point or value.dtype.is_complex:
        source = f"torch.randn(({storage},), dtype={dtype}, device={device})"
    else:
        high = 2 if value.dtype == torch.bool else 10
        source = f"torch.randint(0, {high}, ({storage},), dtype={dtype}, device={device})"
    return f"{source}.as_strided({shape}, {tuple(value.stride())})"
