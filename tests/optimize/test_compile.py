"""Compiling HIERA through the fake LM: BootstrapFewShot, a tiny MIPROv2, and the optimize.compile CLI end to end."""

from __future__ import annotations

import json

import dspy
import pytest

from hiera_dspy.artifacts.judge_file import load_judge, read_artifact
from hiera_dspy.jobs.optimizers import BUDGETS, Budget, _bootstrap, _mipro, examples, label_match
from hiera_dspy.methods import BuildContext, build
from optimize import compile as compile_cli


def gold_answer(pairs, query_of):
    """A label answer that is right for every pair of `pairs` (looked up by the prompt's query)."""
    gold = {p.query: p.label for p in pairs}
    return lambda prompt: gold.get(query_of(prompt), "Relevant")


def hiera(ds, lms):
    return build("hiera", BuildContext(ds.scheme, lms))


def test_label_match():
    gold = dspy.Example(label="Relevant")
    assert label_match(gold, dspy.Prediction(label="Relevant")) == 1.0
    assert label_match(gold, dspy.Prediction(label="Irrelevant")) == 0.0
    assert label_match(gold, dspy.Prediction()) == 0.0


def test_bootstrap_puts_demos_in_every_predictor(h, msrd):
    train, dev = msrd.split("train", 4), msrd.split("dev", 2)
    lms = h.make_role_lms({"relational_transparency": "unclear", "label": gold_answer(train + dev, h.query_of)})
    program = hiera(msrd, lms)
    budget = Budget(n_train=4, n_dev=2, max_demos=2, optimizer="bootstrap")
    compiled = _bootstrap(program, examples(train), examples(dev), budget, 0, lms, 1)
    demos = {name: p.demos for name, p in compiled.named_predictors()}
    assert set(demos) == {"judge.triage", "judge.decide.predict", "relation.plan", "relation.synthesize",
                          "relation.query_analyzer.analyze", "relation.query_analyzer.answer",
                          "relation.item_analyzer.analyze", "relation.item_analyzer.answer"}
    assert all(len(d) == 2 for d in demos.values()), {n: len(d) for n, d in demos.items()}
    train_queries = {p.query for p in train}
    assert {d["query"] for d in demos["judge.decide.predict"]} <= train_queries
    assert all(d.get("augmented") for d in demos["judge.decide.predict"])  # bootstrapped traces, not raw labels
    assert all(not p.demos for _, p in program.named_predictors())  # the student is not modified
    out = compiled(**dev[0].inputs())
    assert out.label == dev[0].label


def test_bootstrap_smoke_budget_keeps_one_demo(h, msrd):
    budget = BUDGETS["smoke"]
    train = msrd.split("train", budget.n_train)
    lms = h.make_role_lms({"label": gold_answer(train, h.query_of)})  # all clear: only the triage runs
    compiled = _bootstrap(hiera(msrd, lms), examples(train), [], budget, 0, lms, 1)
    demos = {name: len(p.demos) for name, p in compiled.named_predictors()}
    assert demos["judge.triage"] == 1


def test_tiny_mipro_completes(h, msrd):
    train, dev = msrd.split("train", 4), msrd.split("dev", 4)
    lms = h.make_role_lms({"relational_transparency": "unclear", "label": gold_answer(train + dev, h.query_of)})
    program = hiera(msrd, lms)
    budget = Budget(n_train=4, n_dev=4, max_demos=1, optimizer="mipro", candidates=2, trials=2, minibatch=2)
    compiled = _mipro(program, examples(train), examples(dev), budget, 7, lms, 1)
    assert isinstance(compiled, dspy.Module)
    assert [n for n, _ in compiled.named_predictors()] == [n for n, _ in program.named_predictors()]
    assert lms["judge"].engine.calls > 0
    out = compiled(**dev[0].inputs())
    assert out.label in msrd.scheme.labels


def test_compile_cli_smoke_end_to_end(h, msrd, patch_make_lm, tmp_path, capsys):
    pairs = msrd.split("train") + msrd.split("dev")
    patch_make_lm({"relational_transparency": "unclear", "label": gold_answer(pairs, h.query_of)})
    out = tmp_path / "artifacts" / "hiera.json"
    metrics = compile_cli.main(["--dataset", "msrd", "--budget", "smoke", "--knowledge", "none", "--lm", "fake",
                                "--out", str(out), "--seed", "1"])
    budget = BUDGETS["smoke"]
    assert metrics["optimizer"] == "bootstrap" and metrics["budget"] == "smoke"
    assert metrics["n_train"] == budget.n_train and metrics["n_dev"] == budget.n_dev
    for phase in ("before", "after"):
        m = metrics[phase]
        assert m["n"] == budget.n_dev and m["errors"] == 0 and m["accuracy"] == 1.0
        assert m["delegation_rate"] == 1.0 and m["lm_calls_per_judgment"] > 0
    assert metrics["before"]["run_id"] != metrics["after"]["run_id"]

    doc = read_artifact(out)
    assert doc["method"] == "hiera" and doc["dataset"] == "msrd" and doc["knowledge"] == "none"
    assert doc["lms"] == {role: {"model": "fake", "temperature": 0.0} for role in ("judge", "relation", "query",
                                                                                    "item")}
    assert doc["metrics"]["after"]["accuracy"] == 1.0
    assert any(state.get("demos") for state in doc["state"].values())
    assert "artifact:" in capsys.readouterr().out

    # the artifact loads and judges
    judge = load_judge(out, lms=h.make_role_lms({"label": "Irrelevant"}))
    assert judge(**msrd.split("dev")[0].inputs()).label == "Irrelevant"
    assert json.loads(out.read_text())["state"] == judge.dump_state()


def test_compile_cascade_picks_tau_on_the_whole_dev_split(h, msrd, patch_make_lm, tmp_path):
    """optimize.compile --method hiera-cascade: the scorer is fitted on train and tau picked on the whole dev split
    (the share rule reads no label), not on the budget's few dev pairs; the artifact holds both."""
    from hiera_dspy.methods.learned_scorer import ScorerState, tau_for_share, top

    patch_make_lm({"relational_transparency": "clear", "label": "Relevant"})
    out = tmp_path / "cascade.json"
    compile_cli.main(["--dataset", "msrd", "--budget", "smoke", "--knowledge", "none", "--lm", "fake",
                      "--method", "hiera-cascade", "--set", "embedder=lexical", "--set", "delegation=never",
                      "--out", str(out), "--skip-before"])
    scorer = ScorerState(msrd.scheme, msrd.split("train"), "lexical").scorer
    expected = tau_for_share([top(d)[1] for d in scorer.predict_proba_many(msrd.split("dev"))], 0.3)
    assert read_artifact(out)["extra"]["tau"] == pytest.approx(expected)
