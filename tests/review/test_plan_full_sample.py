"""`hiera-dspy plan` on a holes run (before and after labelling), and a human sample of every query: the exact value,
no interval, no crash, and a run broken by it before recovers when the command is rerun."""

from __future__ import annotations

import json

import pytest
from labelling_helpers import ANSWERS, holes_argv, write

from eval import escalations as eval_escalations
from eval import holes as eval_holes
from eval import plan as eval_plan
from hiera_dspy.conclude.ppi import EXACT, KNOWN
from hiera_dspy.conclude.sample_size import first_sample


def decide(tmp_path, run_id: str, labels: dict[str, str]) -> None:
    path = write(tmp_path / "human.jsonl", [json.dumps({"id": i, "label": lab}) for i, lab in labels.items()])
    eval_escalations.main(["--run", run_id, "--labels", path, "--who", "ana"])


def test_plan_before_and_after_the_sample_is_labelled(bench, patch_make_lm, tmp_path, capsys):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    run_id = eval_holes.main(holes_argv(bench, out, "--human-sample", "2", "--sample-seed", "1"))["run_id"]
    capsys.readouterr()
    plan = eval_plan.main(["--run", run_id, "--width", "0.2", "--draws", "5"])
    text = capsys.readouterr().out
    lines = {(line["measure"], line["a"], line["b"]): line for line in plan["lines"]}
    assert set(lines) == {(m, a, b) for m in ("ndcg@3", "p@3") for a, b in (("a", None), ("b", None), ("a", "b"))}
    for line in lines.values():
        assert line["n_min"] >= 29 and 2 <= line["n_width"] <= plan["queries"] == 4 and line["now"] is not None
    assert plan["decided"] == 0 and "| a - b |" in text and "n_min" in text
    first = max(first_sample(line["n_min"], line["holes"], plan["queries"]) for line in plan["lines"])
    assert first == plan["queries"] == 4  # n_min >= 29 of at most 4 queries with holes: every query
    assert f"label a first sample of {first} queries (--human-sample {first}" in text  # the two-stage advice
    assert plan["design"] in ("random", "stratified") and "Design: --sample stratified" in text
    decide(tmp_path, run_id, {"q2:d5": "Relevant", "q2:d6": "Irrelevant", "q3:d6": "Irrelevant"})
    capsys.readouterr()
    after = eval_plan.main(["--run", run_id, "--draws", "5", "--json"])
    assert after["decided"] == 2
    pair = next(line for line in after["lines"] if line["b"] == "b" and line["measure"] == "p@3")
    assert pair["now"]["n"] == 2 and pair["now"]["ci"] is not None  # what the sample gives now
    assert 2 <= pair["n_width_sample"] <= 4 and plan["lines"][0]["n_width_sample"] is None
    assert json.loads(capsys.readouterr().out)["run_id"] == run_id
    checked = after["calibration"]  # the decided holes check the judge's probabilities; the plan's spread follows
    assert checked["holes"] >= 1 and checked["inflation"] >= 1
    assert pair["sd"] == pytest.approx(next(x for x in plan["lines"] if x["b"] == "b" and x["measure"] == "p@3")["sd"]
                                       * checked["inflation"])
    eval_plan.main(["--run", run_id, "--draws", "5"])
    assert "Calibration check on" in capsys.readouterr().out


def test_plan_says_a_run_does_not_exist_and_where_it_looked(tmp_path, monkeypatch):
    from hiera_dspy.errors import HieraError

    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path))
    with pytest.raises(HieraError, match=rf"no run 'nosuchrun' in {tmp_path / 'store.sqlite'}"):
        eval_plan.main(["--run", "nosuchrun"])


def test_plan_is_a_hiera_dspy_command():
    from hiera_dspy.cli.main import commands

    assert commands()["plan"][0] == "eval.plan"


def test_a_sample_of_every_query_gives_exact_values_and_every_export_works(bench, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    first = eval_holes.main(holes_argv(bench, out, "--human-sample", "100%"))
    run_id = first["run_id"]
    sample = [json.loads(line) for line in (out / "sample.jsonl").read_text().splitlines()]
    labels = {r["id"]: "Relevant" for r in sample}
    decide(tmp_path, run_id, labels)  # the last decision's export divided by zero in ppi_py before
    new = {json.loads(line)["id"]: json.loads(line) for line in (out / "new.jsonl").read_text().splitlines()}
    assert all(new[i]["source"] == "human" for i in labels)  # the outputs follow the decisions
    summary = eval_holes.main(holes_argv(bench, out))  # a rerun recomputes, as for a run broken before
    for row in summary["runs"]:
        for e in row["estimates"].values():
            # n counts the decided queries a hole can change; q1 has no hole (its value is known without labelling)
            assert (e["ci"], e["note"], e["n"] + (e["N"] - e["holes"]), e["N"]) in {(None, EXACT, 4, 4),
                                                                                   (None, KNOWN, 4, 4)}
            assert e["ppi"] == e["human_only"] and e["rule"] == "exact"
    assert all(d["ci"] is None and d["p"] is None for d in summary["differences"])
    report = (out / "report.md").read_text()
    assert "b > a by exactly" in report and "no interval needed)." in report
