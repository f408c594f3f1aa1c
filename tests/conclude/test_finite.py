"""The benchmark's own mean (hiera_dspy.conclude.finite): the finite-population variance checked against every sample
of a tiny population, no zero-width interval from a sample without spread, intervals inside the metric's range, and
a sample of every query giving the exact value."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from hiera_dspy.conclude.ppi import EXACT, estimate, estimate_columns, p_value

# a tiny population of N = 9 queries: human values y, machine values x (skewed, imperfect)
POP_Y = np.array([0.0, 0.1, 0.1, 0.2, 0.3, 0.3, 0.5, 0.8, 1.0])
POP_X = np.array([0.1, 0.1, 0.0, 0.3, 0.2, 0.4, 0.4, 0.6, 0.9])


def every_sample(n: int, lam: float, estimand: str = "benchmark"):
    """(point estimate, variance its interval implies) for every one of the C(9, n) samples."""
    out = []
    for idx in combinations(range(len(POP_Y)), n):
        rest = np.setdiff1d(np.arange(len(POP_Y)), idx)
        e = estimate(POP_Y[list(idx)], POP_X[list(idx)], POP_X[rest], lam=lam, estimand=estimand, bounds=None)
        df = n - 1
        out.append((e.ppi, ((e.ci[1] - e.ci[0]) / 2 / stats.t.ppf(0.975, df)) ** 2))
    return np.array(out)


@pytest.mark.parametrize("n, lam", [(3, 0.5), (4, 1.0), (5, 0.3), (6, 0.0)])
def test_the_estimate_is_unbiased_and_its_variance_estimate_exact_over_every_sample(n, lam):
    f = n / len(POP_Y)
    got = every_sample(n, lam)
    assert got[:, 0].mean() == pytest.approx(POP_Y.mean())  # unbiased for the benchmark's mean
    slope = lam / (1 - f)  # PPI++ with the unsampled queries as ppi_py's unlabeled set: Cochran's slope lam/(1-f)
    exact = (1 - f) / n * np.var(POP_Y - slope * POP_X, ddof=1)  # Cochran 1977, (7.3) for a fixed slope
    assert got[:, 0].var() == pytest.approx(exact)  # the estimator's variance over all samples
    assert got[:, 1].mean() == pytest.approx(exact)  # and the interval's variance estimate is unbiased for it


def test_the_superpopulation_interval_overstates_the_benchmarks_variance():
    n, lam = 5, 0.3
    exact = every_sample(n, lam)[:, 0].var()
    shipped = every_sample(n, lam, "superpopulation")
    assert shipped[:, 1].mean() > 1.3 * exact  # the extra width that flattered the measured coverage


def spread_on_few(total: int = 400, share: float = 0.05, seed: int = 0):
    """Two systems that differ on `share` of the queries (human differences), the machine seeing most of them."""
    rng = np.random.default_rng(seed)
    differ = rng.random(total) < share
    y = np.where(differ, rng.choice([0.1, 0.2, 0.3], total), 0.0)
    x = np.where(differ, y * 0.7, 0.0) + np.where(rng.random(total) < 0.02, 0.1, 0.0)
    return y, x


def test_no_zero_width_interval_when_the_sample_shows_no_spread():
    y, x = spread_on_few()
    truth, total, n = y.mean(), len(y), 40
    widths, covered, flat, shipped_zero = [], [], 0, 0
    for seed in range(300):
        picked = np.zeros(total, dtype=bool)
        picked[np.random.default_rng(seed).choice(total, n, replace=False)] = True
        e = estimate(y[picked], x[picked], x[~picked], bounds=(-1.0, 1.0))
        flat += np.ptp(y[picked]) == 0
        widths.append(e.ci[1] - e.ci[0])
        covered.append(e.ci[0] <= truth <= e.ci[1])
        old = estimate(y[picked], x[picked], x[~picked], estimand="superpopulation")
        shipped_zero += old.ci[1] - old.ci[0] < 1e-12
    assert flat > 20 and shipped_zero > 20  # samples that saw no difference: the shipped interval was [0, 0]
    assert min(widths) > 0 and np.mean(covered) >= 0.95  # measured 0.98


def test_a_constant_sample_gets_the_betting_interval_not_zero_width():
    # 12 of 40 queries sampled, every sampled human value 1 and the machine agreeing on them: not zero width
    x = np.linspace(0.3, 0.95, 28)
    e = estimate(np.ones(12), np.ones(12), x)
    assert e.rule == "betting" and e.ci[0] < e.ppi <= e.ci[1] and e.ci[1] - e.ci[0] > 0.1
    outside, inside = e.ci[0] - 0.02, (e.ci[0] + e.ppi) / 2  # the p-value is below 5% exactly outside the interval
    assert 0 < p_value(np.ones(12), np.ones(12), x, null=outside) < 0.05 < p_value(np.ones(12), np.ones(12), x,
                                                                                    null=inside)
    assert estimate(np.ones(4), np.ones(4), x, estimand="superpopulation").ci == (1.0, 1.0)  # what was shipped


def test_no_cliff_between_a_flat_sample_and_one_moved_by_a_thousandth():
    # finding 3: width 0.105 for the flat sample, 0.0001 once one residual moved by 0.001
    x = np.random.default_rng(0).uniform(0.2, 0.8, 400)
    flat = estimate(x[:40], x[:40], x[40:])
    moved = x[:40].copy()
    moved[7] += 0.001
    nudged = estimate(moved, x[:40], x[40:])
    width = [e.ci[1] - e.ci[0] for e in (flat, nudged)]
    assert width[1] == pytest.approx(width[0], rel=0.05) and width[1] > 0.05


def test_confident_rare_misses_are_covered_when_the_sample_misses_them():
    # finding 3: 12 confident misses of +0.5 among residuals within 0.001, N = 400, n = 40: covered 0.718
    rng = np.random.default_rng(5)
    x = rng.uniform(0.2, 0.5, 400)
    y = x + rng.uniform(-0.001, 0.001, 400)
    y[rng.choice(400, 12, replace=False)] += 0.5
    picks = np.array([rng.choice(400, 40, replace=False) for _ in range(600)])
    rest = np.array([np.setdiff1d(np.arange(400), p) for p in picks])
    c = estimate_columns(y[picks].T, x[picks].T, x[rest].T, bounds=(0.0, 1.0))
    assert np.mean((c.lo <= y.mean()) & (y.mean() <= c.hi)) >= 0.93
    assert (c.hi - c.lo > 0.01).all()


def test_clipping_never_leaves_an_empty_interval():
    # the machine says 0.3 on the sampled queries, the person 0 (nearly), the machine 0.1 elsewhere: the point
    # estimate 0.12 - 0.3 and its t interval lie below 0, and clipping gave [0, 0]
    y = np.zeros(40)
    y[:3] = 0.01
    x = np.concatenate([np.full(40, 0.3), np.full(360, 0.1)])
    e = estimate(y, x[:40], x[40:], n_min=2)
    assert e.ci[1] - e.ci[0] > 0 and e.ci[0] >= 0


def test_intervals_stay_inside_the_metrics_range():
    rng = np.random.default_rng(3)
    y = (rng.random((10, 50)) < 0.1).astype(float)  # mostly 0: a weak system's P@10 on 10 sampled queries
    c = estimate_columns(y, y * 0.9, np.full((90, 50), 0.05), bounds=(0.0, 1.0))
    assert (c.lo >= 0).all() and (c.hi <= 1).all() and (c.human_lo >= 0).all() and (c.hi > c.lo).all()


def test_below_n_min_the_slope_is_one_and_n_min_reads_the_machine_over_every_query():
    rng = np.random.default_rng(1)
    x = np.where(rng.random(400) < 0.05, 0.9, 0.02)  # machine values skewed over the benchmark
    y = np.clip(x + rng.normal(0, 0.05, 400), 0, 1)
    calm = np.argsort(x)[:40]  # a sample that drew none of the rare high queries: its own skewness says nothing
    rest = np.setdiff1d(np.arange(400), calm)
    e = estimate(y[calm], x[calm], x[rest])
    g = stats.skew(x, bias=False)
    assert e.n_min >= int(28 + 25 * g * g) + 1 > 200
    assert e.rule == "betting" and e.lam == pytest.approx(1 - 40 / 400)  # below n_min: slope 1, betting beside t


def test_a_sample_of_every_query_gives_the_exact_value():
    y, x = np.array([0.2, 0.5, 0.9]), np.array([0.1, 0.5, 1.0])
    e = estimate(y, x, [])
    assert (e.ppi, e.ci, e.human_only, e.note, e.rule) == (pytest.approx(y.mean()), None, pytest.approx(y.mean()),
                                                           EXACT, "exact")
    assert p_value(y, x, []) is None


def test_ppi_plus_plus_tuning_is_an_option_from_n_min_on():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 300)
    y = np.clip(0.5 * x + rng.normal(0, 0.05, 300), 0, 1)  # a machine on the wrong scale: tuning pays here
    default = estimate(y[:60], x[:60], x[60:])
    tuned = estimate(y[:60], x[:60], x[60:], tune=True)
    assert default.rule == "difference" and tuned.rule == "regression" and tuned.lam < 0.8
    assert tuned.ci[1] - tuned.ci[0] < default.ci[1] - default.ci[0]
    below = estimate(y[:20], x[:20], x[20:], tune=True)  # below n_min (29): slope 1, the betting interval beside t
    assert below.rule == "betting" and below.lam == pytest.approx(1 - 20 / 300)


def test_a_stratified_sample_gets_the_stratified_variance():
    # finding 7: a stratified sample used the simple-random-sample variance (1.69x the design's)
    from hiera_dspy.conclude.finite import stratified

    rng = np.random.default_rng(7)
    layer = np.repeat([0, 1, 2, 3], 100)
    y = np.clip(0.1 * layer + rng.normal(0, 0.03 * (layer + 1), 400), -1, 1)  # residuals that differ by stratum
    picked = np.concatenate([rng.choice(np.flatnonzero(layer == h), 10, replace=False) for h in range(4)])
    rest = np.setdiff1d(np.arange(400), picked)
    _, se, df = stratified(y[picked, None], layer[picked], layer[rest])
    s2 = [y[picked][layer[picked] == h].var(ddof=1) for h in range(4)]
    assert se[0] ** 2 == pytest.approx(sum(0.25 ** 2 * (1 - 10 / 100) * v / 10 for v in s2))
    srs = (1 - 40 / 400) / 40 * y[picked].var(ddof=1)
    assert se[0] ** 2 < srs / 1.5 and 9 < df[0] < 36
    # a stratum with one sampled row is merged into the next
    one = np.concatenate([picked[:1], picked[10:]])
    _, se1, _ = stratified(y[one, None], layer[one], layer[np.setdiff1d(np.arange(400), one)])
    assert np.isfinite(se1).all() and se1[0] > 0
    # the estimate's interval through estimate(strata=...): narrower than the random-sample one, and it covers
    truth, hits, ratio = y.mean(), [], []
    for _ in range(300):
        p = np.concatenate([rng.choice(np.flatnonzero(layer == h), 10, replace=False) for h in range(4)])
        rng.shuffle(p)
        r = np.setdiff1d(np.arange(400), p)
        e = estimate(y[p], np.zeros(40), np.zeros(360), strata=(layer[p], layer[r]), bounds=None)
        plain = estimate(y[p], np.zeros(40), np.zeros(360), bounds=None)
        hits.append(e.ci[0] <= truth <= e.ci[1])
        ratio.append((e.ci[1] - e.ci[0]) / (plain.ci[1] - plain.ci[0]))
    assert np.mean(hits) >= 0.92 and np.mean(ratio) < 0.9
