"""The measured table (``fusecli/segment/tuning.py``): a choice per (scheduler, size class)
replaces the knobs of a segment's default params where it is valid at the segment's sizes, the
kernels it makes compute what the reference does, and ``benchmarks/sweep.py --write-table``
writes what the loader reads.

Tables are written to a temporary file and named by ``FUSECLI_TUNING``, as a user would.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from test_codegen import check_on_emulator, define, fusion_of, kernels_of, needs_gxx
from test_heuristics import add, meta, only_segment, rms_norm
from test_inner_outer import layer_norm_backward
from test_sweep import CASES, _case, _fabricated, sweep  # sweep: benchmarks/sweep.py

from fusecli.codegen import Kernel, generate, nvrtc
from fusecli.errors import InputError
from fusecli.segment import tuning
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion
from fusecli.segment.variants import knobs, label, size_class, variant_grid

POINTWISE_2_14 = ("pointwise", "2^14 elements, 4-byte")
ROW_SUM_CLASS = ("reduction", "2^16 elements, inner rows of 2^10, 4-byte")


def _entry(scheduler: str, size: str, chosen: dict, gain: float = 1.5, wins: int = 2,
           segments: int = 2) -> dict:
    """A class of ``sweep.summarize``'s summary whose best variant has the knobs ``chosen``."""
    return dict(scheduler=scheduler, size_class=size, segments=segments, gain=gain, wins=wins,
                best=" ".join(f"{k}={v}" for k, v in sorted(chosen.items())), default="?",
                knobs=chosen)


@pytest.fixture
def use_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Writes a table of the given summary entries and names it in ``FUSECLI_TUNING``."""
    written = []

    def use(*entries: dict) -> Path:
        path = tmp_path / f"table{len(written)}.json"
        document = tuning.table_document(entries, dict(measured=True, device="test"))
        path.write_text(json.dumps(document))  # tuples become lists, as in a real table
        monkeypatch.setenv(tuning.ENV_VAR, str(path))
        written.append(path)
        return path

    return use


def _params(fusion, inputs):
    return only_segment(fusion, inputs).params


def test_the_shipped_table_is_what_its_measurements_show(monkeypatch) -> None:
    """Each choice of the shipped table, recomputed from the kernel times beside it: in its
    class's segments the chosen variant's geometric-mean gain over the default is the stated
    one, at least MIN_GAIN, and it is faster in most of them."""
    monkeypatch.delenv(tuning.ENV_VAR, raising=False)
    shipped = tuning.load(tuning.TABLE)
    assert tuning.active() == shipped
    provenance = shipped.provenance
    if not shipped.choices:
        assert provenance["measured"] is False
        return
    assert provenance["measured"] is True and provenance["device"] and provenance["commit"]
    document = json.loads(tuning.TABLE.read_text(encoding="utf-8"))
    measured = json.loads(tuning.TABLE.with_name(provenance["measurements"]).read_text(
        encoding="utf-8"))["measurements"]
    for choice in document["choices"]:
        times: dict[tuple[str, int], dict[str, float]] = {}
        for m in measured:
            if (m["scheduler"], m["size_class"]) == (choice["scheduler"], choice["size_class"]) \
                    and m["ms"] is not None:
                found = times.setdefault((m["member"], m["segment"]), {})
                found[m["label"]] = m["ms"]
                if m["default"]:
                    found["default"] = m["ms"]
        gains = [t["default"] / t[choice["best"]] for t in times.values()]
        assert len(gains) == choice["segments"]
        gain = math.exp(sum(math.log(g) for g in gains) / len(gains))
        assert gain == pytest.approx(choice["gain"], abs=0.002) and gain >= tuning.MIN_GAIN
        assert 2 * sum(g > 1 for g in gains) > len(gains)
        assert shipped.choices[(choice["scheduler"], choice["size_class"])] == {
            k: tuning._frozen(v) for k, v in choice["knobs"].items()}


def test_a_choice_changes_the_params_of_its_size_class_only(use_table, monkeypatch) -> None:
    small = [meta(64, 256), meta(64, 256)]  # 2^14 elements
    large = [meta(64, 512), meta(64, 512)]  # 2^15
    default_small, default_large = _params(add(*small), small), _params(add(*large), large)
    use_table(_entry(*POINTWISE_2_14, dict(threads=512, unroll=4, vectorize=2)))
    fusion = add(*small)
    segment = only_segment(fusion, small)
    # two lanes are not the default's widest: max_vectorize follows, as in the sweep's grid
    assert segment.params == replace(default_small, threads=512, unroll=4, vectorize=2,
                                     max_vectorize=2)
    kernel = generate(segment, RuntimeInfo(fusion, small), small)
    assert isinstance(kernel, Kernel) and kernel.block == (512, 1, 1)
    assert _params(add(*large), large) == default_large
    monkeypatch.setenv(tuning.ENV_VAR, "off")
    assert _params(add(*small), small) == default_small


def test_codegen_applies_the_table_where_the_segment_was_made_without_sizes(use_table) -> None:
    x = meta(64, 256)
    fusion = fusion_of(lambda fd: fd.add_output(fd.ops.relu(define(fd, x)))).fusion
    use_table(_entry(*POINTWISE_2_14, dict(threads=128, unroll=2, vectorize=4)))
    segment = replace(only_segment(fusion, [x]), params=None)
    kernel = generate(segment, RuntimeInfo(fusion, [x]), [x])
    assert isinstance(kernel, Kernel) and kernel.block == (128, 1, 1)
    assert "unroll=2" in kernel.params


@pytest.mark.parametrize("chosen", [
    dict(threads=512, rows_per_block=1, vectorize=4, persistent=True),  # 512 > 256 vectors
    dict(threads=8, rows_per_block=16, vectorize=4, persistent=True),  # 32 vectors a thread
    dict(threads=128, rows_per_block=1, vectorize=8, persistent=True),  # wider than 16 bytes
    dict(threads=64, rows_per_block=2, vectorize=4, persistent=True),  # 64 threads share none
    dict(threads=64),  # not every knob
], ids=lambda chosen: " ".join(f"{k}={v}" for k, v in chosen.items()))
def test_a_choice_not_valid_at_the_segments_sizes_keeps_the_default(use_table, chosen) -> None:
    x = meta(64, 1024)
    fusion = fusion_of(lambda fd: fd.add_output(fd.ops.sum(define(fd, x), dims=[1]))).fusion
    default = _params(fusion, [x])
    use_table(_entry(*ROW_SUM_CLASS, chosen))
    assert _params(fusion, [x]) == default


def test_a_valid_reduction_choice_derives_its_slots(use_table) -> None:
    x = meta(64, 1024)
    fusion = fusion_of(lambda fd: fd.add_output(fd.ops.sum(define(fd, x), dims=[1]))).fusion
    default = _params(fusion, [x])
    use_table(_entry(*ROW_SUM_CLASS, dict(threads=64, rows_per_block=1, vectorize=2,
                                          persistent=False)))
    assert _params(fusion, [x]) == replace(default, threads=64, rows_per_block=1, vectorize=2,
                                           persistent=False, slots=8)


def test_lanes_that_do_not_divide_the_row_are_skipped_in_the_same_class(use_table) -> None:
    even, odd = [meta(64, 256)] * 2, [meta(64, 258)] * 2  # both 2^14 elements
    default_odd = _params(add(*odd), odd)
    assert default_odd.vectorize == 2
    use_table(_entry(*POINTWISE_2_14, dict(threads=512, unroll=1, vectorize=4)))
    assert _params(add(*even), even).threads == 512
    assert _params(add(*odd), odd) == default_odd


def _fusions():
    x, w = torch.randn(16, 256), torch.randn(256)
    rows = torch.randn(64, 96)
    yield "pointwise", fusion_of(lambda fd: fd.add_output(
        fd.ops.sigmoid(define(fd, x)))).fusion, [x]
    yield "inner_persistent", rms_norm(x, w), [x, w]
    yield "row sum", fusion_of(lambda fd: fd.add_output(
        fd.ops.sum(define(fd, rows), dims=[1]))).fusion, [rows]
    yield "column sum", fusion_of(lambda fd: fd.add_output(
        fd.ops.sum(define(fd, rows), dims=[0]))).fusion, [rows]
    yield "inner_outer", *layer_norm_backward(32, 128)


FUSIONS = {name: (fusion, inputs) for name, fusion, inputs in _fusions()}


def _chosen_variants(fusion, inputs, pick: int) -> dict[tuple[str, str], object]:
    """Per kernel segment's (scheduler, size class): the variant at ``pick`` in its grid."""
    segmented = segment_fusion(fusion, inputs)
    sizes = RuntimeInfo(segmented.fusion, inputs)
    return {(s.scheduler, size_class(s.candidate, s.params, sizes)):
            variant_grid(s.params, s.scheduler)[pick]
            for s in segmented.segments if s.params is not None}


@needs_gxx
@pytest.mark.parametrize("pick", [-1, 1], ids=["last variant", "second variant"])
@pytest.mark.parametrize("name", FUSIONS)
def test_kernels_of_a_choice_compile_and_match_the_reference(use_table, monkeypatch, name,
                                                             pick) -> None:
    fusion, inputs = FUSIONS[name]
    monkeypatch.setenv(tuning.ENV_VAR, "off")
    chosen = _chosen_variants(fusion, inputs, pick)
    assert chosen, f"{name}: no kernel segment"
    use_table(*(_entry(scheduler, size, knobs(params)) for (scheduler, size), params
                in chosen.items()))
    kernels = [(s, k) for s, k in kernels_of(fusion, inputs) if s.params is not None]
    assert sorted(label(s.params) for s, _ in kernels) == sorted(map(label, chosen.values()))
    assert check_on_emulator(fusion, inputs) == len(kernels)
    for _, kernel in kernels if nvrtc.available() else ():
        assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


def test_a_transpose_choice_of_tiles_is_read_back_as_a_tuple(use_table, monkeypatch) -> None:
    a, b = torch.empty(512, 1024, device="meta").t(), torch.empty(1024, 512, device="meta")
    fusion = add(a, b)
    monkeypatch.setenv(tuning.ENV_VAR, "off")
    segment = only_segment(fusion, [a, b])
    sizes = RuntimeInfo(fusion, [a, b])
    variant = next(v for v in variant_grid(segment.params, "transpose") if v.tiles == (32,))
    use_table(_entry("transpose", size_class(segment.candidate, segment.params, sizes),
                     knobs(variant)))
    tuned = only_segment(fusion, [a, b])
    assert tuned.params == variant and tuned.params.tiles == (32,)
    kernel = generate(tuned, sizes, [a, b])
    assert isinstance(kernel, Kernel) and "tiles of 32x32" in kernel.heuristics
    if nvrtc.available():
        assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


def test_fd_execute_on_the_cpu_matches_eager_torch_under_a_table(use_table) -> None:
    x, w = torch.randn(16, 256), torch.randn(256)

    def body(fd):
        a, b = define(fd, x), define(fd, w)
        fd.add_output(fd.ops.mul(fd.ops.sigmoid(a), fd.ops.broadcast_in_dim(
            b, shape=[16, 256], broadcast_dims=[1])))
        fd.add_output(fd.ops.sum(a, dims=[1]))

    fd = fusion_of(body)
    chosen = _chosen_variants(fd.fusion, [x, w], -1)
    assert chosen  # one reduction kernel, the pointwise output fused into it
    use_table(*(_entry(scheduler, size, knobs(params)) for (scheduler, size), params
                in chosen.items()))
    product, total = fd.execute([x, w])
    torch.testing.assert_close(product, torch.sigmoid(x) * w)
    torch.testing.assert_close(total, x.sum(1))


@pytest.mark.parametrize(("gain", "wins", "segments", "expected"), [
    (1.5, 2, 3, True), (tuning.MIN_GAIN, 2, 3, True), (1.02, 3, 3, False), (1.5, 1, 2, False),
])
def test_a_class_is_chosen_at_the_threshold_gain_winning_in_most_segments(
        gain, wins, segments, expected) -> None:
    entry = _entry(*POINTWISE_2_14, dict(threads=512), gain, wins, segments)
    assert tuning.chosen(entry) is expected


def test_write_table_writes_what_the_loader_reads_back(tmp_path, monkeypatch) -> None:
    case = _case(*CASES["pointwise"])
    fast = sweep.sweep_segment(case, _fabricated)  # threads=512 unroll=4 the best, 1.19x
    slow = sweep.SegmentSweep("member", 1, "pointwise", "2^20 elements, 2-byte", "a",
                              {"a": {}, "b": {}}, {}, {"a": 1.0, "b": 0.99})  # 1.01x
    args = argparse.Namespace(population=2, seed=7, min_elements=4096, iters=5,
                              schedulers=None, commit="abc123", dry_run=False, out=None)
    path = tmp_path / "tuning.json"
    document = sweep.write_table(path, args, "NVIDIA H200", [fast, slow], [])
    table = tuning.load(path)
    assert table.choices == {POINTWISE_2_14: {"threads": 512, "unroll": 4, "vectorize": 4}}
    assert table.provenance["device"] == "NVIDIA H200" and table.provenance["seed"] == 7
    assert table.provenance["commit"] == "abc123" and table.provenance["population"] == 2
    assert table.provenance["min_gain"] == tuning.MIN_GAIN
    assert [c["size_class"] for c in document["defaults_kept"]] == ["2^20 elements, 2-byte"]
    measured = json.loads((tmp_path / "tuning.measurements.json").read_text())
    assert table.provenance["measurements"] == "tuning.measurements.json"
    assert len(measured["measurements"]) == len(fast.params) + 2
    monkeypatch.setenv(tuning.ENV_VAR, str(path))
    tuned = sweep.REGISTRY["pointwise"].params_at(case.segment.candidate, case.sizes)
    assert (tuned.threads, tuned.unroll, tuned.vectorize) == (512, 4, 4)


def test_a_table_that_is_not_one_is_an_input_error(tmp_path, monkeypatch) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 1, "choices": [{"scheduler": "pointwise"}]}')
    for path in (broken, tmp_path / "absent.json"):
        monkeypatch.setenv(tuning.ENV_VAR, str(path))
        with pytest.raises(InputError, match="not a tuning table") as error:
            tuning.active()
        assert str(path) in str(error.value)


def test_a_table_of_some_schedulers_keeps_the_others_from_the_table_there(tmp_path) -> None:
    """``--write-table`` with ``--schedulers reduction`` replaces the reduction classes and
    keeps the pointwise ones, their measurements and where they came from."""
    fast = sweep.sweep_segment(_case(*CASES["pointwise"]), _fabricated)
    args = argparse.Namespace(population=2, seed=7, min_elements=4096, iters=5,
                              schedulers=None, commit="abc123", dry_run=False, out=None)
    path = tmp_path / "tuning.json"
    sweep.write_table(path, args, "NVIDIA H100", [fast], [])
    outer = "2^22 elements, outer rows of 2^12, 4-byte"
    knobs_a, knobs_b = dict(groups=0, unroll=0, waves=0), dict(groups=16, unroll=0, waves=0)
    column = sweep.SegmentSweep("member", 0, "reduction", outer, "a", {"a": knobs_a,
                                "b": knobs_b}, {}, {"a": 1.0, "b": 0.8})
    again = argparse.Namespace(**{**vars(args), "schedulers": "reduction", "seed": 8,
                                  "commit": "def456"})
    sweep.write_table(path, again, "NVIDIA H200", [column], [])
    table = tuning.load(path)
    assert table.choices == {POINTWISE_2_14: {"threads": 512, "unroll": 4, "vectorize": 4},
                             ("reduction", outer): knobs_b}
    assert table.provenance["device"] == "NVIDIA H200" and table.provenance["seed"] == 8
    kept = table.provenance["kept"]
    assert kept["device"] == "NVIDIA H100" and kept["commit"] == "abc123"
    assert kept["schedulers_kept"] == ["pointwise"]
    measured = json.loads((tmp_path / "tuning.measurements.json").read_text())["measurements"]
    assert len(measured) == len(fast.params) + 2
    assert {m["scheduler"] for m in measured} == {"pointwise", "reduction"}
    third = argparse.Namespace(**{**vars(again), "seed": 9, "commit": "789abc"})
    sweep.write_table(path, third, "NVIDIA H200", [column], [])  # reduction again
    twice = tuning.load(path).provenance["kept"]
    assert twice["commit"] == "def456" and twice["kept"]["commit"] == "abc123"
    assert twice["schedulers_kept"] == ["pointwise"]
