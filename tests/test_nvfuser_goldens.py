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
    "matmul_reshape_permute": "nvFuser inserts a SegmenterSet after the expr-eval matmul and "
    "gives the reshape and the permute after it an expr_eval segment each (5 segments, 4 here)",
    "attention_scores_mask": "nvFuser keeps the pointwise producer of the masked softmax out of "
    "the inner_persistent segment (a pointwise segment of its own)",
    "reductions": "nvFuser sends sums over expanded broadcasts to expr_eval and makes one "
    "outer_persistent of a different pair of reductions",
    "rope": "nvFuser cuts the rotary embedding into two resize segments, fusecli into one",
}
NVFUSER_FAILED = {
    "broadcast_add_expanded": "nvFuser raises an internal assert binding the expanded input",
}

_GROUP = re.compile(r"^  ([a-z_]+)\{[\d, ]*\}$")


def nvfuser_schedulers(log: str) -> Counter:
    """The scheduler of each group in nvFuser's ``Segmented_Fusion`` dump."""
    section = log.split("Segmented_Fusion Dump: -- fusion segments:", 1)[1]
    groups = section.split("groups:", 1)[1].split("edges:", 1)[0]
    return Counter(m.group(1) for line in groups.splitlines() if (m := _GROUP.match(line)))


def fusecli_schedulers(name: str) -> Counter:
    (path,) = [p for p in (ROOT / "fusions").iterdir() if p.stem == name]
    (loaded,) = load_path(path, device="cpu")
    segmented = segment_fusion(loaded.fusion, loaded.inputs)
    return Counter(segment.scheduler for segment in segmented.segments)


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
