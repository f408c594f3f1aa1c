"""The machine's per-query metric under label probabilities: with certain labels it is ir_measures' nDCG@k and P@k;
P@k is linear in the probabilities; a graded scheme's expected gain."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hiera_dspy.conclude.expected import expected_per_query, gains, one_hot
from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import get_scheme

MSRD = get_scheme("msrd")


def bench(seed: int = 0):
    rng = random.Random(seed)
    queries = [f"q{i}" for i in range(12)]
    lines, grades = [], {}
    for q in queries[:-1]:  # the last query has no run line and no judgment: 0 either way
        docs = [f"d{j}" for j in range(8)]
        for r, d in enumerate(docs, 1):
            lines.append(RunLine(q, d, r, 100.0 - r + rng.random() * 0.5, "x", 0))
            if rng.random() < 0.8:
                grades[(q, d)] = int(rng.random() < 0.4)
        grades[(q, "extra")] = 1  # judged, not retrieved: in the ideal ranking only
    return queries, lines, grades


@pytest.mark.parametrize("seed", [0, 1])
def test_certain_labels_give_ir_measures_values(seed):
    queries, lines, grades = bench(seed)
    want = per_query(lines, grades, queries, named_measures(MSRD, 5))
    got = expected_per_query(lines, {k: one_hot(g, MSRD) for k, g in grades.items()}, queries, MSRD, 5)
    for m in want:
        assert got[m] == pytest.approx(want[m])


def test_precision_is_the_expected_count_of_relevant_documents_over_k():
    lines = [RunLine("q", d, r, 10.0 - r, "x", 0) for r, d in enumerate("abc", 1)]
    dists = {("q", "a"): {"Relevant": 0.25, "Irrelevant": 0.75}, ("q", "b"): one_hot(1, MSRD),
             ("q", "c"): {"Relevant": 0.5, "Irrelevant": 0.5}}
    got = expected_per_query(lines, dists, ["q"], MSRD, 4)
    assert got["p@4"][0] == pytest.approx((0.25 + 1 + 0.5) / 4)
    ideal = 1 + 0.5 / np.log2(3) + 0.25 / np.log2(4)
    assert got["ndcg@4"][0] == pytest.approx((0.25 + 1 / np.log2(3) + 0.5 / np.log2(4)) / ideal)


def test_a_graded_distribution_gives_its_expected_grade_and_relevance():
    esci = get_scheme("esci")
    dist = {esci.labels[0]: 0.2, esci.labels[-1]: 0.6, esci.labels[1]: 0.2, "not a label": 5.0}
    g, rel = gains(dist, esci)
    assert g == pytest.approx(0.2 * 0.01 + 0.6 * 1.0)  # ESCI's gains: C 0.01, E 1.0 (Reddy et al. 2022, Task 1)
    wands = get_scheme("wands")
    assert gains({"Partial": 0.5, "Exact": 0.5}, wands)[0] == pytest.approx(0.5 * 1 + 0.5 * 2)  # grades as gains
    assert rel == pytest.approx(sum(p for label, p in dist.items() if label in esci.labels
                                    and esci.labels.index(label) >= esci.labels.index(esci.threshold)))
    with pytest.raises(ValueError, match="positive probability"):
        gains({"nope": 1.0}, esci)


def test_conclusions_use_the_judges_probabilities_by_default_and_labels_on_request():
    from hiera_dspy.conclude.holes import conclusions

    runs = {"a": [RunLine("q1", d, r, 5.0 - r, "a", 0) for r, d in enumerate(["x", "y"], 1)]
            + [RunLine("q2", "z", 1, 1.0, "a", 0)]}
    originals = {("q1", "x"): 1, ("q2", "w"): 1}
    records = [{"id": "q1:y", "query_id": "q1", "item_id": "y", "machine_label": "Irrelevant",
                "distribution": {"Relevant": 0.4, "Irrelevant": 0.6}, "source": "machine"},
               {"id": "q2:z", "query_id": "q2", "item_id": "z", "machine_label": "Relevant", "distribution": None,
                "source": "machine"}]
    soft = conclusions(runs, originals, records, None, MSRD, 2)
    hard = conclusions(runs, originals, records, None, MSRD, 2, machine_values="labels")
    assert soft["estimates"]["a"]["p@2"]["machine"] == pytest.approx(((1 + 0.4) / 2 + 1 / 2) / 2)
    assert hard["estimates"]["a"]["p@2"]["machine"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert (soft["machine_values"], soft["soft_holes"], hard["machine_values"]) == ("expected", 1, "labels")
    with pytest.raises(ValueError, match="machine_values"):
        conclusions(runs, originals, records, None, MSRD, 2, machine_values="soft")


@pytest.mark.parametrize("scheme", ["trec", "esci", "homedepot"])
def test_one_implementation_streamed_expected_and_ir_measures_agree(scheme):
    from hiera_dspy.conclude.retrieval import evaluate

    s = get_scheme(scheme)
    queries, lines, grades = bench(3)
    rng = random.Random(4)
    grades = {k: rng.randrange(len(s.labels)) for k in grades}  # graded
    want = per_query(lines, grades, queries, named_measures(s, 5))
    expected = expected_per_query(lines, {k: one_hot(g, s) for k, g in grades.items()}, queries, s, 5)
    streamed = evaluate(lines, grades, s, 5, queries)
    for m in want:
        assert expected[m] == pytest.approx(want[m]) and streamed[m] == pytest.approx(float(np.mean(want[m])))
