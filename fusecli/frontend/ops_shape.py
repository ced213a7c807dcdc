"""Shape ``fd.ops``: broadcast, expand, reshape, permute, squeeze, slice, pad, cat, sizes."""

from __future__ import annotations

from typing import Any

from fusecli.frontend.binding import (
    OpsBase,
    bind_args,
    bind_op,
    dims_arg,
    incompatible,
    int_arg,
    python_number,
    tensor_arg,
)
from fusecli.frontend.records import Record
from fusecli.frontend.state import Scalar, Tensor, Vector
from fusecli.ir import ops_other as other
from fusecli.ir import ops_resize as rsz
from fusecli.ir import ops_shape as shp
from fusecli.ir.optype import OpType


class ShapeOps(OpsBase):
    """Shape ops and shape queries."""

    def broadcast_in_dim(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_args(
            "broadcast_in_dim", ["arg", "shape", "broadcast_dims"], args, kwargs,
            aliases={"output_shape": "shape"},
        )
        self._start("broadcast_in_dim")
        arg = tensor_arg("broadcast_in_dim", bound["arg"])
        dims = dims_arg("broadcast_in_dim", bound["broadcast_dims"])
        shape, printed = self._fd._inline_vector(bound["shape"], "broadcast_in_dim")
        result = shp.broadcast_in_dim(self._b, arg.val, shape.val, dims)
        return self._finish(
            "broadcast_in_dim", [result],
            [(None, arg), ("shape", printed), ("broadcast_dims", dims)],
        )

    def broadcast(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.broadcast, args, kwargs)
        self._start("broadcast")
        arg = tensor_arg("broadcast", bound["arg"])
        flags = [bool(f) for f in bound["is_broadcast_dim"]]
        result = shp.broadcast(self._b, arg.val, flags)
        if result is arg.val:
            result = shp.set_op(self._b, OpType.set, arg.val)
        return self._finish(
            "broadcast", [result], [(None, arg), ("is_broadcast_dim", flags)]
        )

    def expand(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.expand, args, kwargs)
        self._start("expand")
        arg = tensor_arg("expand", bound["arg"])
        shape, printed = self._fd._inline_vector(bound["shape"], "expand")
        result = shp.expand(self._b, arg.val, shape.val)
        if result is arg.val:
            result = shp.set_op(self._b, OpType.set, arg.val)
        return self._finish("expand", [result], [(None, arg), ("shape", printed)])

    def reshape(self, *args: Any, **kwargs: Any) -> Tensor:
        kwargs = dict(kwargs)
        kwargs.pop("original_shape", None)  # 2023 spelling: reshape(T, original_shape, new_shape)
        if len(args) == 3:
            args = (args[0], args[2])
        bound = bind_op(OpType.reshape, args, kwargs)
        self._start("reshape")
        arg = tensor_arg("reshape", bound["arg"])
        shape, printed = self._fd._inline_vector(bound["new_shape"], "reshape")
        result = shp.reshape(self._b, arg.val, shape.val)
        return self._finish("reshape", [result], [(None, arg), ("new_shape", printed)])

    view = reshape

    def permute(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.permute, args, kwargs)
        self._start("permute")
        arg = tensor_arg("permute", bound["arg"])
        dims = dims_arg("permute", bound["dims"])
        result = shp.permute(self._b, arg.val, dims)
        return self._finish("permute", [result], [(None, arg), ("dims", dims)])

    def squeeze(self, *args: Any, **kwargs: Any) -> Tensor:
        kwargs = dict(kwargs)
        kwargs.pop("original_shape", None)
        if len(args) == 3 and isinstance(args[2], list | tuple):  # squeeze(T, shape, dims)
            args = (args[0], args[2])
        bound = bind_op(OpType.squeeze, args, kwargs)
        self._start("squeeze")
        arg = tensor_arg("squeeze", bound["arg"])
        dims = dims_arg("squeeze", bound["dims"])
        squeeze_expanded = bool(bound["squeeze_expanded"])
        result = shp.squeeze(self._b, arg.val, dims, squeeze_expanded)
        return self._finish(
            "squeeze", [result],
            [(None, arg), ("dims", dims), ("squeeze_expanded", squeeze_expanded)],
        )

    def slice(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.slice, args, kwargs)
        self._start("slice")
        arg = tensor_arg("slice", bound["arg"])
        starts, printed_starts = self._fd._inline_vector(
            bound["start_indices"], "slice", is_shape=False
        )
        ends, printed_ends = self._fd._inline_vector(
            bound["end_indices"], "slice", is_shape=False
        )
        stride_list = (  # one per start index, as nvFuser's slice binding makes them
            bound["strides"] if bound["strides"] is not None else [1] * len(starts.val.elements)
        )
        strides, printed_strides = self._fd._inline_vector(stride_list, "slice")
        manual = bool(bound["manual_normalization"])
        result = rsz.slice_(
            self._b, arg.val, starts.val.elements, ends.val.elements, strides.val.elements,
            manual,
        )
        return self._finish(
            "slice", [result],
            [
                (None, arg), ("start_indices", printed_starts), ("end_indices", printed_ends),
                ("strides", printed_strides), ("manual_normalization", int(manual)),
            ],
        )

    def pad(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.pad, args, kwargs)
        self._start("pad")
        arg = tensor_arg("pad", bound["arg"])
        widths, printed = self._fd._inline_vector(bound["pad_widths"], "pad", is_shape=False)
        value = bound["value"]
        if value is not None and python_number(value):  # nvfuser_direct's ScalarVariant
            value = self._operand("pad", value)
        if value is not None and not isinstance(value, Scalar):
            raise incompatible("pad", f"value must be a Scalar, got {value!r}")
        result = rsz.pad(
            self._b, arg.val, widths.val.elements, value.val if value is not None else None
        )
        record = [(None, arg), (None, printed)]
        if value is not None:
            record.append((None, value))
        return self._finish("pad", [result], record)

    def cat(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.cat, args, kwargs)
        self._start("cat")
        tensors = [tensor_arg("cat", t, "tensors") for t in bound["tensors"]]
        dim = int_arg("cat", bound["dim"], "dim")
        manual = bool(bound["manual_padding"])
        result = rsz.cat(self._b, [t.val for t in tensors], dim, manual)
        return self._finish(
            "cat", [result],
            [(None, tensors), ("dim", dim), ("manual_padding", int(manual))],
        )


    # -- shape queries ---------------------------------------------------------------------

    def size(self, *args: Any, **kwargs: Any) -> Scalar:
        bound = bind_op(OpType.size, args, kwargs)
        self._start("size")
        arg = tensor_arg("size", bound["arg"])
        dim = int_arg("size", bound["dim"], "dim")
        result = other.size(self._b, arg.val, dim)
        return self._finish("size", [result], [(None, arg), ("dim", dim)])

    def shape(self, *args: Any, **kwargs: Any) -> Vector:
        bound = bind_op(OpType.shape, args, kwargs)
        self._start("shape")
        arg = tensor_arg("shape", bound["arg"])
        vector = other.shape(self._b, arg.val)
        elements = [self._fd._scalar(e) for e in vector.elements]
        state = self._fd._vector(elements)
        self._fd._record(Record("fd.ops.shape", [state], [(None, arg)]))
        return state

    def tensor_sizes(self, *args: Any, **kwargs: Any) -> list[Scalar]:
        bound = bind_args("tensor_sizes", ["arg"], args, kwargs)
        self._start("tensor_sizes")
        arg = tensor_arg("tensor_sizes", bound["arg"])
        states = [self._fd._scalar(other.size(self._b, arg.val, d)) for d in range(arg.ndim)]
        self._fd._record(
            Record("fd.ops.tensor_sizes", states, [(None, arg)], trailing_comma=True)
        )
        return states

    def at(self, *args: Any, **kwargs: Any) -> Scalar:
        bound = bind_op(OpType.at, args, kwargs)
        self._start("at")
        vector = bound["arg"]
        if not isinstance(vector, Vector):
            raise incompatible("at", f"arg must be a Vector, got {vector!r}")
        index = int_arg("at", bound["index"], "index")
        element = other.at(vector.val, index)
        return self._finish("at", [element], [(None, vector), ("index", index)])
