"""eval.ablate through the fake LM: one report row per method, all methods on the same pairs, reruns judge nothing."""

import json

import pytest

from eval import ablate
from hiera_dspy.errors import HieraError
from hiera_dspy.methods.graphs import ABLATIONS
from hiera_dspy.store.run_store import RunStore

ANSWERS = {"query_interpretability": "unclear"}  # the Judge delegates: the whole graph runs


@pytest.fixture
def engine_calls():
    """Every CLI-built LM is a fake one; returns the list of their engines (to count LM calls)."""
    from hiera_dspy.lm.roles import lm_factory
    from hiera_dspy.testing import fake_lm

    engines = []

    def make(spec, role="judge"):
        lm = fake_lm(ANSWERS)
        engines.append(lm.engine)
        return lm

    with lm_factory(make):
        yield lambda: sum(getattr(e, "calls", 0) for e in engines)


def finished(store_path):
    store = RunStore(store_path)
    try:
        return {(run, r["id"]): r["finished"] for run in store.run_ids() for r in store.rows(run)}
    finally:
        store.close()


def lexical_only(monkeypatch):
    """embed-lr's "auto" embedder falls back to lexical features, as on a machine without the signals extra."""
    from hiera_dspy.signals import features

    def unavailable(*args, **kwargs):
        raise features.EmbedderUnavailable("not in this test")

    monkeypatch.setattr(features, "SentenceTransformerEmbedder", unavailable)


def test_ablations_grid_report(tmp_path, engine_calls, capsys, monkeypatch):
    lexical_only(monkeypatch)
    out = tmp_path / "report"
    argv = ["--dataset", "msrd", "--split", "dev", "--grid", "ablations", "--limit", "6",
            "--out", str(out)]
    summaries = ablate.main(argv)
    grid = ABLATIONS + ["embed-lr"]  # every grid ends with the non-LLM reference
    assert [s["method"] for s in summaries] == grid
    saved = json.loads((out / "summary.json").read_text())
    assert [s["method"] for s in saved] == grid
    scorer = saved[-1]
    assert scorer["lm_calls_per_judgment"] == 0 and scorer["llm_share"] == 0 and scorer["tokens_per_judgment"] == 0
    for s in saved:
        assert s["n"] == 6 and s["answered"] + s["unlabelled"] == 6
        for key in ("accuracy_ci", "macro_f1_ci", "kappa_ci", "tokens_by_role", "lm_calls_by_role", "seconds_p95",
                    "delegation_rate", "errors", "escalations", "run_id"):
            assert key in s
    ref = next(s for s in saved if s["method"] == "hiera")
    assert ref["mcnemar_p"] is None and all(s["mcnemar"] for s in saved if s["method"] != "hiera")
    # Bonferroni within a family: the 7 ablations against hiera (m=7); embed-lr is its own family (m=1)
    assert {s["method"]: s["bonferroni_m"] for s in saved if s["method"] != "hiera"} == \
        {**{m: 7 for m in ABLATIONS if m != "hiera"}, "embed-lr": 1}
    assert len({s["run_id"] for s in saved}) == len(grid)
    report = (out / "report.md").read_text()
    assert all(f"## {m}" in report for m in ABLATIONS) and "DREAM" not in report
    assert "against hiera in its family (ablation m=7, signals m=1)" in report
    assert "## Error analysis" in report and f"- **hiera** (run {ref['run_id']}): " in report
    assert (out / "ablation_bars.png").exists() and (out / "cost_quality.png").exists()
    assert len(list(out.glob("confusion_*.png"))) == len(grid)
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    ids = {m: [p["id"] for p in preds if p["method"] == m] for m in grid}
    assert all(len(v) == 6 and v == ids["hiera"] for v in ids.values())
    assert "judge-only" in capsys.readouterr().out

    calls, before = engine_calls(), finished(tmp_path / "runs" / "store.sqlite")
    assert calls > 0
    again = ablate.main(argv)
    assert engine_calls() == calls  # nothing judged twice
    assert finished(tmp_path / "runs" / "store.sqlite") == before
    assert [s["kappa"] for s in again] == [s["kappa"] for s in summaries]


def test_larger_limit_resumes(tmp_path, engine_calls):
    argv = ["--dataset", "msrd", "--methods", "judge-only,hiera", "--knowledge", "none", "--out", str(tmp_path / "o")]
    ablate.main(argv + ["--limit", "2"])
    summaries = ablate.main(argv + ["--limit", "3"])
    store = finished(tmp_path / "runs" / "store.sqlite")
    assert len(store) == 6 and all(s["n"] == 3 for s in summaries)


def test_with_knowledge_and_grids(monkeypatch):
    from hiera_dspy.methods import METHODS, MethodInfo, available

    available()
    for name, family in (("fake-baseline", "baseline"), ("fake-dream", "dream"), ("fake-debate", "debate")):
        monkeypatch.setitem(METHODS, name, MethodInfo(name, lambda ctx, **c: None, "", {}, family))
    paper = ablate.GRIDS["paper"]()
    assert paper[:len(ABLATIONS)] == ABLATIONS and {"fake-baseline", "fake-dream", "fake-debate"} <= set(paper)
    assert paper[-1] == "embed-lr" and ablate.GRIDS["signals"]()[0] == "embed-lr"
    rows = ablate.variants(["hiera", "fake-baseline", "fake-dream"], with_knowledge=True)
    assert rows == [("hiera", "hiera", {}), ("fake-baseline", "fake-baseline", {}),
                    ("fake-baseline+k", "fake-baseline", {"with_knowledge": True}), ("fake-dream", "fake-dream", {})]
    with pytest.raises(HieraError, match="unknown method"):
        ablate.variants(["nope"], with_knowledge=False)


def test_bonferroni_families_of_the_grids():
    """The paper grid corrects HIERA vs its 11 baselines with m=11 and vs its 7 ablations with m=7 (one family per
    table); the learned scorer and DREAM are families of their own."""
    from hiera_dspy.methods import available
    from hiera_dspy.runs.evaluation_report import comparison_families

    for grid, expected in (("paper", {"baseline": 11, "ablation": 7, "debate": 1, "signals": 1}),
                           ("ablations", {"ablation": 7, "signals": 1})):
        families = {name: ablate.family_of(name, {}) for name in ablate.GRIDS[grid]()}
        m = comparison_families(families, "hiera")
        assert {available()[name].family: k for name, k in m.items()} == expected
    rows = ablate.variants(["hiera", "zero-shot", "dna"], with_knowledge=True)
    with_k = {display: ablate.family_of(method, config) for display, method, config in rows}
    assert comparison_families(with_k, "hiera") == {"zero-shot": 2, "dna": 2, "zero-shot+k": 2, "dna+k": 2}


def test_dream_note_and_reference(tmp_path, engine_calls):
    out = tmp_path / "o"
    summaries = ablate.main(["--dataset", "msrd", "--methods", "judge-only,dream", "--limit", "2", "--knowledge", "none",
                             "--reference", "judge-only", "--out", str(out)])
    assert [s["method"] for s in summaries] == ["judge-only", "dream"] and summaries[1]["mcnemar"]
    assert "DREAM debates the binary question" in (out / "report.md").read_text()


def test_grid_without_a_train_split_skips_the_learned_scorer(monkeypatch, capsys, tmp_path):
    import dataclasses

    from hiera_dspy.jobs import ablating

    real = ablating.load_data
    monkeypatch.setattr(ablating, "load_data", lambda source: dataclasses.replace(
        real(source), splits={k: v for k, v in real(source).splits.items() if k != "train"}))
    summaries = ablate.main(["--dataset", "msrd", "--split", "dev", "--methods", "judge-only,embed-lr", "--limit", "2",
                             "--knowledge", "none", "--out", str(tmp_path / "o"), "--max-error-rate", "1"])
    assert [s["method"] for s in summaries] == ["judge-only"]
    assert "no labelled train split: skipping embed-lr" in capsys.readouterr().err


def test_run_id_is_a_prefix_of_each_method_run_and_eval_run_resumes_one(tmp_path, engine_calls, monkeypatch):
    """--run-id PREFIX (the shared run option) names each method's run PREFIX.NAME; eval.run --run-id PREFIX.NAME
    resumes that run and judges nothing new."""
    from eval import run as run_cli

    lexical_only(monkeypatch)
    store = str(tmp_path / "s.sqlite")
    argv = ["--dataset", "msrd", "--split", "dev", "--limit", "2", "--knowledge", "none", "--store", store]
    summaries = ablate.main([*argv, "--methods", "judge-only,embed-lr", "--run-id", "exp1",
                             "--out", str(tmp_path / "o")])
    assert [s["run_id"] for s in summaries] == ["exp1.judge-only", "exp1.embed-lr"]
    assert {run for run, _ in finished(store)} == {"exp1.judge-only", "exp1.embed-lr"}
    calls = engine_calls()
    metrics = run_cli.main([*argv, "--method", "judge-only", "--run-id", "exp1.judge-only", "--out",
                            str(tmp_path / "r")])
    assert metrics["run_id"] == "exp1.judge-only" and engine_calls() == calls and metrics["pairs"] == 2


def test_a_bad_run_id_prefix_is_one_line():
    with pytest.raises(HieraError) as exc:
        ablate.cell_run_id("exp", "a/b")
    assert "invalid run id 'exp.a/b'" in str(exc.value)
