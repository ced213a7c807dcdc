"""nvFuser's frontend API as a script uses it: versions, the direct frontend's executors and IR
handles, the caches, the legacy introspection calls, and execute's options and input checks."""

from __future__ import annotations

import re
import sys
import warnings

import pytest
import torch

from fusecli.frontend import DataType, FusionCache, FusionDefinition, LRUCache, LruFusionCache
from fusecli.frontend.direct import DirectFusionDefinition
from fusecli.load.shim import nvfuser_modules


def _add(fd, shape=(2, 4, 8)):
    t0 = fd.define_tensor(shape=list(shape))
    t1 = fd.define_tensor(shape=list(shape))
    t2 = fd.ops.add(t0, t1)
    fd.add_output(t2)
    return t0, t1, t2


# -- versions and imports --------------------------------------------------------------------


def test_version_compares_with_strings_and_packaging_versions():
    with nvfuser_modules():
        import nvfuser_direct
        from nvfuser_direct.nvfuser_direct_version import Version

        assert nvfuser_direct.version() > "0.0.0"
        assert nvfuser_direct.version() > Version("0.0.0")
        assert nvfuser_direct.__version__ == nvfuser_direct.version()
    with nvfuser_modules():
        import nvfuser
        from nvfuser.nvfuser_version import Version

        assert nvfuser.version() < Version("1000.0")


def test_importing_direct_after_legacy_warns_once_as_nvfuser_does():
    with nvfuser_modules(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import nvfuser  # noqa: F401
        import nvfuser_direct  # noqa: F401

    assert len(caught) == 1 and caught[0].category is UserWarning
    assert "imported nvfuser_direct when the nvfuser module is already imported" in str(
        caught[0].message
    )
    assert "nvfuser" not in sys.modules and "nvfuser_direct" not in sys.modules


# -- nvfuser_direct: IR handles and executors ---------------------------------------------------


def test_direct_tensors_print_as_the_ir_and_the_fusion_prints_its_math():
    with DirectFusionDefinition() as fd:
        t0, _, t2 = _add(fd)
    assert str(t0) == "T0_g_float[iS0{2}, iS1{4}, iS2{8}]"
    assert str(t2.domain()) == "[iS6{2}, iS7{4}, iS8{8}]"
    assert str(t2.axis(0)) == "iS6{2}" and str(t2.axis(-1).extent()) == "8"
    assert t0.dtype() is DataType.Float
    math = fd.fusion.print_math()
    assert math.startswith("Inputs:\n  T0_g_float[iS0{2}, iS1{4}, iS2{8}]\n")
    assert math.endswith("} // %kernel_math \n\n")


def test_direct_execute_makes_the_executor_cache_that_runs_it():
    with DirectFusionDefinition() as fd:
        _add(fd)
    inputs = [torch.randn(2, 4, 8), torch.randn(2, 4, 8)]
    assert fd.fec is None
    (out,) = fd.execute(inputs)
    assert torch.equal(out, inputs[0] + inputs[1])
    assert fd.fec.is_compiled(inputs) and not fd.fec.is_compiled([torch.randn(3, 4, 8)] * 2)
    with pytest.raises(AssertionError, match=r"FusionExecutorCache already exists! Use execute"):
        fd.manual_execute(inputs)


def test_manual_execute_runs_a_kernel_executor_and_excludes_execute():
    with DirectFusionDefinition() as fd:
        _add(fd)
    inputs = [torch.randn(2, 4, 8), torch.randn(2, 4, 8)]
    (out,) = fd.manual_execute(inputs)
    assert torch.equal(out, inputs[0] + inputs[1]) and fd.ke.is_compiled()
    with pytest.raises(AssertionError, match=r"KernelExecutor already exists! Use manual_exec"):
        fd.execute(inputs)


def test_direct_execute_of_no_definition_or_an_empty_one_says_so():
    with pytest.raises(NotImplementedError, match=r"Fusion does not exist! Use `with Fusion"):
        DirectFusionDefinition().execute([torch.randn(4, 4)])
    with DirectFusionDefinition() as fd:
        pass
    with pytest.raises(NotImplementedError, match="Fusion is empty!"):
        fd.execute([torch.randn(4, 4)])


# -- caches ----------------------------------------------------------------------------------


def test_lru_cache_decorator_compiles_each_fusion_once_and_reports_hits():
    @LruFusionCache(max_fusions=10)
    def make(flip: bool):
        with DirectFusionDefinition() as fd:
            t0, t1 = fd.define_tensor(shape=[2, 4]), fd.define_tensor(shape=[2, 4])
            fd.add_output(fd.ops.div(t1, t0) if flip else fd.ops.div(t0, t1))
        return fd

    assert make.stats() == "Max Fusions Allowed: 10\nThe fusion cache is empty.\n"
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    for _ in range(5):
        assert torch.allclose(make(False).execute([x, y])[0], x / y)
        assert torch.allclose(make(True).execute([x, y])[0], y / x)
    assert make.num_fusions() == 2
    assert make.stats() == (
        "Max Fusions Allowed: 10\nTotal Fusions in Cache: 2\nTotal Unique Fusions Compiled: 2\n"
        "Cache Hits by LRU ordering:\n\t0 -> 4 hits\n\t1 -> 4 hits\nCache Lookups: 10\n"
        "Cache Hits: 8\nHit Rate: 80%\n"
    )


@pytest.mark.parametrize("variant", ["stride_order", "concrete broadcast shape"])
def test_lru_cache_tells_apart_fusions_that_print_alike(variant):
    def define(choice):
        with DirectFusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3)
            if variant == "stride_order":
                fd.add_output(fd.ops.stride_order(fd.ops.add(t0, t0), choice))
            else:
                t1 = fd.define_tensor(shape=[-1], contiguity=[True])
                fd.add_output(fd.ops.add(t0, fd.ops.broadcast_in_dim(t1, choice, [2])))
        return fd

    choices = ([[2, 1, 0], [0, 1, 2]] if variant == "stride_order"
               else [[2, 3, 4], [2, 3, 1024]])
    cache = LRUCache()
    for choice in choices + choices:
        cache.cache_compile(define(choice).fusion)
    assert cache.num_fusions() == 2


def test_fusion_definition_id_attaches_to_the_cached_definition():
    with FusionDefinition() as fd:
        _add(fd, shape=(3, 5))
    attached = FusionDefinition(fd.id())
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    assert torch.equal(attached.execute([x, y])[0], x + y)
    assert FusionCache.get().num_fusions() >= 1


# -- legacy introspection ----------------------------------------------------------------------


def test_extents_debug_output_and_last_repro_script():
    with FusionDefinition() as fd:
        _add(fd, shape=(-1, -1, -1))
    inputs = [torch.randn(2, 4, 8), torch.randn(2, 4, 8)]
    assert fd.extents() == [-1, -2, -3, -4, -5, -6]
    with pytest.raises(AssertionError, match=r"save_repro_inputs=True\) was not executed"):
        fd.last_repro_script()
    fd.execute(inputs)
    assert fd.debug_output() is None
    fd.execute(inputs, capture_debug_output=True, save_repro_inputs=True)
    assert fd.debug_output() == ""
    script = fd.last_repro_script()
    assert "torch.testing.make_tensor((2, 4, 8), dtype=torch.float32, device='cuda:0')" in script


def test_segment_gives_each_segments_definition_and_its_index_map():
    inputs = [torch.randn(2, 32), torch.randn(2, 128)]
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(t1, fd.ops.sum(t0, [-1], True, DataType.Float)))
    reduction, pointwise = fd.segment(inputs)
    assert fd.segment_index_space_maps[reduction] == {0: 0, 2: 2}  # T0 in, sum + broadcast out
    assert fd.segment_index_space_maps[pointwise] == {0: 1, 1: 2, 2: 3}
    assert fd.map_value_to_last_used_segment == {0: 0, 1: 1, 2: 1}
    partial = reduction.execute([inputs[0]])[0]
    assert torch.allclose(pointwise.execute([inputs[1], partial])[0], fd.execute(inputs)[0])


# -- execute: options and input checks ---------------------------------------------------------


def test_enable_and_disable_options_route_matmul_as_nvfuser_does():
    inputs = [torch.randn(24, 8), torch.randn(8, 16)]
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.matmul(fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])))
    assert torch.allclose(fd.execute(inputs)[0], inputs[0] @ inputs[1], atol=1e-5)
    with pytest.raises(RuntimeError, match="Can not find a scheduler to schedule fusion segment"):
        fd.execute(inputs, _enable_options=["fuse_matmul"], _disable_options=["matmul_expr_eval"])
    with pytest.raises(RuntimeError, match="Unrecognized enable_option: fuse_matmull"):
        fd.execute(inputs, _enable_options=["fuse_matmull"])


def test_inputs_that_do_not_fit_get_nvfusers_messages():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(t0, fd.define_scalar()))
    tensor = torch.rand(15)
    cases = [
        ([2.0, 2.0], r"Expected input 0, T0_g_float\[iS0\{i0\}\], to be an at::Tensor but got "
                     r"scalar 2$"),
        ([tensor, tensor], r"Expected input 1, .*, to be a scalar but got float tensor of rank 1"),
        ([tensor.half(), 2.0], r"Expected input 0, .*, to be bound to a tensor of dtype float, "
                               r"but got a tensor of dtype __half"),
        ([tensor, 2.0 + 1.0j], re.escape("Scalar value (2,1) is not compatible with the expected "
                                         "data type: double.")),
    ]
    for inputs, message in cases:
        with pytest.raises(RuntimeError, match=message):
            fd.execute(inputs)


def test_bool_contiguity_follows_the_stride_order():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor([1, 2], contiguity=True, stride_order=[0, 1])
        fd.add_output(fd.ops.add(t0, t0))
    assert "contiguity=[True, None]" in repr(fd)  # allocation order: the size-2 dim first
    x = torch.randn(1, 2)
    assert torch.equal(fd.execute([x])[0], x * 2)


# -- nvFuser's scheduling enums and what fusecli leaves out of scope ----------------------------


def test_both_frontends_export_nvfusers_scheduling_enums_with_its_names_and_values():
    # python/python_direct/enum.cpp and, for the legacy module, python_frontend/
    # python_bindings.cpp; int() is the C++ enum's value (csrc/type.h)
    with nvfuser_modules(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import nvfuser
        import nvfuser_direct
        from nvfuser_direct import IdMappingMode, ParallelType, SchedulerType

        assert [m.name for m in ParallelType] == [
            "mesh_x", "mesh_y", "mesh_z", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
            "block_z", "mma", "serial", "tma", "unroll", "unswitch", "vectorize", "stream"]
        assert (int(ParallelType.mesh_x), int(ParallelType.grid_x), int(ParallelType.block_x),
                int(ParallelType.stream), int(ParallelType.serial)) == (0, 5, 8, 9, 16)
        assert str(ParallelType.grid_x) == "ParallelType.grid_x"
        assert ParallelType.grid_x != 5 and ParallelType.grid_x == ParallelType(5)
        assert [m.name for m in IdMappingMode] == [
            "exact", "almost_exact", "broadcast", "permissive", "loop"]
        # pybind11's __entries, which nvFuser's tests read to list the schedulers
        entries = SchedulerType.__entries
        assert list(entries)[:3] == ["none", "no_op", "pointwise"]
        assert entries["inner_persistent"] == (SchedulerType.inner_persistent, None)
        assert [m.name for m in nvfuser_direct.MemoryType] == [
            "tensor", "local", "shared", "global", "symmetric"]
        assert [m.name for m in nvfuser.MemoryType] == ["local", "shared", "global"]
        assert "mesh_y" not in nvfuser.ParallelType.__members__
        assert not hasattr(nvfuser, "IdMappingMode")
        assert [m.name for m in nvfuser.LoadStoreOpType] == [
            "set", "load_matrix", "cp_async", "tma"]
        assert [m.name for m in nvfuser.CacheOp] == [
            "unspecified", "all_levels", "streaming", "global"]


def test_direct_scheduling_classes_and_modules_import_and_say_they_are_out_of_scope():
    with nvfuser_modules():
        from nvfuser_direct import (
            BroadcastOp,
            CompileParams,
            KernelExecutor,
            Merge,
            ReshapeOp,
            Split,
            SqueezeOp,
            idm,
            nvf_cutlass,
            schedule,
        )

        for cls in (BroadcastOp, CompileParams, KernelExecutor, Merge, ReshapeOp, Split,
                    SqueezeOp):
            with pytest.raises(NotImplementedError, match="outside fusecli's scope"):
                cls()
        with pytest.raises(AttributeError, match="schedule.find_compatible_schedulers: user "):
            schedule.find_compatible_schedulers  # noqa: B018
        with pytest.raises(AttributeError, match="outside fusecli's scope"):
            idm.IdModel  # noqa: B018
        with pytest.raises(AttributeError, match="CUTLASS"):
            nvf_cutlass.nvfp4_scaled_mm  # noqa: B018
        import nvfuser_direct.schedule as module

        assert module is schedule


def test_lowered_kernel_and_scheduled_ir_text_say_they_are_out_of_scope():
    with DirectFusionDefinition() as fd:
        _add(fd)
    x, y = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    fd.execute([x, y])
    assert fd.fec.is_compiled([x, y])
    with pytest.raises(NotImplementedError, match="print_kernel: nvFuser's scheduled IR"):
        fd.fusion.print_kernel()
    for name in ("get_scheduled_ir", "get_cuda_kernel"):
        with pytest.raises(NotImplementedError, match=f"{name}: .*outside fusecli's scope"):
            getattr(fd.fec, name)([x, y])
    with pytest.raises(NotImplementedError, match="outside fusecli's scope"):
        fd.fec.get_most_recent_scheduled_ir()


# -- scalar names: nvFuser's one counter, constants and the fusion's zero included ------------


@pytest.mark.parametrize("definition", [FusionDefinition, DirectFusionDefinition])
def test_a_scalar_defined_after_a_symbolic_tensor_is_named_after_the_fusions_zero(definition):
    # nvFuser's test_mismatched_input_types: define_tensor([-1]) makes the extent i0, then its
    # IterDomain's start, the fusion's zeroVal (number 1): the scalar is d2
    with definition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float,
                              is_cpu=False, stride_order=[0])
        fd.add_output(fd.ops.mul(t0, fd.define_scalar()))
    tensor = torch.rand(15)
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected input 1, d2, to be a scalar but got float tensor of rank 1")):
        fd.execute([tensor, tensor])


def test_constant_sizes_take_numbers_twice_as_nvfusers_tensor_view_builder_makes_them():
    # As nvFuser 0.2.36 printed these inputs (tests/golden/nvfuser/*.log): shape() makes each
    # constant size (1 is the fusion's oneVal), build() casts each to a new constant and makes
    # zeroVal once
    cases = [
        ([[2, 32000]], "d5"),  # softmax_temperature_scalar_small: 0 1 | 2 zero=3 4
        ([[-1, -1, -1]], "i4"),  # vector_input_2023: i0 i1 i2 | zero=3
        ([[1, 2048, 4096], [1, 2048, 4096]], "i12"),  # llama_dropout_residual
        ([[2, 64, 512], [2, 64, 512]], "i13"),  # dropout_residual
    ]
    for shapes, name in cases:
        with FusionDefinition() as fd:
            tensors = [fd.define_tensor(shape=s, contiguity=[None if n == 1 else True for n in s],
                                        dtype=DataType.Float) for s in shapes]
            scalar = fd.define_scalar(dtype=DataType.Int if name[0] == "i" else DataType.Double)
            fd.add_output(fd.ops.mul(tensors[0], scalar))
        inputs = fd.fusion.print_math().split("Outputs:")[0].split()
        assert inputs[-1] == name, (shapes, inputs)
