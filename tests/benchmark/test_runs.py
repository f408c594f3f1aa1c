"""eval.holes on big runs: run files read one query at a time, the same holes and the same metrics as ir_measures."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hiera_dspy.benchmark.pool import pool_holes
from hiera_dspy.benchmark.runs import RunFile
from hiera_dspy.conclude.retrieval import evaluate
from hiera_dspy.data import DataError
from hiera_dspy.data.trec import read_run
from hiera_dspy.labels import get_scheme


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def random_bench(tmp_path, seed: int = 0):
    rng = random.Random(seed)
    lines, qrels = [], {}
    for q in range(30):
        docs = rng.sample(range(200), 25)
        lines += [f"q{q} Q0 d{d} {r + 1} {rng.choice([1.0, 2.0, 3.5, rng.random()]):.3f} t" for r, d in enumerate(docs)]
        qrels.update({(f"q{q}", f"d{d}"): rng.randrange(2) for d in rng.sample(range(200), 40) if q % 7})
    return write(tmp_path / "r.run", lines), qrels


def test_streamed_metrics_equal_ir_measures(tmp_path):
    import ir_measures
    from ir_measures import P, nDCG

    path, qrels = random_bench(tmp_path)
    scheme = get_scheme("msrd")
    got = evaluate(RunFile(path), qrels, scheme, 10)
    lines = read_run(path)
    want = ir_measures.calc_aggregate([nDCG @ 10, P(rel=1) @ 10],
                                      [ir_measures.Qrel(q, d, g) for (q, d), g in qrels.items()],
                                      [ir_measures.ScoredDoc(rl.qid, rl.docid, rl.score) for rl in lines])
    assert got["ndcg@10"] == pytest.approx(want[nDCG @ 10], abs=1e-12)
    assert got["p@10"] == pytest.approx(want[P(rel=1) @ 10], abs=1e-12)
    assert evaluate(lines, qrels, scheme, 10) == got
    assert pool_holes({"r": RunFile(path)}, qrels, 5) == pool_holes({"r": lines}, qrels, 5)


def test_a_run_file_must_be_grouped_by_query(tmp_path):
    path = write(tmp_path / "x.run", ["q1 Q0 d1 1 2.0 t", "q2 Q0 d1 1 2.0 t", "q1 Q0 d2 2 1.0 t"])
    with pytest.raises(DataError, match=r"line 3: qid 'q1' comes back after other queries.*sort -s -k1,1"):
        RunFile(path).check()
    dup = write(tmp_path / "d.run", ["q1 Q0 d1 1 2.0 t", "q1 Q0 d1 2 1.0 t", "q1 Q0 d3 3 0.5 t"])
    skipped: list = []
    groups = list(RunFile(dup, on_bad_row="skip", skipped=skipped).groups())
    assert [[rl.docid for rl in ls] for _, ls in groups] == [["d1", "d3"]] and skipped[0]["line"] == 2
