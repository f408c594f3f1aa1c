"""The MSRD demo's inputs (`hiera_dspy.jobs.holes_demo`): real bm25s runs over the bundled catalog, the bundled
pairs as qrels; RRF by hand; and `python -m eval.holes_demo` filling their holes (slow: eval.holes in its own
process; the default suite checks eval.holes on its own, tests/review/test_conclusions.py and its neighbours)."""

from __future__ import annotations

import pytest

from eval import holes_demo
from hiera_dspy.data.trec import read_qrels, read_run, read_topics
from hiera_dspy.jobs import holes_demo as demo_inputs
from hiera_dspy.labels import get_scheme


def test_rrf_by_hand():
    fused = demo_inputs.rrf([{"q": ["a", "b"]}, {"q": ["b", "c"]}])
    assert [d for d, _ in fused["q"]] == ["b", "a", "c"]
    assert fused["q"][0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_inputs_are_the_bundled_queries_qrels_and_real_bm25_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(demo_inputs, "dense", lambda queries, docs: None)  # MiniLM over 9,750 movies: too slow here
    inputs = tmp_path / "inputs"
    runs = demo_inputs.build_inputs(inputs, 3)
    assert [p.rsplit("/", 1)[-1] for p in runs] == ["bm25.run", "bm25-title.run"]
    assert len(read_topics(inputs / "topics.tsv")) == 566 and len(read_qrels(inputs / "qrels.txt",
                                                                             get_scheme("msrd"))) == 600
    bm25 = read_run(inputs / "bm25.run")
    assert len({rl.qid for rl in bm25}) == 3 and [rl.rank for rl in bm25[:3]] == [1, 2, 3]
    before = (inputs / "bm25.run").stat().st_mtime_ns
    assert demo_inputs.build_inputs(inputs, 3) == runs and (inputs / "bm25.run").stat().st_mtime_ns == before  # reused
    demo_inputs.build_inputs(inputs, 2)  # another number of queries: the runs are rebuilt
    assert len({rl.qid for rl in read_run(inputs / "bm25.run")}) == 2


@pytest.mark.slow
def test_demo_builds_real_runs_and_fills_holes(tmp_path, monkeypatch):
    monkeypatch.setattr(demo_inputs, "dense", lambda queries, docs: None)
    out = tmp_path / "demo"
    summary = holes_demo.main(["--out", str(out), "--queries", "3", "--method", "embed-lr", "--set",
                               "embedder=lexical", "--lm", "fake", "--knowledge", "none", "--limit", "4"])
    assert [r["run"] for r in summary["runs"]] == ["bm25", "bm25-title"]
    assert summary["holes"] == 4 and summary["filled"] == 4 and summary["confidence_sources"] == {"scorer": 4}
    assert 0 < summary["runs"][0]["hole_rate_after"] < summary["runs"][0]["hole_rate_before"]
