"""Invalid definitions and calls fail as nvFuser's frontend fails: a ``RuntimeError`` (``TypeError``
for an argument of the wrong type) whose message holds nvFuser's own words, so that scripts and
tests written against nvFuser (``pytest.raises(RuntimeError, match=...)``) behave the same.

The expected words are nvFuser's message text at the check named in each case (NVIDIA/Fuser
``csrc/`` and ``python/``); the inputs are written here.
"""

from __future__ import annotations

import re

import pytest
import torch

from fusecli.errors import FusecliError, InputError, PipelineError
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.builder import DefinitionError


def _tensor(fd, rank: int = 2, dtype=DataType.Float):
    return fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=dtype)


# name: (body building on fd, nvFuser's words)
DEFINITION_CASES = {
    "size (wrapDim)": (lambda fd: fd.ops.size(_tensor(fd), 2),
                       "Tried to access out of boundary index 2. total index: 2"),
    "cumsum of a 0-dim tensor (wrapDim)": (
        lambda fd: fd.ops.cumsum(_tensor(fd, 0), 0),
        "Tried to access out of boundary index 0. total index: 0"),
    "cat dim": (lambda fd: fd.ops.cat([_tensor(fd, 1), _tensor(fd, 1)], 1),
                "Invalid dimension to cat"),
    "cat of nothing": (lambda fd: fd.ops.cat([], 0),
                       "Attempting to concatenate empty list of tensors"),
    "cat ranks": (lambda fd: fd.ops.cat([_tensor(fd, 1), _tensor(fd, 2)], 0),
                  "Unexpected number of dimensions"),
    "gather dim": (lambda fd: fd.ops.gather(_tensor(fd), _tensor(fd, 2, DataType.Int), 2),
                   "Tensor arguments have dimension 2 so dim argument must satisfy -2 <= dim < 2"),
    "squeeze dim": (lambda fd: fd.ops.squeeze(_tensor(fd, 3), [3]),
                    "Squeeze dim is outside of Tensor size! Tensor Size: 3 Dim: 3"),
    "squeeze count": (lambda fd: fd.ops.squeeze(_tensor(fd, 1), [0, 1]),
                      "The dims to squeeze must be <= the number of dims of the input tensor"),
    "permute range": (lambda fd: fd.ops.permute(_tensor(fd, 2), [0, 2]),
                      "dims argument is out of range, expects < 2, but got: 2"),
    "permute twice": (lambda fd: fd.ops.permute(_tensor(fd, 2), [1, 1]),
                      "duplicated dimension entries"),
    "permute length": (lambda fd: fd.ops.permute(_tensor(fd, 2), [0]),
                       "Operator permute expects `dims` argument to have the same length as input"),
    "broadcast flags": (lambda fd: fd.ops.broadcast(_tensor(fd, 2), [True, False]),
                        "Invalid broadcast, number of false entries in is_broadcast_dim expected "
                        "to be 2 but received 1"),
    "broadcast_in_dim rank": (
        lambda fd: fd.ops.broadcast_in_dim(_tensor(fd, 2), [4], [0]),
        "The new shape is expected to be greater-then-or-equal to the input: 1 vs 2"),
    "broadcast_in_dim dims": (
        lambda fd: fd.ops.broadcast_in_dim(_tensor(fd, 2), [4, 4, 4], [0]),
        "The broadcast dimensions should match the input dimensions: 2 vs 1"),
    "reshape -1 twice": (lambda fd: fd.ops.reshape(_tensor(fd), [-1, -1]),
                         "A maximum of one value of -1 can be provided to reshape."),
    "slice negative start": (lambda fd: fd.ops.slice(_tensor(fd), [-1, 0], [2, 2]),
                             "Slice operation start_indices must be greater than or equal to 0."),
    "slice stride": (lambda fd: fd.ops.slice(_tensor(fd), [0, 0], [2, 2], [1, 2]),
                     "nvFuser Limitation: All slice operation strides must be of const size 1."),
    "slice rank": (lambda fd: fd.ops.slice(_tensor(fd), [0], [2]),
                   "Number of tensor dimensions does not match slice dimensions!"),
    "pad widths": (lambda fd: fd.ops.pad(_tensor(fd, 1), [1, 1, 1, 1]),
                   "Number of pad widths must be at most twice the input dimension"),
    "pad odd": (lambda fd: fd.ops.pad(_tensor(fd, 2), [1, 1, 1]),
                "Invalid number of padding widths: 3"),
    "pad value dtype": (
        lambda fd: fd.ops.pad(_tensor(fd, 1), [1, 1], fd.define_scalar(1 + 2j)),
        "Tensor arg and pad value must have the same dtype."),
    "where condition": (lambda fd: fd.ops.where(_tensor(fd), _tensor(fd), _tensor(fd)),
                        "Condition should be of DataType Bool, not float"),
    "iota step": (lambda fd: fd.ops.iota(fd.define_scalar(4), fd.define_scalar(0),
                                         fd.define_scalar(0), DataType.Int),
                  "iota: step value must not equal zero."),
    "iota start dtype": (lambda fd: fd.ops.iota(fd.define_scalar(4), fd.define_scalar(0.5),
                                                fd.define_scalar(1), DataType.Int),
                         "iota: start dtype does not match specified dtype argument"),
    "uniform dtype": (lambda fd: fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0),
                                                [2, 2], dtype=DataType.Bool),
                      "Random distributions only create floating point types!"),
    "triu rank": (lambda fd: fd.ops.triu(_tensor(fd, 1)),
                  "input tensor for triu must have 2 or more dims, but got 1 dims"),
    "define_tensor contiguity": (
        lambda fd: fd.define_tensor(shape=[-1, -1], contiguity=[True, True, True]),
        "Length of contiguity argument (3) must match that of shape argument (2)"),
    "define_tensor size": (
        lambda fd: fd.define_tensor(shape=[-2], contiguity=[True]),
        "The value -2 at index 0 was neither symbolic(-1), zero_element(0), broadcast(1), or "
        "static(>1)."),
    "define_tensor stride_order": (
        lambda fd: fd.define_tensor(shape=[-1, -1], contiguity=[True, True], stride_order=[0, 5]),
        "stride_order argument is out of range, expects < 2, but got: 5"),
}


@pytest.mark.parametrize("name", sorted(DEFINITION_CASES))
def test_definition_errors_are_runtime_errors_in_nvfusers_words(name: str) -> None:
    body, words = DEFINITION_CASES[name]
    with pytest.raises(RuntimeError, match=re.escape(words)) as error:
        with FusionDefinition() as fd:
            body(fd)
    assert isinstance(error.value, DefinitionError)
    assert str(error.value).split(":")[0] in name.split()[0] + " define_tensor"  # op first


@pytest.mark.parametrize(
    ("body", "op"),
    [
        (lambda fd: fd.ops.permute(_tensor(fd), [0.0, 1.0]), "permute"),
        (lambda fd: fd.ops.cumsum(_tensor(fd), 0.5), "cumsum"),
        (lambda fd: fd.ops.var_mean(_tensor(fd), 3.0), "var_mean"),
        (lambda fd: fd.define_tensor(shape=[10.0], contiguity=[True]), "define_tensor"),
        (lambda fd: fd.define_tensor(shape=[2**63], contiguity=[True]), "define_tensor"),
        (lambda fd: fd.define_vector([2**63]), "define_vector"),
    ],
)
def test_an_argument_of_the_wrong_type_is_pybinds_type_error(body, op: str) -> None:
    with pytest.raises(TypeError, match=re.escape(f"{op}(): incompatible function arguments.")):
        with FusionDefinition() as fd:
            body(fd)


def test_fusecli_errors_are_runtime_errors() -> None:
    for kind in (FusecliError, InputError, PipelineError, DefinitionError):
        assert issubclass(kind, RuntimeError)
    assert issubclass(DefinitionError, ValueError)  # as before, for callers catching that


def _execute(build, inputs):
    with FusionDefinition() as fd:
        build(fd)
    return fd.execute(inputs)


@pytest.mark.parametrize(
    ("build", "inputs", "words"),
    [
        # concretization (csrc/dynamic_transform.cpp, csrc/transform_view.cpp)
        (lambda fd: fd.add_output(fd.ops.pad(_tensor(fd), [-2, -2])), [torch.randn(2, 3)],
         "Invalid resized domain extent -1"),
        (lambda fd: fd.add_output(fd.ops.reshape(_tensor(fd), [4, 2])), [torch.randn(2, 3)],
         "Total element counts across view operation must match: 6 vs 8"),
        (lambda fd: fd.add_output(fd.ops.topk(_tensor(fd), fd.define_scalar(-5), 1)[0]),
         [torch.randn(2, 3)], "Invalid resized domain extent -5"),
        # constant sizes propagated through the graph (csrc/expr_evaluator.cpp)
        (lambda fd: fd.add_output(fd.ops.add(_tensor(fd), _tensor(fd))),
         [torch.randn(2, 3), torch.randn(2, 4)], "a conflict was found with 2 different sizes"),
        (lambda fd: fd.add_output(fd.ops.cat([_tensor(fd), _tensor(fd)], 0)),
         [torch.randn(2, 3), torch.randn(2, 5)], "a conflict was found with 2 different sizes"),
    ],
)
def test_binding_time_errors_are_runtime_errors_in_nvfusers_words(build, inputs, words) -> None:
    with pytest.raises(RuntimeError, match=re.escape(words)) as error:
        _execute(build, inputs)
    assert isinstance(error.value, InputError)


def test_a_reshape_to_sizes_read_off_another_input_is_checked_when_bound() -> None:
    """The new shape comes from ``size`` of a second input: known only once both are bound."""
    def build(fd):
        t0, t1 = _tensor(fd), _tensor(fd, 3)
        fd.add_output(fd.ops.reshape(t0, [fd.ops.size(t1, d) for d in range(3)]))

    with pytest.raises(InputError, match="Total element counts across view operation must "
                                         "match: 42 vs 48"):
        _execute(build, [torch.randn(3, 14), torch.randn(3, 2, 8)])
    (out,) = _execute(build, [torch.randn(3, 16), torch.randn(3, 2, 8)])
    assert out.shape == (3, 2, 8)


def test_operands_of_lower_rank_align_to_the_right_and_broadcast_dims_broadcast() -> None:
    def build(fd):
        t0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
        fd.add_output(fd.ops.add(t0, _tensor(fd, 2)))

    (out,) = _execute(build, [torch.ones(3, 1, 2), torch.ones(3, 2)])
    assert out.shape == (3, 3, 2) and bool((out == 2).all())
    # A symbolic dimension of size 1 is no broadcast: 1 against 3 is nvFuser's conflict.
    with pytest.raises(InputError, match="a conflict was found with 2 different sizes"):
        _execute(lambda fd: fd.add_output(fd.ops.add(_tensor(fd, 3), _tensor(fd, 2))),
                 [torch.ones(3, 1, 2), torch.ones(3, 2)])
