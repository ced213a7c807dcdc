"""fusecli's segmentation against real nvFuser's, for every corpus fusion.

The goldens in ``tests/golden/nvfuser/`` were printed by nvFuser itself (see their README). A
fusion agrees when its final segments use the same schedulers, as many times each (nvFuser's
``groups:`` list is not in run order). Known divergences are listed with their cause; a listed
fusion that starts to agree fails too, so the list stays true.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fusecli.engines.nvfuser_log import parse_log
from fusecli.load import load_path
from fusecli.segment.segmenter import segment_fusion

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "nvfuser"
OUTCOMES = json.loads((GOLDENS / "outcomes.json").read_text(encoding="utf-8"))

# fusion -> why fusecli's segments differ from nvFuser's (issue 9 closes these).
KNOWN_DIVERGENCES: dict[str, str] = {}
# Fusions whose segments are compared expr by expr, edges included: those MarkAliasesPrepare
# cuts (a SegmenterSet after the seed's matmul, after three reductions kept as broadcasts).
EXPR_LEVEL = ("matmul_reshape_permute", "reductions", "attention_scores_mask")
NVFUSER_FAILED = {  # real nvFuser 0.2.36 failed on these; fusecli runs them (issues to file)
    "llama_rope_cos_sin_2d": "nvFuser raises an internal assert in its BFS (bfs.h:261) while "
    "scheduling the rotary embedding whose cos/sin come in as [seq, head_dim]",
    "sum_expanded_broadcast": "nvFuser raises an internal assert (compiled_kernel.cpp:1394) on "
    "the sum over an expanded input with static sizes",
}

Key = tuple[str, tuple[str, ...]]  # (scheduler, the segment's ops, sorted)


def nvfuser_schedulers(log: str) -> Counter:
    """The scheduler of each final segment in nvFuser's ``Segmented_Fusion`` dump."""
    return Counter(segment.scheduler for segment in parse_log(log).segments)


def nvfuser_groups(log: str) -> tuple[Counter, Counter]:
    """The groups of nvFuser's ``group details`` (scheduler and tensor ops) and its edges."""
    parsed = parse_log(log)
    keys = {s.id: (s.scheduler, tuple(sorted(s.ops))) for s in parsed.segments}
    edges = Counter((keys[source], keys[target]) for source, target, _ in parsed.edges)
    return Counter(keys.values()), edges


# Where the recorded fusions live: the corpus, the 2023-style repros, and the set of fusions at
# LLM-block shapes kept for comparing with nvFuser.
SOURCES = ("fusions", "tests/repros_2023", "tests/nvfuser_corpus")


def source_of(name: str) -> Path:
    (path,) = [
        p for folder in SOURCES for p in (ROOT / folder).iterdir()
        if p.stem == name and p.suffix in (".py", ".yaml")
    ]
    return path


def _segmented(name: str):
    path = source_of(name)
    (loaded,) = load_path(path, device="cpu")
    return segment_fusion(loaded.fusion, loaded.inputs)


def fusecli_schedulers(name: str) -> Counter:
    return Counter(segment.scheduler for segment in _segmented(name).segments)


def fusecli_groups(name: str) -> tuple[Counter, Counter]:
    segmented = _segmented(name)
    keys = {
        s.id: (s.scheduler, tuple(sorted(e.op.value for e in s.exprs)))
        for s in segmented.segments
    }
    edges = Counter((keys[source], keys[target]) for source, target, _ in segmented.edges())
    return Counter(keys.values()), edges


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_segmentation_matches_real_nvfuser(name):
    if name in NVFUSER_FAILED:
        assert OUTCOMES[name] != "ok"
        pytest.skip(NVFUSER_FAILED[name])
    assert OUTCOMES[name] == "ok"
    expected = nvfuser_schedulers((GOLDENS / f"{name}.log").read_text(encoding="utf-8"))
    actual = fusecli_schedulers(name)
    if name in KNOWN_DIVERGENCES:
        assert actual != expected, f"{name} now agrees with nvFuser: drop it from the list"
    else:
        assert actual == expected, f"nvFuser: {dict(expected)}, fusecli: {dict(actual)}"


def test_every_recorded_fusion_has_a_golden():
    recorded = {
        p.stem for folder in SOURCES for p in (ROOT / folder).iterdir()
        if p.suffix in (".py", ".yaml")
    }
    assert recorded == set(OUTCOMES)


@pytest.mark.parametrize("name", EXPR_LEVEL)
def test_segments_have_nvfusers_exprs_and_edges(name):
    groups, edges = nvfuser_groups((GOLDENS / f"{name}.log").read_text(encoding="utf-8"))
    assert fusecli_groups(name) == (groups, edges)


def test_seed_is_the_five_segments_of_the_real_log():
    """The group details nvFuser printed for the seed: permute, the pointwise copy the reshape
    of a permuted tensor needs, matmul, the SegmenterSet MarkAliasesPrepare put after it, and
    the output's reshape and permute (one expr_eval segment: views of the SegmenterSet)."""
    groups, edges = nvfuser_groups(
        (GOLDENS / "matmul_reshape_permute.log").read_text(encoding="utf-8")
    )
    assert groups == Counter({
        ("expr_eval", ("permute",)): 1,
        ("pointwise", ("permute", "reshape")): 1,
        ("expr_eval", ("matmul",)): 1,
        ("expr_eval", ("segment_set",)): 1,
        ("expr_eval", ("permute", "reshape")): 1,
    })
    assert sum(edges.values()) == 4
    assert fusecli_groups("matmul_reshape_permute") == (groups, edges)
