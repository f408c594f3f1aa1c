"""The pair unit's statistics (hiera_dspy.conclude.pair_sample): the machine value is the product's, P@k's
linearisation is exact, a prefix of the draws is a sample of the design, and the intervals cover a simulated
population's truth at their level."""

from __future__ import annotations

import numpy as np
from scipy.stats import chisquare

from hiera_dspy.conclude import pair_sample as ps
from hiera_dspy.conclude.expected import expected_per_query, one_hot
from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import get_scheme

SCHEME = get_scheme("trec")
DEPTH = 5


def world(seed: int = 0, queries: int = 30, systems: int = 3):
    """Runs over queries of 12 documents with true grades; the originals each query's first 2 documents; the judge
    calibrated: its distribution the truth's with weight c, the rest even (and its label drawn from it)."""
    rng = np.random.default_rng(seed)
    truth, runs = {}, {f"s{k}": [] for k in range(systems)}
    for q in range(queries):
        grades = rng.choice(4, size=12, p=[0.5, 0.2, 0.2, 0.1])
        for d, g in enumerate(grades):
            truth[(f"q{q}", f"d{d}")] = int(g)
        for k, name in enumerate(runs):
            order = np.argsort(-(grades * (1.5 - 0.4 * k) + rng.normal(0, 1, 12)))[:DEPTH]
            runs[name] += [RunLine(f"q{q}", f"d{i}", r + 1, float(-r), name, 0) for r, i in enumerate(order)]
    originals = {k: g for k, g in truth.items() if int(k[1][1:]) < 2}
    shown = {(rl.qid, rl.docid) for lines in runs.values() for rl in lines}
    holes = sorted(k for k in shown if k not in originals)
    truth = {k: truth[k] for k in [*originals, *holes]}  # the pool: what the product's reference judges
    dists = {k: one_hot(g, SCHEME) for k, g in originals.items()}
    for k in holes:
        c = rng.uniform(0.4, 0.9)
        p = np.full(4, (1 - c) / 3)
        p[truth[k]] = c
        dists[k] = {label: float(v) for label, v in zip(SCHEME.labels, p)}
    queries_ = [f"q{q}" for q in range(queries)]
    return runs, truth, originals, holes, dists, queries_


def reference(runs, truth, queries, mat):
    measures = named_measures(SCHEME, DEPTH)
    per = {n: per_query(lines, truth, queries, measures) for n, lines in runs.items()}
    return {m: np.array([per[n][m].mean() for n in runs]) @ mat for m in measures}


def human_of(pop, truth):
    grade = np.array([truth[k] for k in pop.keys])
    return np.column_stack([np.array([SCHEME.gain(int(g)) for g in grade]) if pop.variable[m] == "gain"
                            else (grade >= SCHEME.labels.index(SCHEME.threshold)).astype(float)
                            for m in pop.measures])


def test_machine_values_and_the_exact_linear_part():
    runs, truth, originals, holes, dists, queries = world()
    pop = ps.population(runs, dists, holes, queries, SCHEME, DEPTH)
    for s, (name, lines) in enumerate(runs.items()):
        expected = expected_per_query(lines, dists, queries, SCHEME, DEPTH)
        for m in pop.measures:
            assert abs(expected[m].mean() - pop.machine[m][s]) < 1e-12
    _, mat = ps.columns(pop)
    ref = reference(runs, truth, queries, mat)
    human = human_of(pop, truth)
    p_at = pop.measures[1]
    linear = pop.machine[p_at] @ mat + (pop.weights[p_at] @ mat).T @ (human[:, 1] - pop.expected[p_at])
    assert np.allclose(linear, ref[p_at])  # P@k is linear in the holes' relevance
    nd = pop.measures[0]
    exact = ps.ndcg_values(pop, human[:, 0][None, :])[0] @ mat
    assert np.allclose(exact, ref[nd])  # the nonlinear nDCG the remainder is drawn with is the product's


def test_any_prefix_of_the_draws_is_a_sample_of_the_design():
    runs, truth, originals, holes, dists, queries = world(1, queries=6)
    pop = ps.population(runs, dists, holes, queries, SCHEME, DEPTH)
    for design in ps.DESIGNS:
        p = ps.design_probabilities(pop, design)
        assert abs(p.sum() - 1) < 1e-12 and np.all(p > 0)
        counts = np.zeros(len(p))
        for seed in range(300):
            draws = ps.draw(p, 20, seed)
            for h in draws[:7]:  # a person who stopped after 7 draws
                counts[h] += 1
        assert chisquare(counts, counts.sum() * p).pvalue > 0.001
    draws = [3, 1, 3, 5]
    decided = np.zeros(8, dtype=bool)
    decided[[1, 3]] = True
    assert ps.decided_prefix(draws, decided) == 3  # the draws before hole 5's: repeats of decided holes count


def test_intervals_cover_a_simulated_population():
    runs, truth, originals, holes, dists, queries = world(2)
    pop = ps.population(runs, dists, holes, queries, SCHEME, DEPTH)
    _, mat = ps.columns(pop)
    ref = reference(runs, truth, queries, mat)
    human = human_of(pop, truth)
    p = ps.design_probabilities(pop, "weighted")
    hits = {"seq": [], "fixed": []}
    for seed in range(60):
        draws = ps.draw(p, 60, seed)
        for j, m in enumerate(pop.measures):
            r = ps.intervals(pop, m, mat, p, draws, human[:, j], 0.95, 60)
            assert np.all(r.ci[1] - r.ci[0] > 0) and r.fixed is not None
            hits["seq"].append((r.seq[0] <= ref[m] + 1e-9) & (ref[m] <= r.seq[1] + 1e-9))
            hits["fixed"].append((r.ci[0] <= ref[m] + 1e-9) & (ref[m] <= r.ci[1] + 1e-9))
    assert np.mean(hits["seq"]) >= 0.95
    assert np.mean(hits["fixed"]) >= 0.9
