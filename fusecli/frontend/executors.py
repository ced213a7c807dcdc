"""How an ``nvfuser_direct`` definition runs: through ``fd.fec`` or through ``fd.ke``.

- The first ``execute`` checks that the definition is one (``NotImplementedError``: "Fusion
  does not exist! ..." before any ``with FusionDefinition() as fd:``, "Fusion is empty!"
  without outputs) and makes ``fd.fec``, the definition's FusionExecutorCache
  (``caches.CompiledFusion``), which every later execute runs and which answers
  ``is_compiled(inputs)``; an ``LRUCache`` entry set by hand runs the same way.
- ``manual_execute`` compiles the whole fusion into ``fd.ke``, a ``KernelExecutor``, and runs
  it. A definition runs one way or the other: the other raises nvFuser's AssertionError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusecli.frontend.caches import CompiledFusion
from fusecli.frontend.execution import run as run_fusion
from fusecli.frontend.placement import check_kernel_outputs
from fusecli.frontend.state import DirectTensor
from fusecli.ir import nodes

NOT_DEFINED = (
    "Fusion does not exist! Use `with FusionDefinition() as fd: ...` to define a fusion."
)
EMPTY = "Fusion is empty!"


class KernelExecutor:
    """nvfuser_direct's KernelExecutor: one fusion compiled whole, run on inputs."""

    def __init__(self) -> None:
        self._fusion: nodes.Fusion | None = None

    def compile(self, fusion: nodes.Fusion, inputs: Sequence[Any] = (), *unused: Any) -> None:
        check_kernel_outputs(fusion)  # nvFuser's KernelExecutor::supported
        if not fusion.outputs:
            raise RuntimeError("No output found for this kernel, aborting.")
        self._fusion = fusion

    def is_compiled(self) -> bool:
        return self._fusion is not None

    def run(self, inputs: Sequence[Any], *unused: Any) -> list[Any]:
        if self._fusion is None:
            raise RuntimeError("Need to compile before you can run.")
        return run_fusion(None, self._fusion, list(inputs), None)


class DirectExecution:
    """The direct frontend's ``execute``, ``manual_execute`` and ``validate_definition``, for
    a ``FusionDefinition`` subclass."""

    _tensor_class = DirectTensor  # its tensors are the IR's TensorViews (``state``)

    def validate_definition(self) -> tuple[bool, str | None]:
        fusion = getattr(self, "_fusion", None)
        if fusion is None:
            return False, NOT_DEFINED
        if not fusion.outputs or not fusion.vals():
            return False, EMPTY
        return True, None

    def _ensure_defined(self) -> None:
        # nvfuser_direct has no definition() hook: a definition is made by its with-block
        if getattr(self, "_fusion", None) is None and self.fec is None:
            raise NotImplementedError(NOT_DEFINED)

    def execute(self, inputs: Sequence[Any], *, device: Any = None, **options: Any) -> list[Any]:
        assert getattr(self, "ke", None) is None, (
            "KernelExecutor already exists! Use manual_execute() to execute the fusion."
        )
        if self.fec is None:
            valid, message = self.validate_definition()
            if not valid:
                raise NotImplementedError(message)
            self.fec = CompiledFusion(self._fusion)
        outputs = super().execute(inputs, device=device, **options)
        self.fec.ran(inputs)
        return outputs

    def manual_execute(self, inputs: Sequence[Any], heuristic_params: Any = None) -> list[Any]:
        assert self.fec is None, (
            "FusionExecutorCache already exists! Use execute() to execute the fusion."
        )
        valid, message = self.validate_definition()
        if not valid:
            raise NotImplementedError(message)
        if getattr(self, "ke", None) is None:
            self.ke = KernelExecutor()
        if not self.ke.is_compiled():
            self.ke.compile(self._fusion, inputs)
        return run_fusion(self, self._fusion, list(inputs), None)
