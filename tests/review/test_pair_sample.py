"""The three steps with --sample-unit pair on the tiny fixture: eval.holes draws single holes into the run (seeded,
each hole's probability kept), a person decides them in sample order (the review page serves them first, machine
label hidden; eval.escalations --labels), and the same command reports every system's and pair's estimate with
the unit named."""

from __future__ import annotations

import json

import pytest
from labelling_helpers import ANSWERS, holes_argv, open_store, write

from eval import escalations as eval_escalations
from eval import holes as eval_holes
from hiera_dspy.errors import RequestError
from hiera_dspy.review.pair_sample import read_pair_sample
from hiera_dspy.review.session import Review

PAIRS = ["--human-sample", "2", "--sample-seed", "3", "--sample-unit", "pair", "--sample", "weighted"]


def test_pair_sample_draws_serves_and_concludes(bench, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    first = eval_holes.main(holes_argv(bench, out, *PAIRS))
    s = first["human_sample"]
    assert (s["unit"], s["method"], s["judgments"], s["decided"], s["remaining"]) == ("pair", "weighted", 2, 0, 2)
    run_id = first["run_id"]
    sample = read_pair_sample(open_store().path, run_id)
    assert sample is not None and len(sample.order) == 2 and abs(sum(sample.probabilities.values()) - 1) < 1e-9
    listed = [json.loads(line) for line in (out / "sample.jsonl").read_text().splitlines()]
    assert [r["id"] for r in listed] == sample.order and all(r["probability"] > 0 for r in listed)
    payload = Review(open_store(), run_id, budget=0).payload()
    assert [i["id"] for i in payload["items"][:2]] == sample.order
    assert all(i["hidden"] and i["machine_label"] is None for i in payload["items"][:2])
    e = first["runs"][0]["estimates"]["ndcg@3"]
    assert e["unit"] == "pair" and e["n"] == 0 and e["ci"][1] > e["ci"][0]  # nothing decided: the holes' range
    path = write(tmp_path / "human.jsonl", [json.dumps({"id": i, "label": "Relevant"}) for i in sample.order])
    eval_escalations.main(["--run", run_id, "--labels", path, "--who", "ana"])
    summary = eval_holes.main(holes_argv(bench, out))  # the same command: the sample is kept
    assert summary["human_sample"]["decided"] == 2 and summary["conclusions"]["unit"] == "pair"
    e = summary["runs"][0]["estimates"]["ndcg@3"]
    assert e["n"] == 2 and e["fixed_n"] is not None and e["ci"][0] <= e["ppi"] <= e["ci"][1]
    assert e["sequence"][0] <= e["sequence"][1] and e["ci"][1] - e["ci"][0] > 0
    assert {(d["a"], d["b"], d["measure"]) for d in summary["differences"]} == {("a", "b", "ndcg@3"),
                                                                               ("a", "b", "p@3")}
    report = (out / "report.md").read_text()
    assert "single holes (--sample-unit pair)" in report and "2 judgments decided" in report


def test_pair_sample_is_never_redrawn(bench, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    eval_holes.main(holes_argv(bench, out, *PAIRS))
    with pytest.raises(RequestError, match="never redrawn; this request differs in --sample-seed"):
        eval_holes.main(holes_argv(bench, out, "--human-sample", "2", "--sample-seed", "4", "--sample-unit", "pair",
                                   "--sample", "weighted"))


def test_plan_names_both_units_in_judgments(bench, patch_make_lm, tmp_path, capsys):
    from eval import plan as eval_plan

    patch_make_lm(ANSWERS)
    run_id = eval_holes.main(holes_argv(bench, tmp_path / "filled"))["run_id"]
    capsys.readouterr()
    planned = eval_plan.main(["--run", run_id, "--width", "0.3", "--draws", "5"])
    assert planned["units"]["cheaper"] in ("pair", "query") and planned["units"]["ratio"] > 0
    assert set(planned["pair"]["designs"]) == {"random", "weighted", "active"}
    line = planned["pair"]["designs"]["weighted"][0]
    assert 1 <= line["n_width"] <= planned["pair"]["holes"]
    text = capsys.readouterr().out
    assert "== in judgments" in text and "Cheaper for this benchmark" in text
