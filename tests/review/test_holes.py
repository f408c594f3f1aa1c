"""eval.holes: the holes are exactly the unjudged pairs of each run's top k (union over runs, each judged once),
original judgments never change, retrieval metrics come from ir_measures, Kendall's tau matches a hand count."""

from __future__ import annotations

import json
import math

import pytest
from labelling_helpers import ANSWERS, holes_argv, write

from eval import holes as eval_holes
from hiera_dspy.benchmark.pool import pool_holes
from hiera_dspy.conclude.retrieval import evaluate, kendall_tau
from hiera_dspy.data.trec import read_qrels, read_run
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import get_scheme

MSRD = get_scheme("msrd")
HOLES = [("q1", "d2"), ("q1", "d3"), ("q2", "d5"), ("q3", "d6"), ("q1", "d4"), ("q2", "d6"), ("q4", "d7")]


def test_holes_are_the_unjudged_top_k_of_any_run_each_once(bench):
    runs = {"a": read_run(bench["runs"][0]), "b": read_run(bench["runs"][1])}
    qrels = read_qrels(bench["qrels"], MSRD)
    assert pool_holes(runs, qrels, 3) == HOLES  # d4 is 4th in run a but 2nd in run b; d1, d2, d8 judged
    assert pool_holes(runs, qrels, 1) == [("q3", "d6"), ("q1", "d3"), ("q2", "d5"), ("q4", "d7")]
    assert pool_holes(runs, {**qrels, **dict.fromkeys(HOLES, 0)}, 3) == []


def test_kendall_tau_against_a_hand_count():
    # 4 systems, one swapped pair (B, C) of 6: (5 concordant - 1 discordant) / 6
    assert kendall_tau([0.1, 0.2, 0.3, 0.4], [0.1, 0.3, 0.2, 0.4]) == pytest.approx(4 / 6)
    assert kendall_tau([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]) == pytest.approx(-1.0)
    assert kendall_tau([0.5], [0.7]) is None


def test_retrieval_metrics_by_hand(bench):
    lines = read_run(bench["runs"][0])
    qrels = {("q1", "d1"): 1, ("q1", "d3"): 1, ("q2", "d2"): 0}
    m = evaluate(lines, qrels, MSRD, depth=3)
    # q1: relevant at ranks 1 and 3 of 2 relevant; q2: no relevant document (nDCG 0); q3 has no judgment: not averaged
    ndcg_q1 = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert m["ndcg@3"] == pytest.approx((ndcg_q1 + 0) / 2)
    assert m["p@3"] == pytest.approx((2 / 3 + 0) / 2)
    assert m["queries"] == 2
    assert m["hole_rate"] == pytest.approx(3 / 6)  # q1: d2; q2: d5; q3: d6, of 3 + 2 + 1 shown


def test_fills_holes_keeps_originals_and_summarises(bench, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    summary = eval_holes.main(holes_argv(bench, out))
    qrels_lines = (out / "qrels.txt").read_text().splitlines()
    assert qrels_lines[:3] == open(bench["qrels"]).read().splitlines()  # originals first, unchanged
    assert qrels_lines[3:] == ["q1 0 d2 1", "q1 0 d3 1", "q2 0 d5 0", "q3 0 d6 1", "q1 0 d4 1", "q2 0 d6 0"]
    new = [json.loads(line) for line in (out / "new.jsonl").read_text().splitlines()]
    assert [(r["query_id"], r["item_id"]) for r in new] == HOLES
    escalated = new[-1]
    assert (escalated["label"], escalated["escalated"], escalated["confidence"], escalated["confidence_source"]) == \
        (None, True, 0.0, "dream-agreement")
    assert new[3]["confidence"] == 0.75 and new[0]["confidence"] == 1.0 and new[0]["method"] == "dream"
    assert summary["holes"] == 7 and summary["filled"] == 6 and summary["escalated"] == 1
    a, b = summary["runs"]
    assert set(a) == {"run", "hole_rate_before", "hole_rate_after", "ndcg@3_before", "ndcg@3_after", "p@3_before",
                      "p@3_after", "queries_before", "queries_after", "estimates"}
    assert (a["run"], a["hole_rate_before"], a["hole_rate_after"]) == ("a", pytest.approx(4 / 6), 0.0)
    assert (b["run"], b["hole_rate_before"], b["hole_rate_after"]) == ("b", pytest.approx(5 / 7), pytest.approx(1 / 7))
    # run a after: q1 all three relevant (1.0), q2 none relevant (0.0), q3 d6 relevant of two relevant documents;
    # a does not answer q4 (run b does): it counts 0 over the benchmark's 4 queries, as in the conclusions
    assert a["ndcg@3_after"] == pytest.approx((1 + 0 + 1 / (1 + 1 / math.log2(3))) / 4)
    assert "kendall_tau" in summary and json.loads((out / "summary.json").read_text()) == summary
    report = (out / "report.md").read_text()
    assert "| a | 0.667 | 0.000 |" in report and "Kendall's tau" in report


def test_a_second_run_resumes_and_judges_nothing(bench, patch_make_lm, tmp_path, monkeypatch):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    eval_holes.main(holes_argv(bench, out, "--limit", "3"))
    import hiera_dspy.runs.runner as runner

    judged = []
    real = runner.judge_one
    monkeypatch.setattr(runner, "judge_one", lambda program, pair, position=None: judged.append(pair.id) or
                        real(program, pair, position))
    summary = eval_holes.main(holes_argv(bench, out))
    assert judged == ["q3:d6", "q1:d4", "q2:d6", "q4:d7"] and summary["holes"] == 7


@pytest.mark.parametrize("which, line, fragment", [
    ("run", "q9 Q0 d1 1 1.0 a", "qid 'q9' is not in the topics"),
    ("run", "q1 Q0 d99 1 1.0 a", "docid 'd99' is not in the corpus"),
    ("run", "q1 Q0 d1 1.0 a", "expected 6 columns"),
    ("qrels", "q1 0 d3 2", "column 4 (grade): 2 is outside the scheme 'msrd'"),
])
def test_bad_input_names_file_and_line_or_is_skipped(bench, patch_make_lm, tmp_path, which, line, fragment):
    patch_make_lm(ANSWERS)
    target = bench["runs"][0] if which == "run" else bench["qrels"]
    good = open(target).read()
    write(tmp_path / "bad", [*good.splitlines(), line])
    (tmp_path / "bad").replace(target)
    n = len(good.splitlines()) + 1
    with pytest.raises(RequestError) as err:
        eval_holes.main(holes_argv(bench, tmp_path / "out"))
    assert f"{target}, line {n}: " in str(err.value) and fragment in str(err.value)
    assert str(err.value).endswith("--on-bad-row skip")  # and says what to do
    summary = eval_holes.main(holes_argv(bench, tmp_path / "out", "--on-bad-row", "skip"))
    assert summary["skipped_rows"] == 1 and summary["holes"] == 7
