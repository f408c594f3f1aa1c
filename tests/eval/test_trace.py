"""eval.trace: one stored judgment's path, step by step, with clear errors for a missing run or pair."""

import json

import pytest

from eval import run, trace
from hiera_dspy.errors import HieraError


@pytest.fixture(scope="module")
def judged_once(tmp_path_factory):
    """One HIERA run of two pairs, judged once for the module's tests (they only read it): (runs folder, run id, the
    first pair's id)."""
    from hiera_dspy.lm.roles import lm_factory
    from hiera_dspy.testing import fake_lm

    folder = tmp_path_factory.mktemp("trace")
    answers = {"query_interpretability": "unclear",  # the Judge delegates: the whole hierarchy runs
               "guidance": "is a metallic mercury finish gray?",
               "question_for_item_analyzer": "verify that 'metallic mercury finish' is gray-toned"}
    with pytest.MonkeyPatch.context() as mp, lm_factory(lambda spec, role="judge": fake_lm(answers)):
        for name, value in (("HIERA_CACHE_DIR", folder / "cache"), ("HIERA_RUNS_DIR", folder / "runs"),
                            ("HIERA_LM", "fake"), ("HIERA_REFERENCE_EMBEDDER", "lexical")):
            mp.setenv(name, str(value))
        metrics = run.main(["--dataset", "msrd", "--split", "dev", "--method", "hiera", "--limit", "2",
                            "--out", str(folder / "out")])
    pair_id = json.loads((folder / "out" / "predictions.jsonl").read_text().splitlines()[0])["id"]
    return folder, metrics["run_id"], pair_id


@pytest.fixture
def hiera_run(judged_once, monkeypatch):
    folder, run_id, pair_id = judged_once
    monkeypatch.setenv("HIERA_RUNS_DIR", str(folder / "runs"))  # the store the run is in
    return run_id, pair_id


def test_trace_prints_every_step(hiera_run, capsys):
    run_id, pair_id = hiera_run
    text = trace.main(["--run", run_id, "--pair", pair_id])
    assert text in capsys.readouterr().out
    order = ["judge.triage", "relation.plan", "query.analyze", "query.answer", "query.search", "item.analyze",
             "item.answer", "item.search", "knowledge.search", "relation.synthesize", "judge.decide"]
    positions = [text.index(f"({name},") for name in order]
    assert positions == sorted(positions)
    for expected in ("query_interpretability: unclear", "guidance: is a metallic mercury finish gray?",
                     "consult_query_analyzer: true", "lookups:", "passages:", "[catalog:msrd]",
                     "argument: fake argument", "reasoning: fake reasoning", "LM calls", "tokens",
                     "total: 13 steps, 10 LM calls", f"pair {pair_id}: gold",
                     # the paper profile: its budgets, no caps
                     "profile: paper (output budgets in tokens: judge 3000, relation 1500, query 1000, item 1000; "
                     "no length caps in the prompts)", "(judge.decide, role judge, profile paper)"):
        assert expected in text
    # the directed question reaches the Item Analyzer, which answers it with the pair in view
    item_answer = text[text.index("(item.answer,"):]
    assert item_answer.split("\n")[1] == ("  < analysis: stated: fake stated properties; "
                                          "inferred: fake inferred properties")
    assert "  < question: verify that 'metallic mercury finish' is gray-toned" in item_answer
    # the decision holds the Judge's triage
    decision = text[text.index("(judge.decide,"):]
    assert ("  < triage: query interpretability: unclear; information completeness: clear; relational transparency: "
            "clear. Guidance (the gaps): is a metallic mercury finish gray?") in decision


def test_format_step_marks_reuse_and_lists_passages():
    step = {"name": "query.analyze", "role": "query", "outputs": {"explicit_requirements": "x" * 500, "reused": True}}
    lines = trace.format_step(3, step, width=40)
    assert lines[0].startswith("[3] Query Analyzer analysis (query.analyze, role query)  [reused]: "
                               "0 LM calls, 0 tokens")
    assert lines[1] == "    explicit_requirements: " + "x" * 37 + "..."
    search = {"name": "knowledge.search", "role": "knowledge", "calls": 0, "seconds": 0.5,
              "outputs": {"lookups": ["alien"], "passages": [{"title": "Alien", "source": "catalog:msrd"}]}}
    assert trace.format_step(1, search)[-2:] == ["    passages: 1", "      - Alien [catalog:msrd]"]


def test_trace_json(hiera_run, capsys):
    run_id, pair_id = hiera_run
    doc = json.loads(trace.main(["--run", run_id, "--pair", pair_id, "--json"]))
    assert doc["row"]["id"] == pair_id and doc["config"]["method"] == "hiera"
    assert [s["name"] for s in doc["row"]["steps"]][0] == "judge.triage"


def test_trace_errors(hiera_run, tmp_path):
    run_id, pair_id = hiera_run
    with pytest.raises(HieraError, match=f"no run 'nope'.*{run_id}"):
        trace.main(["--run", "nope", "--pair", pair_id])
    with pytest.raises(HieraError, match=f"no judgment for pair 'nope'.*{pair_id}"):
        trace.main(["--run", run_id, "--pair", "nope"])
    with pytest.raises(HieraError, match="no run store"):
        trace.main(["--run", run_id, "--pair", pair_id, "--store", str(tmp_path / "missing.sqlite")])
