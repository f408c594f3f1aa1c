"""The plan before labelling (hiera_dspy.conclude.sample_size): the sample size for a width and for 80% power by the
finite-population formulas, n_min from the residual the judge's probabilities predict over every query, pairs no
sample can tell apart."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hiera_dspy.conclude.sample_size import (
    draw_labels,
    n_for_power,
    n_for_width,
    plan,
    predicted_n_min,
    residual_sd,
    standard_error,
)


def test_n_for_width_is_the_first_n_whose_finite_population_interval_is_narrow_enough():
    n = n_for_width(lambda k: (0.2, k - 1), 400, 0.1)
    width = [2 * stats.t.ppf(0.975, k - 1) * np.sqrt((1 - k / 400) / k) * 0.2 for k in (n - 1, n)]
    assert width[0] > 0.1 >= width[1]
    # Cochran's n0 / (1 + n0 / N) with n0 = (2 z sd / w)^2, to within the t quantile's extra
    n0 = (2 * 1.96 * 0.2 / 0.1) ** 2
    assert n0 / (1 + n0 / 400) <= n <= n0 / (1 + n0 / 400) * 1.1
    assert n_for_width(lambda k: (5.0, k - 1), 50, 0.01) == 50  # only every query gives that width (the exact value)


def test_n_for_power_separates_a_difference_with_80_percent_power():
    n = n_for_power(0.05, lambda k: (0.15, k - 1), 1000)
    se = standard_error(0.15, n, 1000)
    assert 0.05 >= (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * se
    assert n_for_power(0.0, lambda k: (0.15, k - 1), 1000) is None  # no difference: no n can be named
    # simulated: a t test on n of 1000 at that difference rejects about 80% of the time
    rng = np.random.default_rng(0)
    pop = 0.05 + rng.normal(0, 0.15, 1000)
    pop += 0.05 - pop.mean()
    hits = []
    for s in range(400):
        x = rng.choice(pop, n, replace=False)
        t = x.mean() / standard_error(x.std(ddof=1), n, 1000)
        hits.append(2 * stats.t.sf(abs(t), n - 1) < 0.05)
    assert np.mean(hits) == pytest.approx(0.8, abs=0.07)


def test_plan_rows_for_systems_and_pairs_from_machine_values_and_simulated_humans():
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 1, 300)
    machine = {"p@10": {"A": a, "B": a * 0.9, "C": a.copy()}}
    simulated = [{"p@10": {s: np.clip(v + rng.normal(0, 0.1, 300), 0, 1) for s, v in machine["p@10"].items()}}
                 for _ in range(5)]
    lines = {(x.a, x.b): x for x in plan(machine, simulated, width=0.05)}
    assert list(lines) == [("A", None), ("B", None), ("C", None), ("A", "B"), ("A", "C"), ("B", "C")]
    assert lines[("A", None)].n_min == 29 and lines[("A", None)].n_power is None  # uniform values: the floor
    assert lines[("A", None)].sd == pytest.approx(residual_sd(a, [s["p@10"]["A"] for s in simulated]))
    assert 29 <= lines[("A", "B")].n_power < 300  # 0.9 a vs a: a mean difference of about 0.05
    assert lines[("A", "C")].n_power is None  # the machine sees no difference between A and C


def _holes(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """P@10 per query when hole j of query i is relevant with probability p[i, j] (one label set)."""
    return (rng.random(p.shape) < p).mean(axis=1)


def test_n_min_reads_the_skewness_of_the_residual_the_judges_probabilities_predict():
    rng = np.random.default_rng(0)
    # a skewed metric whose residual is symmetric: 40 of 400 queries have five sure hits, and every query two holes
    # the judge calls a coin toss (each hole's residual is +-0.05 with equal chance)
    p = np.zeros((400, 10))
    p[:40, :5] = 1.0
    p[:, 8:] = 0.5
    x = p.mean(axis=1)
    (line,) = plan({"p@10": {"A": x}}, [{"p@10": {"A": _holes(p, rng)}} for _ in range(20)], width=0.1)
    g = stats.skew(x, bias=False)
    assert line.n_min_machine == int(28 + 25 * g * g) + 1 > 200  # the machine's own values read as very skewed
    assert 29 <= line.n_min <= 60  # what the interval averages is not
    # a symmetric metric whose residual is a rare jump: one hole a query relevant with probability 0.1
    q = np.zeros((400, 10))
    q[:, 0], q[:, 1:4] = 0.1, rng.choice([0.0, 1.0], (400, 3))
    sims = [_holes(q, rng) for _ in range(20)]
    (line,) = plan({"p@10": {"A": q.mean(axis=1)}}, [{"p@10": {"A": s}} for s in sims], width=0.1)
    g_resid = np.sqrt(np.mean([stats.skew(s - q.mean(axis=1), bias=False) ** 2 for s in sims]))
    assert line.n_min_machine < 40 and line.n_min > 200  # the machine's values do not show the residual's skew
    assert abs(line.n_min - (28 + 25 * g_resid ** 2)) <= 2
    assert predicted_n_min(q.mean(axis=1), sims) == line.n_min


@pytest.mark.slow  # a coverage simulation: ~13 s (CI runs the slow tests; the default suite stays under 10 minutes)
def test_the_intervals_cover_less_below_the_predicted_n_min_than_at_it():
    """The rare-jump population above: a calibrated judge, so one label set drawn from its probabilities is the
    truth. The t interval alone covers less than nominal at 60 sampled queries, which the machine-values rule calls
    enough (its n_min is ~29); at the predicted n_min it covers, and below it the betting interval beside it does."""
    from hiera_dspy.conclude.ppi import estimate_columns

    rng = np.random.default_rng(3)
    q = np.zeros((400, 10))
    q[:, 0], q[:, 1:4] = 0.1, rng.choice([0.0, 1.0], (400, 3))
    x = q.mean(axis=1)
    n_min = predicted_n_min(x, [_holes(q, rng) for _ in range(20)])
    truths = np.column_stack([_holes(q, rng) for _ in range(100)])

    def coverage(n: int, samples: int = 1500, bounds=None) -> float:
        hits = []
        for s in range(samples):
            t = truths[:, s % truths.shape[1]]
            picked = np.zeros(len(x), dtype=bool)
            picked[rng.choice(len(x), n, replace=False)] = True
            c = estimate_columns(t[picked, None], x[picked, None], x[~picked, None], bounds=bounds,
                                 n_min=None if bounds is None else [n_min])
            hits.append(c.lo[0] - 1e-12 <= t.mean() <= c.hi[0] + 1e-12)
        return float(np.mean(hits))

    assert coverage(60) < 0.935 and coverage(n_min) >= 0.94 and coverage(60, 600, (0, 1)) >= 0.94


def test_label_sets_are_drawn_from_the_judges_probabilities():
    rng = np.random.default_rng(0)
    drawn = [draw_labels({"h": {"Relevant": 0.3, "Irrelevant": 0.7}}, rng)["h"] for _ in range(2000)]
    assert np.mean([d == {"Relevant": 1.0} for d in drawn]) == pytest.approx(0.3, abs=0.03)


def test_the_plans_n_min_reads_the_queries_a_hole_can_change():
    # 60% of the queries have no hole (residual 0 in every draw): over all N their zeros skew the residual, and the
    # estimate samples only the others
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 400)
    holes = np.arange(400) >= 240
    sims = [{"p@10": {"A": np.where(holes, np.clip(x + rng.normal(0, 0.1, 400), 0, 1), x)}} for _ in range(10)]
    (everywhere,), (domain,) = (plan({"p@10": {"A": x}}, sims, holes=h) for h in (None, {"p@10": {"A": holes}}))
    assert domain.n_min == predicted_n_min(x[holes], [s["p@10"]["A"][holes] for s in sims])
    assert domain.n_min < everywhere.n_min


def test_the_first_sample_holds_n_min_queries_with_holes():
    from hiera_dspy.conclude.sample_size import first_sample

    assert first_sample(30, 240, 400) == 50  # 60% of the queries have holes: 50 sampled hold 30 of them
    assert first_sample(30, None, 400) == 30 and first_sample(300, 100, 400) == 400


def _population(seed: int = 3, big_n: int = 120, domain: int = 72, draws: int = 20):
    """A system over `big_n` queries of which the first `domain` have holes: machine values and human values drawn
    from a calibrated judge (the same law as the plan's simulated sets), the rest known."""
    rng = np.random.default_rng(seed)
    x = np.zeros(big_n)
    x[:domain] = rng.uniform(0.2, 0.8, domain)

    def human():
        y = x.copy()
        y[:domain] = np.clip(x[:domain] + rng.normal(0, 0.12, domain), 0, 1)
        return y

    holes = np.arange(big_n) < domain
    return x, [human() for _ in range(draws)], human, holes


def test_the_width_plan_reaches_the_width_of_the_interval_the_report_gives():
    # the plan's n for a width is that of the report's own interval (the domain of queries with holes, the betting
    # interval below n_min), not a t interval over every query: before, a plan of 0.15 asked for far too few
    from hiera_dspy.conclude.finite import columns

    x, sims, human, holes = _population()
    (line,) = plan({"ndcg@10": {"A": x}}, [{"ndcg@10": {"A": y}} for y in sims], width=0.15,
                   holes={"ndcg@10": {"A": holes}})[:1]
    rng = np.random.default_rng(9)

    def width_at(n: int) -> float:  # the report's interval on fresh samples of n of the 120 queries
        out = []
        for _ in range(60):
            y, order = human(), rng.permutation(120)
            dec = [q for q in order[:n] if holes[q]]
            if len(dec) < 2:
                return np.inf  # no interval yet
            rest = np.setdiff1d(np.flatnonzero(holes), dec)
            c = columns(y[dec, None], x[dec, None], x[rest, None], 0.95, None, (0.0, 1.0), [line.n_min])
            out.append(0.6 * float(c.hi[0] - c.lo[0]))
        return float(np.median(out))

    assert width_at(line.n_width) <= 0.15 * 1.1 and width_at(int(line.n_width * 0.75)) > 0.15


def test_with_the_queries_ranges_the_plan_reaches_the_width_of_the_confidence_sequence_the_report_gives():
    # the report's interval is the confidence sequence over each query's own range (conclude.ranges), its bets tuned
    # for the sample's size; a plan that still predicted the t interval with the betting one below n_min asked for
    # more queries than the report needs
    from hiera_dspy.conclude.finite import columns

    x, sims, human, holes = _population()
    lo = np.where(holes, np.clip(x - 0.4, 0, 1), x)
    hi = np.where(holes, np.clip(x + 0.4, 0, 1), x)
    sets = [{"ndcg@10": {"A": np.clip(y, lo, hi)}} for y in sims]
    (line,) = plan({"ndcg@10": {"A": x}}, sets, width=0.15, holes={"ndcg@10": {"A": holes}},
                   spans={"ndcg@10": {"A": (lo, hi)}})
    (switch,) = plan({"ndcg@10": {"A": x}}, sets, width=0.15, holes={"ndcg@10": {"A": holes}})
    rng = np.random.default_rng(9)

    def width_at(n: int) -> float:  # the report's interval on fresh samples of n of the 120 queries
        out = []
        for _ in range(60):
            y, order = np.clip(human(), lo, hi), rng.permutation(120)
            dec = [q for q in order[:n] if holes[q]]
            if len(dec) < 2:
                return np.inf
            rest = np.setdiff1d(np.flatnonzero(holes), dec)
            rows = np.concatenate([dec, rest])
            c = columns(y[dec, None], x[dec, None], x[rest, None], 0.95, None, (0.0, 1.0), [line.n_min],
                        spans=(lo[rows, None], hi[rows, None], n))
            assert c.rule[0] == "sequence"
            out.append(0.6 * float(c.hi[0] - c.lo[0]))
        return float(np.median(out))

    assert width_at(line.n_width) <= 0.15 * 1.1 and width_at(int(line.n_width * 0.75)) > 0.15
    assert line.n_width < switch.n_width


def test_with_the_queries_ranges_the_plan_tells_a_pair_apart_when_the_reports_sequence_does():
    # n to tell apart is where the report's own interval of the difference (the confidence sequence, Holm's first
    # step of one pair: the level itself) excludes 0 on 80% of samples; the t test's n (the plan until 2026-12-06)
    # asked for too few
    from hiera_dspy.conclude.finite import columns

    x, sims, human, holes = _population()
    rng = np.random.default_rng(4)
    shift = np.where(holes, 0.12, 0.0)
    lo = np.where(holes, np.clip(x - 0.4, 0, 1), x)
    hi = np.where(holes, np.clip(x + 0.4, 0, 1), x)
    b_lo, b_hi = np.clip(lo - shift, 0, 1), np.clip(hi - shift, 0, 1)
    sets = [{"m": {"A": np.clip(y, lo, hi), "B": np.clip(y - shift + rng.normal(0, 0.05, 120) * holes, b_lo, b_hi)}}
            for y in sims]
    machine = {"m": {"A": x, "B": np.clip(x - shift, b_lo, b_hi)}}
    mask = {"m": {"A": holes, "B": holes}}
    pair = [ln for ln in plan(machine, sets, holes=mask, spans={"m": {"A": (lo, hi), "B": (b_lo, b_hi)}})
            if ln.b is not None][0]
    t_pair = [ln for ln in plan(machine, sets, holes=mask) if ln.b is not None][0]
    d_lo, d_hi = lo - b_hi, hi - b_lo

    def told_apart(n: int) -> float:  # the share of fresh samples of n whose report interval excludes 0
        told = []
        for _ in range(60):
            a = np.clip(human(), lo, hi)
            d = a - np.clip(a - shift + rng.normal(0, 0.05, 120) * holes, b_lo, b_hi)
            md = machine["m"]["A"] - machine["m"]["B"]
            order = rng.permutation(120)
            dec = [q for q in order[:n] if holes[q]]
            rest = np.setdiff1d(np.flatnonzero(holes), dec)
            rows = np.concatenate([dec, rest])
            c = columns(d[dec, None], md[dec, None], md[rest, None], 0.95, None, (-1.0, 1.0), [29],
                        spans=(d_lo[rows, None], d_hi[rows, None], n))
            told.append(bool(c.lo[0] > 0 or c.hi[0] < 0))
        return float(np.mean(told))

    assert pair.n_power is not None and t_pair.n_power is not None
    # the power rises steeply in n (about 0.15 at 30, 0.6 at 38, 1.0 at 45): within 15% of the plan's n
    assert told_apart(round(pair.n_power * 1.15)) >= 0.8 > told_apart(round(pair.n_power * 0.8))
    assert t_pair.n_power < pair.n_power and told_apart(t_pair.n_power) < 0.5


def test_the_plan_from_a_decided_sample_reads_its_spread_over_the_queries_with_holes():
    # a sample whose residual spread (over the 72 queries with holes) is the simulated one asks what the plan asks,
    # twice the spread more; before, that spread was read as one over all 120 queries and asked ~1.6 times as many
    x, sims, _, holes = _population()
    sets = [{"p@10": {"A": y}} for y in sims]
    (line,) = plan({"p@10": {"A": x}}, sets, width=0.03, holes={"p@10": {"A": holes}})
    (same,) = plan({"p@10": {"A": x}}, sets, width=0.03, holes={"p@10": {"A": holes}},
                   sample_sd={("p@10", "A", None): line.sd_holes})
    (wider,) = plan({"p@10": {"A": x}}, sets, width=0.03, holes={"p@10": {"A": holes}},
                    sample_sd={("p@10", "A", None): 1.5 * line.sd_holes})
    assert line.n_width < 100 and same.n_width_sample == line.n_width < wider.n_width_sample
    # a sample whose own residuals are more skewed raises n_min, and the betting interval lasts longer
    (skewed,) = plan({"p@10": {"A": x}}, sets, width=0.03, holes={"p@10": {"A": holes}},
                     sample_sd={("p@10", "A", None): line.sd_holes}, sample_n_min={("p@10", "A", None): 66})
    assert skewed.n_width_sample > line.n_width


def test_the_plan_recommends_stratifying_only_where_it_is_predicted_10_percent_narrower():
    # residuals whose mean differs by stratum (hard labels of an uneven judge) gain from strata; residuals centred in
    # every stratum (a calibrated judge's expected values) do not, and the plan then says to draw at random
    from hiera_dspy.conclude.sample_size import recommended_design, stratified_gain

    rng = np.random.default_rng(4)
    strata = np.repeat(np.arange(4), 50)
    x = rng.uniform(0.2, 0.8, 200)
    centred = [x + rng.normal(0, 0.1, 200) for _ in range(10)]
    shifted = [x + np.array([-0.2, -0.05, 0.05, 0.2])[strata] + rng.normal(0, 0.1, 200) for _ in range(10)]
    assert abs(stratified_gain(x, centred, strata)) < 0.03 and stratified_gain(x, shifted, strata) > 0.3
    lines = {k: plan({"p@10": {"A": x}}, [{"p@10": {"A": y}} for y in sims], strata=strata)
             for k, sims in (("centred", centred), ("shifted", shifted))}
    assert recommended_design(lines["centred"])[0] == "random"
    assert recommended_design(lines["shifted"])[0] == "stratified"


def test_the_active_gain_is_predicted_where_the_weights_find_the_residuals_spread():
    from hiera_dspy.conclude.sample_size import active_gain

    rng = np.random.default_rng(0)
    x = np.full(100, 0.5)
    spread = np.where(np.arange(100) < 10, 0.3, 0.01)  # ten queries hold nearly all of the residual's variance
    sims = [x + rng.normal(0, spread) for _ in range(50)]
    assert active_gain(x, sims, np.ones(100)) == pytest.approx(0.0, abs=1e-9)  # equal weights: a random draw
    assert active_gain(x, sims, spread) > 0.25
    assert active_gain(x, sims, spread[::-1]) < 0  # weights on the wrong queries cost
