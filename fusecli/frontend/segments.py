"""Legacy ``fd.segment(inputs)``: the definition cut as execution cuts it, one definition each.

nvFuser segments the fusion for ``inputs`` and writes each segment back as a
``FusionDefinition`` of its own. With one segment it returns ``[]``; otherwise it returns
the segments' definitions in run order and keeps, on ``fd``:

- ``segments``: the same list;
- ``segment_index_space_maps``: per segment definition, a dict from the state index of each
  of its inputs and outputs to the state index of the same value in ``fd``;
- ``map_value_to_last_used_segment``: per state index of ``fd`` that a segment reads, the
  last segment that reads it.

A segment's definition is its exprs written as ``nvfuser_direct`` writes a fusion
(``fusecli.frontend.translate``) and replayed: values computed by an earlier segment become
inputs, contiguous as nvFuser allocates them.
"""

from __future__ import annotations

from typing import Any

from fusecli.errors import PipelineError
from fusecli.frontend.definition import FusionDefinition
from fusecli.frontend.descriptors import expand_contiguity
from fusecli.frontend.translate import translate_fusion
from fusecli.ir import nodes
from fusecli.ir.dtype import DataType
from fusecli.segment.segmenter import segment_fusion


class SegmentDefinition(FusionDefinition):
    """A segment's definition. An intermediate value that became one of its inputs is
    allocated contiguous, as nvFuser allocates it: its ``define_tensor`` (written with no
    contiguity, as the IR keeps none for intermediates) is contiguous."""

    def define_tensor(self, *args: Any, **kwargs: Any):
        if kwargs.get("contiguity") == [] and kwargs.get("shape"):
            kwargs["contiguity"] = expand_contiguity(kwargs["shape"], [], True)
        return super().define_tensor(*args, **kwargs)


def segment_definitions(fd: FusionDefinition, inputs: list[Any]) -> list[FusionDefinition]:
    segmented = segment_fusion(fd.fusion, nodes.flatten_inputs(inputs))
    if segmented.failure is not None:
        raise PipelineError("Can not find a scheduler to schedule fusion segment")
    if len(segmented.segments) == 1:
        return []
    index_of = {state.val.uid: state.index for state in fd._states}
    fd.segments, fd.segment_index_space_maps, fd.map_value_to_last_used_segment = [], {}, {}
    for number, segment in enumerate(segmented.segments):
        part = _segment_fusion(segment)
        segment_fd = _replayed(part)
        space_map = {}
        for state, value in zip(segment_fd._input_states, part.inputs, strict=True):
            if value.uid in index_of:
                space_map[state.index] = index_of[value.uid]
                fd.map_value_to_last_used_segment[index_of[value.uid]] = number
        for state, output in zip(segment_fd._output_states, part.outputs, strict=True):
            if output.value.uid in index_of:
                space_map[state.index] = index_of[output.value.uid]
        fd.segment_index_space_maps[segment_fd] = space_map
        fd.segments.append(segment_fd)
    return fd.segments


def _segment_fusion(segment: Any) -> nodes.Fusion:
    """The segment as a fusion: its tensor inputs, then the scalars it reads but does not
    compute; its outputs."""
    made = {v.uid for e in segment.exprs for v in e.outputs}
    scalars: dict[int, nodes.Scalar] = {}
    for expr in segment.exprs:
        for value in expr.inputs:
            elements = value.elements if isinstance(value, nodes.Vector) else (value,)
            for element in elements:
                if (isinstance(element, nodes.Scalar) and not element.is_constant
                        and element.uid not in made):
                    scalars.setdefault(element.uid, element)
    return nodes.Fusion(
        (*segment.inputs, *scalars.values()),
        tuple(nodes.FusionOutput(v) for v in segment.outputs),
        tuple(segment.exprs),
    )


def _replayed(part: nodes.Fusion) -> SegmentDefinition:
    """A definition of ``part``: its translation run, as nvFuser's tests run a printed one."""
    namespace: dict[str, Any] = {"FusionDefinition": SegmentDefinition, "DataType": DataType}
    exec(translate_fusion(part), namespace)  # noqa: S102 - text written from fusecli's IR
    segment_fd = SegmentDefinition()
    with segment_fd:
        namespace["nvfuser_fusion"](segment_fd)
    return segment_fd
