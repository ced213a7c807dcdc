"""fusecli's own pipeline as an engine: its segmenter under a rule profile, its generated kernels
and the ATen fallback (``fusecli.runtime``)."""

from __future__ import annotations

from typing import Any

from fusecli.engines.base import EngineRun, EngineSegmentation, SegmentInfo
from fusecli.errors import FusecliError, InputError


class FusecliEngine:
    name = "fusecli"

    def check(self) -> None:
        return None

    def segment(self, loaded: Any, options: Any) -> EngineSegmentation:
        from fusecli.segment.segmenter import segment_fusion

        segmented = segment_fusion(loaded.fusion, loaded.inputs, profile=options.rules,
                                   keep_log=True)
        segments = [
            SegmentInfo(s.id, s.scheduler, "fusecli", tuple(e.op.value for e in s.exprs))
            for s in segmented.segments
        ]
        error = None if segmented.failure is None else "no scheduler accepts a segment"
        return EngineSegmentation(segments, segmented, "", error)

    def execute(self, loaded: Any, options: Any) -> EngineRun:
        """Segment and run on the chosen executor. fusecli's own errors are the run's error
        (their exit code kept); anything else propagates: an internal error, not a result."""
        from fusecli.load.inputs import clone_exact
        from fusecli.runtime.segmented import run_fusion

        run = EngineRun(self.name, None, list(loaded.inputs))
        try:
            segmented, result = run_fusion(
                loaded.fusion, [clone_exact(v) for v in loaded.inputs], rules=options.rules,
                executor=options.executor, seed=options.seed, strict=options.strict,
            )
        except FusecliError as error:
            if options.debug:
                raise
            if isinstance(error, InputError) and error.where is None and loaded.line is not None:
                error.where = f"{loaded.path}:{loaded.line}"  # inputs that do not fit: the call
            run.error, run.error_type = str(error), type(error).__name__
            run.failure_exit = error.exit_code
            return run
        run.segmentation = EngineSegmentation(
            [SegmentInfo(s.id, s.scheduler, s.executor, s.exprs, s.fallback)
             for s in result.segments],
            segmented,
        )
        run.outputs = list(result.outputs)
        return run
