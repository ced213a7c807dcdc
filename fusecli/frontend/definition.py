"""``FusionDefinition``: nvFuser's Python frontend, building fusecli's IR.

Both styles work: ``with FusionDefinition() as fd: ...`` and a subclass overriding
``definition()``. Every call is validated when it is made and recorded in canonical form, so
``repr(fd)`` prints a runnable repro in nvFuser's format and ``fusion_ir()`` prints the IR as
nvFuser does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from fusecli.frontend import session
from fusecli.frontend.binding import incompatible, is_int64
from fusecli.frontend.caches import FusionCache
from fusecli.frontend.descriptors import (
    is_torch_size,
    parse_define_scalar,
    parse_define_tensor,
)
from fusecli.frontend.execution import ExecuteOptions
from fusecli.frontend.execution import run as run_fusion
from fusecli.frontend.generator import seeded_variant
from fusecli.frontend.ops import Ops
from fusecli.frontend.placement import check_from_pytorch
from fusecli.frontend.records import Inline, Record
from fusecli.frontend.repro import layout_copies
from fusecli.frontend.state import Scalar, State, Tensor, Vector
from fusecli.ir import dtype as dt
from fusecli.ir import nodes
from fusecli.ir.builder import DefinitionError, FusionBuilder, invalid_size_text
from fusecli.ir.dtype import DataType


class FusionDefinition:
    _tensor_class: type[Tensor] = Tensor  # what a tensor handle is (the direct frontend's differ)

    def __init__(self, id: int | None = None, max_length: int = 9999, **_unused: Any) -> None:
        self._id: int | None = None
        self._requested_id = id
        self._reset()

    def _reset(self) -> None:
        self._builder = FusionBuilder()
        self._records: list[Record] = []
        self._states: list[State] = []
        self._counter = itertools.count()
        self._fusion: nodes.Fusion | None = None
        self._defining = False
        self._input_states: list[State] = []
        self._output_states: list[State] = []
        self.fec: Any = None  # an LRUCache entry (nvfuser_direct): what runs when set
        self.ops = Ops(self)

    def _copy_definition_of(self, other: FusionDefinition) -> None:
        """This definition made the same as ``other``'s (``nvfuser.clone``): the same records,
        states and fusion, which is immutable and so may be shared."""
        other._ensure_defined()
        self._reset()
        self._records = list(other._records)
        self._states = list(other._states)
        self._input_states = list(other._input_states)
        self._output_states = list(other._output_states)
        self._fusion, self._id = other.fusion, other._id

    # -- definition lifecycle --------------------------------------------------------------

    def __enter__(self) -> FusionDefinition:
        self._setup_definition()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self._finalize_definition()

    def _setup_definition(self) -> FusionDefinition:
        self._reset()
        self._defining = True
        return self

    def _finalize_definition(self) -> None:
        self._defining = False
        self._fusion = self._builder.build()
        self._id = FusionCache.lookup(self._definition_text(), self)
        session.definition_finished(self)

    def definition(self) -> None:
        raise NotImplementedError("definition() should be implemented by child class!")

    def _ensure_defined(self) -> None:
        if getattr(self, "_fusion", None) is not None or self.fec is not None:
            return
        if self._requested_id is not None:  # FusionDefinition(id): the cached definition
            self._copy_definition_of(FusionCache.definition(self._requested_id))
            return
        self._setup_definition()
        self.definition()
        self._finalize_definition()

    def id(self) -> int | None:
        return self._id

    @property
    def fusion(self) -> nodes.Fusion:
        """The IR of this definition (nvfuser_direct's attribute; its cache entry's fusion
        once ``fec`` is set and the definition's own is deleted, as nvFuser's tests do)."""
        fusion = getattr(self, "_fusion", None)
        if fusion is None and self.fec is not None:
            return self.fec.fusion
        if fusion is None:
            raise RuntimeError("Invalid fusion definition!")
        return fusion

    @property
    def records(self) -> list[Record]:
        return list(self._records)

    # -- state bookkeeping -----------------------------------------------------------------

    def _check_defining(self, what: str) -> None:
        if not self._defining:
            raise RuntimeError(
                f"{what}: Attempting to add to a completed definition! "
                "Define fusions inside `with FusionDefinition() as fd:` or definition()"
            )

    def _new_index(self) -> int:
        return next(self._counter)

    def _tensor(self, val: nodes.TensorView) -> Tensor:
        state = self._tensor_class(self, self._new_index(), val)
        self._states.append(state)
        return state

    def _scalar(self, val: nodes.Scalar) -> Scalar:
        state = Scalar(self, self._new_index(), val)
        self._states.append(state)
        return state

    def _vector(self, elements: list[Scalar]) -> Vector:
        val = nodes.Vector(tuple(e.val for e in elements))
        state = Vector(self, self._new_index(), val, elements)
        self._states.append(state)
        return state

    def _wrap(self, val: nodes.Val) -> State:
        if isinstance(val, nodes.TensorView):
            return self._tensor(val)
        if isinstance(val, nodes.Scalar):
            return self._scalar(val)
        return self._vector([self._scalar(e) for e in val.elements])

    def _record(self, record: Record) -> None:
        self._records.append(record)

    def _inline_vector(
        self, values: object, what: str, is_shape: bool = True
    ) -> tuple[Vector, object]:
        """A shape argument: a Vector handle, or a list of ints and Scalars printed inline.

        Inline ints still take a state index each, and so does the vector, as in nvFuser.
        """
        if isinstance(values, Vector):
            return values, values
        if not isinstance(values, list | tuple) and not is_torch_size(values):
            raise incompatible(what, f"expected a Vector or a list of ints, got {values!r}")
        elements = []
        for index, value in enumerate(values):
            if isinstance(value, Scalar):
                elements.append(value)
            elif is_int64(value):
                if is_shape and value < -1:
                    raise DefinitionError(what, invalid_size_text(value, index))
                elements.append(self._scalar(FusionBuilder.constant(value, DataType.Int)))
            else:
                raise incompatible(
                    what, f"list entries must be ints (int64) or Scalars, got {value!r}"
                )
        return self._vector(elements), Inline(tuple(values))

    # -- definitions -----------------------------------------------------------------------

    def define_tensor(self, *args: Any, **kwargs: Any) -> Tensor:
        """The three overloads of nvFuser's define_tensor (and the 2023 spellings)."""
        self._check_defining("define_tensor")
        spec = parse_define_tensor(args, kwargs)
        val = self._builder.define_tensor(
            spec["shape"], spec["contiguity"], spec["dtype"], spec["stride_order"], spec["is_cpu"]
        )
        state = self._tensor(val)
        self._input_states.append(state)
        record_args: list[tuple[str | None, object]] = [
            ("shape", list(spec["shape"])),
            ("contiguity", list(spec["contiguity"])),
            ("dtype", spec["dtype"]),
            ("is_cpu", spec["is_cpu"]),
        ]
        if spec["stride_order"]:
            record_args.append(("stride_order", list(spec["stride_order"])))
        self._record(Record("fd.define_tensor", [state], record_args))
        return state

    def from_pytorch(self, tensor: Any, static_sizes: bool = False) -> Tensor:
        """An input like ``tensor``: a CUDA tensor, or a CPU scalar (``is_cpu``); another CPU
        tensor is a ValueError, as in nvFuser (``fusecli.frontend.placement``)."""
        return self.define_tensor(
            sizes=list(tensor.size()),
            strides=list(tensor.stride()),
            dtype=dt.from_torch(tensor.dtype),
            static_sizes=static_sizes,
            is_cpu=check_from_pytorch(tensor),
        )

    def define_scalar(self, *args: Any, **kwargs: Any) -> Scalar:
        """An input (``define_scalar(dtype)``); or a constant (``define_scalar(value, dtype)``)."""
        self._check_defining("define_scalar")
        value, dtype, is_input = parse_define_scalar(args, kwargs)
        if is_input:
            state = self._scalar(self._builder.define_input_scalar(dtype))
            self._input_states.append(state)
            self._record(Record("fd.define_scalar", [state], [(None, None), ("dtype", dtype)]))
            return state
        state = self._scalar(FusionBuilder.constant(value, dtype))
        self._record(Record("fd.define_scalar", [state], [(None, value), ("dtype", dtype)]))
        return state

    def define_constant(self, value: Any, dtype: DataType | None = None) -> Scalar:
        """Deprecated alias of define_scalar(value), found in 2022-23 repros."""
        return self.define_scalar(value, dtype)

    def define_vector(self, values: Any, dtype: DataType = DataType.Int) -> Vector:
        self._check_defining("define_vector")
        if dtype is not DataType.Int:
            raise DefinitionError("define_vector", f"vectors hold Int scalars, got {dtype}")
        if isinstance(values, int):
            elements = [self._scalar(self._builder.define_input_scalar(DataType.Int))
                        for _ in range(values)]
            self._input_states.extend(elements)
            state = self._vector(elements)
            self._record(Record("fd.define_vector", [state], [(None, values)]))
            return state
        state, printed = self._inline_vector(values, "define_vector")
        self._record(
            Record("fd.define_vector", [state], [(None, printed), ("dtype", DataType.Int)])
        )
        return state

    def add_output(self, output: State, *args: Any, **kwargs: Any) -> None:
        """``add_output(out)``, ``(out, alias_input)`` or ``(out, stride_order)``."""
        self._check_defining("add_output")
        alias = kwargs.pop("alias_input", None)
        stride_order = kwargs.pop("stride_order", None)
        if kwargs:
            raise incompatible("add_output", f"unexpected arguments {sorted(kwargs)}")
        if args:
            if isinstance(args[0], Tensor):
                alias = args[0]
            elif args[0] is not None:
                stride_order = list(args[0])
        if not isinstance(output, Tensor | Scalar):
            raise incompatible("add_output", f"expected a Tensor or Scalar, got {output!r}")
        self._builder.add_output(
            output.val, alias.val if alias is not None else None, stride_order or ()
        )
        self._output_states.append(output)
        record_args: list[tuple[str | None, object]] = [(None, output)]
        if alias is not None:
            record_args.append((None, alias))
        elif stride_order:
            record_args.append(("stride_order", list(stride_order)))
        self._record(Record("fd.add_output", [], record_args))

    # -- introspection ---------------------------------------------------------------------

    def inputs(self) -> list[int]:
        return [s.index for s in self._input_states]

    def outputs(self) -> list[int]:
        return [s.index for s in self._output_states]

    def extents(self) -> list[int]:
        """The state indices of the input tensors' extents, numbered -1, -2, ... in input
        order (legacy nvFuser keeps them apart from the definition's own states)."""
        self._ensure_defined()
        count = sum(v.ndim for v in self.fusion.inputs if isinstance(v, nodes.TensorView))
        return [-index - 1 for index in range(count)]

    def debug_output(self) -> str | None:
        """What the last execute printed, where it ran with ``capture_debug_output=True``."""
        return getattr(self, "_debug_output", None)

    def last_repro_script(self) -> str:
        if getattr(self, "fake_inputs", None) is None:
            raise AssertionError(
                "fd.last_repro_script() cannot provide a repro because "
                "fd.execute(inputs, save_repro_inputs=True) was not executed!"
            )
        return self.repro_script_for(self.fake_inputs)

    def _definition_text(self, function_name: str | None = None) -> str:
        from fusecli.frontend.repro import definition_text

        return definition_text(self, function_name)

    def __repr__(self) -> str:
        # nvFuser's legacy print starts with a newline (its tests read the name on line 1) and
        # ends with an empty line (FusionDefinition::print's std::endl after the records).
        return "\n" + self._definition_text() + "\n"

    __str__ = __repr__

    def repro_script_for(self, inputs: Sequence[Any] | None = None) -> str:
        from fusecli.frontend.repro import repro_script, version_header

        return repro_script(self, inputs, header=version_header())

    def segment(self, inputs: Sequence[Any]) -> list[FusionDefinition]:
        """The definitions of the segments execution cuts this fusion into for ``inputs``,
        with their index maps (legacy ``fd.segment``; ``fusecli.frontend.segments``)."""
        from fusecli.frontend.segments import segment_definitions

        self._ensure_defined()
        return segment_definitions(self, list(inputs))

    def _repro_error_str(self, section: str, inputs: Sequence[Any] | None = None) -> str:
        """nvFuser's message on an exception, with the script that reproduces it."""
        return (
            f"An error occurred while {section} nvFuser FusionDefinition {self.id()}.\n"
            "Here's a script to reproduce the error:\n```python\n"
            f"{self.repro_script_for(inputs)}```\n"
        )

    def fusion_ir(self) -> str:
        from fusecli.ir.printer import print_fusion

        self._ensure_defined()
        return print_fusion(self.fusion)

    # -- execution -------------------------------------------------------------------------

    def execute(self, inputs: Sequence[Any], *, device: Any = None, **options: Any) -> list[Any]:
        """Run the fusion on ``inputs``, with nvFuser's keyword options
        (``fusecli.frontend.execution``): ``print_repro=True`` prints the repro first,
        ``save_repro_inputs`` and ``capture_debug_output`` keep what ``last_repro_script()``
        and ``debug_output()`` return, ``_enable_options`` / ``_disable_options`` switch
        nvFuser's options."""
        fusion = getattr(self, "_fusion", None)
        if fusion is None:
            self._ensure_defined()
            fusion = self.fusion
        if type(inputs) is not list:
            inputs = list(inputs)
        switches = debug_output = None
        if options:
            parsed = ExecuteOptions.parse(options)
            switches = parsed.switches
            if parsed.print_repro:
                print(self.repro_script_for(inputs))
            if parsed.save_repro_inputs:
                self.fake_inputs = layout_copies(inputs)
            if parsed.capture_debug_output:
                debug_output = ""  # fusecli prints nothing while it executes
        self._debug_output = debug_output
        return run_fusion(self, fusion, inputs, device, switches)

    def validate(
        self,
        inputs: Sequence[Any],
        reference_outputs: Sequence[Any] | None = None,
        **execute_kwargs: Any,
    ) -> list[Any]:
        """The outputs, after an AssertionError unless they match the reference (default: eager
        torch), as ``nvfuser_direct``'s validate returns them; tolerances by dtype and
        reduction size, never tighter than nvFuser's (``compare.reductions``)."""
        from fusecli.compare import compare_tensors
        from fusecli.compare.reductions import reduction_sizes, validation_tolerance
        from fusecli.reference import run_reference

        outputs = self.execute(inputs, **execute_kwargs)
        if reference_outputs is None:  # of what ran: random ops seeded as they were
            fusion, ran = self.fusion, list(inputs)
            seeds = getattr(self, "_last_seeds", None)
            if seeds:
                fusion, ran = seeded_variant(fusion).fusion, [*ran, *seeds]
            reference_outputs = run_reference(fusion, ran).outputs
        own, theirs = (reduction_sizes(self.fusion, inputs, compound=c) for c in (False, True))
        for index, (actual, expected) in enumerate(zip(outputs, reference_outputs, strict=True)):
            tolerance = validation_tolerance(
                expected.dtype, own.get(index, 1), theirs.get(index, 1))
            diff = compare_tensors(actual, expected, tolerance=tolerance)
            if not diff.ok:
                raise AssertionError(f"output {index} does not match: {diff.summary()}")
        return outputs

