"""``nvfuser_direct.FusionDefinition``: the legacy definition, printed as the direct frontend
prints it.

nvFuser's direct frontend keeps no records: ``repr(fd)`` translates the fusion back into a
definition (``fusecli.frontend.translate``), and ``repro_script_for`` wraps that in its own
script template (``fusecli.frontend.repro.direct_repro_script``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusecli.frontend.definition import FusionDefinition
from fusecli.frontend.executors import DirectExecution
from fusecli.frontend.repro import direct_repro_script
from fusecli.frontend.translate import translate_fusion
from fusecli.ir import nodes


class DirectFusionDefinition(DirectExecution, FusionDefinition):
    def __repr__(self) -> str:
        return translate_fusion(self._fusion_to_print())

    __str__ = __repr__

    def repro_script_for(self, inputs: Sequence[Any] | None = None) -> str:
        return direct_repro_script(self._fusion_to_print(), inputs)

    def _fusion_to_print(self) -> nodes.Fusion:
        # while defining, what is defined so far, as nvFuser translates its unfinished Fusion
        return self._builder.build() if self._defining else self.fusion
