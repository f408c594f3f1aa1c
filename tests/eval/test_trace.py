"""eval.trace: one stored judgment's path, step by step, with clear errors for a missing run or pair."""

import json

import pytest

from eval import run, trace


@pytest.fixture
def hiera_run(patch_make_lm, tmp_path):
    patch_make_lm({"query_interpretability": "unclear"})  # the Judge delegates: the whole hierarchy runs
    metrics = run.main(["--dataset", "msrd", "--split", "dev", "--method", "hiera", "--limit", "2",
                        "--out", str(tmp_path / "out")])
    pair_id = json.loads((tmp_path / "out" / "predictions.jsonl").read_text().splitlines()[0])["id"]
    return metrics["run_id"], pair_id


def test_trace_prints_every_step(hiera_run, capsys):
    run_id, pair_id = hiera_run
    text = trace.main(["--run", run_id, "--pair", pair_id])
    assert text in capsys.readouterr().out
    order = ["judge.triage", "relation.plan", "query.analyze", "item.analyze", "knowledge.search",
             "relation.synthesize", "judge.decide"]
    positions = [text.index(f"({name},") for name in order]
    assert positions == sorted(positions)
    for expected in ("query_interpretability: unclear", "guidance: fake guidance", "consult_query_analyzer: true",
                     "lookups:", "passages:", "[catalog:msrd]", "argument: fake argument", "reasoning: fake reasoning",
                     "LM calls", "tokens", "total: 7 steps, 6 LM calls", f"pair {pair_id}: gold"):
        assert expected in text


def test_format_step_marks_reuse_and_lists_passages():
    step = {"name": "query.analyze", "role": "query", "outputs": {"explicit_requirements": "x" * 500, "reused": True}}
    lines = trace.format_step(3, step, width=40)
    assert lines[0].startswith("[3] Query Analyzer (query.analyze, role query)  [reused]: 0 LM calls, 0 tokens")
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
    with pytest.raises(SystemExit, match=f"no run 'nope'.*{run_id}"):
        trace.main(["--run", "nope", "--pair", pair_id])
    with pytest.raises(SystemExit, match=f"no judgment for pair 'nope'.*{pair_id}"):
        trace.main(["--run", run_id, "--pair", "nope"])
    with pytest.raises(SystemExit, match="no run store"):
        trace.main(["--run", run_id, "--pair", pair_id, "--store", str(tmp_path / "missing.sqlite")])
