"""Rejections as data: a code, nvFuser's exact words, and the evidence.

nvFuser's words are checked against what nvFuser itself printed: every rejection in the
recorded logs (``tests/golden/nvfuser/``) by a scheduler fusecli models must be the text of a
``Reason``, fields aside (nvFuser names tensors with their domains).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.cli.main import cli, register
from fusecli.engines.nvfuser_log import parse_log
from fusecli.load import discover, load_path
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import REGISTRY
from fusecli.segment.segmenter import segment_fusion

register()
ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "nvfuser"
CORPORA = [ROOT / "fusions", ROOT / "tests" / "repros_2023"]


def test_codes_are_unique_and_texts_have_their_fields():
    assert len({r.code for r in Reason}) == len(Reason)
    rejection = Rejection.of(Reason.MUST_BE_FUSION_INPUT, tensor="T3", op="slice")
    assert rejection.text == "T3, input of slice must be fusion input."
    with pytest.raises(ValueError, match="needs evidence"):
        Rejection.of(Reason.UNMAPPED_REDUCTIONS, first="T2")


@pytest.mark.parametrize("log", sorted(GOLDENS.glob("*.log")), ids=lambda p: p.stem)
def test_every_reason_nvfuser_printed_is_one_of_fusecli_reasons(log):
    for candidate in parse_log(log.read_text(encoding="utf-8")).candidates:
        for verdict in candidate.verdicts:
            if verdict.accepted or verdict.scheduler not in REGISTRY:
                continue  # cutlass, communication, greedy: schedulers fusecli does not model
            assert verdict.code, f"{verdict.scheduler}: {verdict.reason!r} is no fusecli reason"


def _verdicts(profile: str):
    for path in discover(CORPORA):
        for loaded in load_path(path, device="cpu"):
            segmented = segment_fusion(
                loaded.fusion, loaded.inputs, profile=profile, keep_log=True
            )
            for entry in segmented.log:
                yield from entry.verdicts


@pytest.mark.parametrize("profile", ["nvfuser", "nvfuser-2024", "nvfuser-2023"])
def test_every_rejection_has_a_code_and_its_text_comes_from_its_evidence(profile):
    rejections = [v for v in _verdicts(profile) if not v.accepted]
    assert rejections
    for verdict in rejections:
        reason = Reason[verdict.code.upper()]
        assert verdict.reason == reason.text(verdict.facts)
        assert set(reason.fields) <= set(verdict.facts)


def test_evidence_names_the_offending_tensor_and_op():
    # issue #1541 before the resize scheduler: the slice reads neg's output, no segment input
    (loaded,) = load_path(ROOT / "tests" / "repros_2023" / "issue_1541_slice.py", device="cpu")
    segmented = segment_fusion(loaded.fusion, loaded.inputs, profile="nvfuser-2024",
                               keep_log=True)
    promotion = [v for e in segmented.log for v in e.verdicts
                 if v.code == "must_be_fusion_input"]
    assert promotion
    facts = promotion[0].facts
    assert facts["op"] == "slice" and facts["tensor"].startswith("T")
    assert facts["producer"] in ("neg", "cast")


def test_json_decision_log_has_codes_and_evidence():
    result = CliRunner().invoke(
        cli, ["explain-segmentation", str(ROOT / "fusions" / "attention_scores_mask.py"),
              "--json"],
    )
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.output)["fusions"]
    self_mapping = [e for e in record["log"] if e["code"] == "self_mapping"]
    assert self_mapping, "the causal mask's iota broadcasts meet in one candidate"
    assert self_mapping[0]["reason"] == "Iter domain graph check failed!"
    assert self_mapping[0]["evidence"]["tensor"].startswith("T")
    accepted = [e for e in record["log"] if e["accepted"]]
    assert all(e["code"] is None for e in accepted)
