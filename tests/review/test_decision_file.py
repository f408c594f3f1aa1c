"""A decisions file is a transaction: checked whole, applied all or nothing, a repeated decision stored once, and the
message names the command that fits the run (eval.holes for a holes run)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from labelling_helpers import ANSWERS, holes_argv, open_store, write

from eval import escalations as eval_escalations
from eval import holes as eval_holes
from hiera_dspy.errors import HieraError


def _decisions(run_id):
    db = sqlite3.connect(open_store().path)
    try:
        return db.execute("SELECT pair_id, label, who FROM decisions WHERE run_id=? ORDER BY rowid",
                          (run_id,)).fetchall()
    finally:
        db.close()


def test_a_bad_line_stores_nothing_and_names_every_problem(labelled, tmp_path):
    run_id, out = labelled
    qrels_before = (out / "qrels.txt").read_text()
    bad = write(tmp_path / "bad.jsonl", [json.dumps({"id": "p4", "label": "Bad", "who": "cy"}),
                                         json.dumps({"id": "nope", "label": "Good"}),
                                         "{not json",
                                         json.dumps({"id": "p1", "label": "Meh"}),
                                         json.dumps({"id": "p4", "label": "Good"})])
    with pytest.raises(HieraError) as info:
        eval_escalations.main(["--run", run_id, "--labels", bad])
    message = str(info.value)
    assert message.startswith(f"{bad}: 4 bad line(s), nothing was recorded: line 2: pair 'nope' is not in run")
    assert "line 3: not valid JSON" in message and 'line 4: field "label"' in message
    assert "line 5: pair 'p4' is decided 'Bad' on line 1, 'Good' here" in message
    assert _decisions(run_id) == [] and (out / "qrels.txt").read_text() == qrels_before  # line 1 not applied


def test_the_same_file_twice_stores_each_decision_once_and_a_change_is_kept(labelled, tmp_path, capsys):
    run_id, out = labelled
    decisions = write(tmp_path / "human.jsonl", [json.dumps({"id": "p4", "label": "Bad", "who": "cy"}),
                                                 json.dumps({"id": "p2", "label": "Bad", "who": "cy"})])
    eval_escalations.main(["--run", run_id, "--labels", decisions])
    first = capsys.readouterr().out
    assert f"recorded 2 human decisions in run {run_id};" in first and "eval.run" not in first
    eval_escalations.main(["--run", run_id, "--labels", decisions])
    assert "recorded 0 human decisions" in capsys.readouterr().out
    assert _decisions(run_id) == [("p4", "Bad", "cy"), ("p2", "Bad", "cy")]
    changed = write(tmp_path / "changed.jsonl", [json.dumps({"id": "p4", "label": "Good", "who": "dee"}),
                                                 json.dumps({"id": "p2", "label": "Bad", "who": "dee"})])
    eval_escalations.main(["--run", run_id, "--labels", changed])
    said = capsys.readouterr().out
    assert "recorded 1 human decisions" in said and "(1 unchanged: the same label was stored already)" in said
    assert _decisions(run_id)[-1] == ("p4", "Good", "dee") and len(_decisions(run_id)) == 3
    assert "q4 0 d4 1" in (out / "qrels.txt").read_text()


def test_a_holes_run_is_told_to_rerun_eval_holes(bench, patch_make_lm, tmp_path, capsys):
    patch_make_lm(ANSWERS)
    run_id = eval_holes.main(holes_argv(bench, tmp_path / "filled"))["run_id"]
    capsys.readouterr()
    decisions = write(tmp_path / "h.jsonl", [json.dumps({"id": "q4:d7", "label": "Relevant"})])
    eval_escalations.main(["--run", run_id, "--labels", decisions])
    said = capsys.readouterr().out
    assert "python -m eval.holes" in said and "eval.run" not in said and f"--run-id {run_id}" in said


def test_the_review_page_path_stores_a_repeated_click_once(labelled):
    from hiera_dspy.review.session import Review

    run_id, _ = labelled
    review = Review(open_store(), run_id, budget=0, who="ana")
    assert review.decide("p4", "Good", "ana")["unchanged"] is False
    again = review.decide("p4", "Good", "bo")
    assert again["unchanged"] is True and again["decision"]["who"] == "ana"  # the stored decision, kept as it was
    assert review.decide("p4", "Bad", "bo")["unchanged"] is False
    assert _decisions(run_id) == [("p4", "Good", "ana"), ("p4", "Bad", "bo")]
