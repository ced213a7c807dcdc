"""fusecli's segmentation against real nvFuser's, for every corpus fusion.

The goldens in ``tests/golden/nvfuser/`` were printed by nvFuser itself (see their README). A
fusion agrees when its final segments use the same schedulers, as many times each (nvFuser's
``groups:`` list is not in run order). Known divergences are listed with their cause; a listed
fusion that starts to agree fails too, so the list stays true.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from fusecli.load import load_path
from fusecli.segment.segmenter import segment_fusion

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "nvfuser"
OUTCOMES = json.loads((GOLDENS / "outcomes.json").read_text(encoding="utf-8"))

# fusion -> why fusecli's segments differ from nvFuser's (issue 9 closes these).
KNOWN_DIVERGENCES = {
    "attention_scores_mask": "nvFuser keeps the pointwise producer of the masked softmax out of "
    "the inner_persistent segment (a pointwise segment of its own)",
    "rope": "nvFuser cuts the rotary embedding into two resize segments, fusecli into one",
}
# Fusions whose segments are compared expr by expr, edges included: those MarkAliasesPrepare
# cuts (a SegmenterSet after the seed's matmul, after three reductions kept as broadcasts).
EXPR_LEVEL = ("matmul_reshape_permute", "reductions")
NVFUSER_FAILED = {
    "broadcast_add_expanded": "nvFuser raises an internal assert binding the expanded input",
}

_GROUP = re.compile(r"^  ([a-z_]+)\{[\d, ]*\}$")


def nvfuser_schedulers(log: str) -> Counter:
    """The scheduler of each group in nvFuser's ``Segmented_Fusion`` dump."""
    section = log.split("Segmented_Fusion Dump: -- fusion segments:", 1)[1]
    groups = section.split("groups:", 1)[1].split("edges:", 1)[0]
    return Counter(m.group(1) for line in groups.splitlines() if (m := _GROUP.match(line)))


_EDGE = re.compile(r"^  e\{ [a-z_]+\{([\d, ]*)\} -> [a-z_]+\{([\d, ]*)\}\(")
_EXPR_ID = re.compile(r"^\((\d+)\)$")
_LISTED = re.compile(r"^  \S")  # a group's output listed before its exprs
# nvFuser's printed op -> fd.ops name (reductions by their op =, binary ops by their operator)
_CALLS = {"Set.Permute": "permute", "Set": "set", "SegmenterSet": "segment_set",
          "reshape": "reshape", "matmul": "matmul", "broadcast": "broadcast", "expand": "expand"}
_REDUCTIONS = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}
_INFIX = {"-": "sub", "+": "add", "*": "mul", "/": "div", ">": "gt", "<": "lt"}

Key = tuple[str, tuple[str, ...]]  # (scheduler, the segment's ops, sorted)


def nvfuser_op(text: str) -> str:
    """The fd.ops name of one expr as nvFuser prints it (``T5 = matmul(T2, T8)``)."""
    definition = text.split("=", 1)[1].strip()
    call = re.match(r"([\w.]+)\(", definition)
    if call and call.group(1).startswith("__to_"):
        return "cast"
    if call and call.group(1) == "reduction":
        return _REDUCTIONS[re.search(r"op = (\w+)", definition).group(1)]
    if call:
        return _CALLS[call.group(1)]
    return _INFIX[definition.splitlines()[1].split()[0]]


def nvfuser_groups(log: str) -> tuple[Counter, Counter]:
    """The groups of nvFuser's ``group details`` (scheduler and tensor ops) and its edges."""
    section = log.split("Segmented_Fusion Dump: -- fusion segments:", 1)[1]
    details = section.split("group details:", 1)[1].split("} //Segmented_Fusion", 1)[0]
    by_ids: dict[frozenset[str], Key] = {}
    for block in details.split("g{(")[1:]:
        scheduler, body = block.split(")", 1)
        ops, ids, lines = [], set(), []
        for line in body.split("outputs:", 1)[1].splitlines():
            if match := _EXPR_ID.match(line):
                ids.add(match.group(1))
                if lines[0].startswith("T"):  # scalar exprs (i38 = i1 * i0;) are no segment op
                    ops.append(nvfuser_op("\n".join(lines)))
                lines = []
            elif line.strip() and not _LISTED.match(line) and line != "}":
                lines.append(line)
        by_ids[frozenset(ids)] = (scheduler, tuple(sorted(ops)))
    edges = Counter()
    for line in section.split("edges:", 1)[1].split("group details:", 1)[0].splitlines():
        if match := _EDGE.match(line):
            source, target = (frozenset(g.replace(" ", "").split(",")) for g in match.groups())
            edges[(by_ids[source], by_ids[target])] += 1
    return Counter(by_ids.values()), edges


def _segmented(name: str):
    (path,) = [p for p in (ROOT / "fusions").iterdir() if p.stem == name]
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


def test_every_corpus_fusion_has_a_golden():
    corpus = {p.stem for p in (ROOT / "fusions").iterdir() if p.suffix in (".py", ".yaml")}
    assert corpus == set(OUTCOMES)


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
