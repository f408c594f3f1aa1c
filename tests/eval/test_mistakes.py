"""eval.mistakes: disagreements grouped by (gold, predicted) with each judgment's path; failure-pattern tagging with the
fake LM; the ablation report's section."""

import re
import zlib

import pytest

from eval import mistakes as errors
from eval import run
from hiera_dspy.errors import HieraError
from hiera_dspy.metrics.disagreements import disagreement_groups, format_path, judgment_path, report_section


def _query(prompt):
    found = re.search(r"\[\[ ## query ## \]\]\n(.*)", prompt)
    return found.group(1) if found else ""


def _answers(tagger=None):
    """The Judge: Relevant, unparseable for ~1/4 of queries (an error row); delegates for ~1/2 of them."""
    answers = {"label": lambda p: "Maybe" if zlib.crc32(_query(p).encode()) % 4 == 0 else "Relevant",
               "relational_transparency": lambda p: "unclear" if zlib.crc32(_query(p).encode()) % 2 else "clear",
               "lookups": ["tom cruise filmography"], "argument": "Matches: actor. Mismatches: year."}
    return answers | (tagger or {})


@pytest.fixture
def judged(patch_make_lm, tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_RETRY_BASE_DELAY", "0")  # an unparseable label is retried: no backoff sleep here
    patch_make_lm(_answers({"pattern": "specificity over-enforcement", "explanation": "rejected a partial match"}))
    metrics = run.main(["--dataset", "msrd", "--split", "dev", "--method", "hiera", "--limit", "16",
                        "--knowledge", "catalog", "--out", str(tmp_path / "o"), "--max-error-rate", "1"])
    return metrics["run_id"]


def test_groups_and_paths(judged, capsys):
    text = errors.main(["--run", judged])
    lines = text.splitlines()
    assert lines[0] == f"run {judged}: hiera on msrd [dev], knowledge catalog:msrd"
    counts = re.match(r"16 judgments, (\d+) disagreements with gold \((\d+) wrong labels, (\d+) without a label\)",
                      lines[1])
    assert counts and int(counts[1]) == int(counts[2]) + int(counts[3]) and int(counts[2]) and int(counts[3])
    assert f"== gold Irrelevant -> Relevant: {counts[2]} pair" in text  # the fake Judge says Relevant or fails
    assert "== gold Relevant -> (no label):" in text or "== gold Irrelevant -> (no label):" in text
    assert "    cause: error: AdapterParseError" in text
    # directed consultation: each specialist's question from the plan; its own look-ups marked with its role
    assert ('    path: delegated; specialists: query (asked: "fake question for query analyzer"), item (asked: "fake '
            'question for item analyzer"); look-ups: query "tom cruise filmography", item "tom cruise filmography", '
            '"tom cruise filmography" (' in text and 'argument: "Matches: actor. Mismatches: year."' in text)
    assert "    path: decided at triage; specialists: none; look-ups: none" in text
    assert re.search(r'^- msrd:qid:\S+  ".+" / ".+"$', text, re.M)  # query and item title from the dataset
    assert "pattern:" not in text


def test_tagging_with_the_fake_lm(judged):
    text = errors.main(["--run", judged, "--tag"])
    wrong = int(re.search(r"\((\d+) wrong labels", text)[1])
    assert text.count("    pattern: specificity over-enforcement (rejected a partial match)") == min(wrong, 10)
    assert text.endswith(f"failure patterns (paper App. E.2) of the wrong labels shown: specificity "
                         f"over-enforcement {min(wrong, 10)}")


def test_a_failed_tagging_is_said_not_guessed(judged, patch_make_lm):
    patch_make_lm(_answers({"pattern": "cosmic rays"}))
    text = errors.main(["--run", judged, "--tag", "--show", "1"])
    assert "    pattern: (tagging failed) (" in text and "specificity" not in text.split("failure patterns")[0]


def test_unknown_run(judged):
    with pytest.raises(HieraError, match=f"no run 'nope' in .*; latest runs: {judged}"):
        errors.main(["--run", "nope"])


def test_groups_by_gold_and_final_label():
    rows = [{"id": "a", "gold": "R", "label": "I"}, {"id": "b", "gold": "R", "label": "I"},
            {"id": "c", "gold": "I", "label": "R", "human_label": "I"},  # a human decision fixed it
            {"id": "d", "gold": "I", "label": None, "escalated": True},
            {"id": "e", "gold": "R", "label": "R"}, {"id": "f", "gold": None, "label": "R"}]
    groups = disagreement_groups(rows)
    assert [(g, p, [r["id"] for r in rs]) for g, p, rs in groups] == [("R", "I", ["a", "b"]),
                                                                      ("I", "(no label)", ["d"])]
    assert format_path(judgment_path(rows[0])) == "steps: none"
    section = "\n".join(report_section({"m": rows}))
    assert section.startswith("## Error analysis") and "- **m**: 3 of 6 disagree: R → I: 2 (delegated 0, with " \
        "look-ups 0); I → (no label): 1" in section
