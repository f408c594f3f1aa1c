"""The filled benchmark's conclusions (hiera_dspy.conclude.holes): the plan's simulated human labels on
graded schemes, the certainty stratum of queries no hole can change, and values known exactly."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.conclude.certainty import certain
from hiera_dspy.conclude.holes import conclusions, machine_values_of, simulated_values
from hiera_dspy.conclude.sample import Sample
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import get_scheme


def hole(q: str, d: str, label: str | None, confidence: float | None, source: str = "machine",
         human: str | None = None) -> dict:
    return {"id": f"{q}:{d}", "query_id": q, "item_id": d, "machine_label": label, "confidence": confidence,
            "label": human or label, "source": source}


@pytest.mark.parametrize("scheme, label", [("esci", "Exact"), ("homedepot", "Highly relevant"),
                                          ("trec", "Related"), ("trec", "Perfectly relevant"),
                                          ("esci", "Substitute")])
def test_graded_simulation_draws_near_the_judges_label(scheme, label):
    # finding 2: one query, nine holes at confidence 0.95 without distributions: ESCI "Exact" machine nDCG 1.000,
    # simulated 0.514 (the draws were {threshold label: p, lowest: 1 - p}); TREC "Related" 0.783 vs 0.351
    s = get_scheme(scheme)
    docs = [f"d{i}" for i in range(10)]
    runs = {"r": [RunLine("q", d, i + 1, 10.0 - i, "r", 0) for i, d in enumerate(docs)]}
    originals = {("q", "d9"): s.labels.index(label)}
    records = [hole("q", d, label, 0.95) for d in docs[:9]]
    machine, _ = machine_values_of(originals, records, s, 10, "expected")
    sims = simulated_values(runs, originals, records, s, 10, draws=200)
    for m in ("ndcg@10", "p@10"):
        x = float(machine(runs["r"], ["q"])[m][0])
        simulated = np.mean([sim[m]["r"][0] for sim in sims])
        assert simulated == pytest.approx(x, abs=0.12), m


def test_a_hole_without_a_machine_label_draws_every_label_alike():
    from hiera_dspy.conclude.strata import label_distribution

    s = get_scheme("trec")
    assert label_distribution(hole("q", "d", None, None), s) == {k: 0.25 for k in s.labels}
    assert label_distribution(hole("q", "d", "Related", 0.7), s) == pytest.approx(
        {"Irrelevant": 0.1, "Related": 0.7, "Highly relevant": 0.1, "Perfectly relevant": 0.1})


def test_certain_queries_per_run_for_p_and_per_query_for_ndcg():
    s = get_scheme("msrd")
    lines = [RunLine("q1", "a", 1, 2.0, "r", 0), RunLine("q1", "b", 2, 1.0, "r", 0),
             RunLine("q2", "c", 1, 1.0, "r", 0), RunLine("q3", "e", 1, 1.0, "r", 0)]
    holes = [("q1", "b"), ("q2", "z"), ("q3", "y")]  # q2's and q3's holes are another run's
    c = certain(lines, ["q1", "q2", "q3", "q4"], holes, {("q2", "c"): 1, ("q3", "e"): 0}, s, 2)
    assert c["p@2"].tolist() == [False, True, True, True]
    # q2: the ideal DCG sees the other run's hole; q3: nothing relevant shown, DCG 0 whatever; q4: not answered
    assert c["ndcg@2"].tolist() == [False, False, True, True]


def bench(n: int = 12):
    """n queries: the even ones without holes (one judged relevant document at rank 1), the odd ones with a hole at
    rank 1 the judge calls irrelevant but a person relevant."""
    runs = {"a": [], "b": []}
    originals, records = {}, []
    for i in range(n):
        q = f"q{i}"
        if i % 2 == 0:
            originals[(q, "j")] = 1
            runs["a"].append(RunLine(q, "j", 1, 2.0, "a", 0))
        else:
            originals[(q, "j")] = 0
            runs["a"].append(RunLine(q, "h", 1, 2.0, "a", 0))
            records.append(hole(q, "h", "Irrelevant", 0.9, "human", "Relevant"))
        runs["b"].append(RunLine(q, "j", 1, 2.0, "b", 0))
    return runs, originals, records


def test_sampled_queries_without_holes_do_not_pull_the_estimate_to_the_machine():
    # finding 1: a sample that has decided 4 queries without holes and 2 with: their mean residual is 1/3, the
    # benchmark's 1/2 (half its queries have holes, each off by 1)
    runs, originals, records = bench()
    sample = Sample(["q0", "q2", "q1", "q4", "q6", "q3", "q5", "q7"], 0, "random", "8")
    decided = [r for r in records if r["query_id"] in {"q1", "q3"}]
    undecided = [r | {"source": "machine", "label": "Irrelevant"} for r in records if r not in decided]
    c = conclusions(runs, originals, decided + undecided, sample, get_scheme("msrd"), 1)
    e = c["estimates"]["a"]["p@1"]
    assert e["machine"] == pytest.approx(0.5) and e["holes"] == 6 and e["n"] == 2
    assert e["ppi"] == pytest.approx(1.0)  # the truth: every query relevant at rank 1
    b = c["estimates"]["b"]["p@1"]  # b shows no hole: exact, and says so
    assert b["rule"] == "exact" and b["ppi"] == pytest.approx(0.5) and b["ci"] is None and "exact" in b["note"]


def test_the_holes_table_and_the_conclusions_average_missing_queries_alike():
    # finding 7: the holes table averaged over a run's judged queries, the conclusions over every query (0 if missing)
    from hiera_dspy.conclude.retrieval import evaluate

    runs, originals, records = bench()
    runs["a"] = [rl for rl in runs["a"] if rl.qid != "q0"]  # a does not answer q0
    c = conclusions(runs, originals, records, None, get_scheme("msrd"), 1)
    queries = [f"q{i}" for i in range(12)]
    filled = {**originals, **{(r["query_id"], r["item_id"]): 0 for r in records}}  # the machine: irrelevant
    for name, lines in runs.items():
        table = evaluate(lines, filled, get_scheme("msrd"), 1, queries)
        for m in ("p@1", "ndcg@1"):
            assert table[m] == pytest.approx(c["estimates"][name][m]["machine"]), (name, m)
    assert evaluate(runs["a"], filled, get_scheme("msrd"), 1, queries)["p@1"] == pytest.approx(5 / 12)  # not 5 / 11


def test_an_active_sample_weights_its_queries_and_counts_the_decided_ones_in_draw_order():
    runs, originals, records = bench(12)
    queries = [f"q{i}" for i in range(12)]
    weights = {q: (1.0 if int(q[1:]) % 2 else 0.0) for q in queries}  # the judge unsure of the queries with holes
    sample = Sample(["q1", "q0", "q3", "q5", "q7", "q9", "q11", "q2"], 0, "active", "8",
                    probabilities=[0.6] * 8, weights=weights)
    decided = [r for r in records if r["query_id"] in {"q1", "q3", "q5", "q9"}]  # q7 pending: q9 waits for it
    undecided = [r | {"source": "machine", "label": "Irrelevant"} for r in records if r not in decided]
    c = conclusions(runs, originals, decided + undecided, sample, get_scheme("msrd"), 1)
    e = c["estimates"]["a"]["p@1"]
    assert e["n"] == 3 and e["holes"] == 6 and e["rule"].startswith("active")
    assert e["ci"][0] <= 1.0 <= e["ci"][1] and e["ppi"] == pytest.approx(1.0)  # every residual seen is +1
    assert c["human_sample"]["probabilities"] == [0.6] * 8
    d = c["differences"][0]
    assert d["ci"][0] <= d["ppi"] <= d["ci"][1] and d["rule"].startswith("active")
