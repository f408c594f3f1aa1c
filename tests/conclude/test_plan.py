"""The plan before labelling (hiera_dspy.conclude.plan): the sample size for a width and for 80% power by the
finite-population formulas, n_min from the machine's values over every query, pairs no sample can tell apart."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hiera_dspy.conclude.plan import draw_labels, n_for_power, n_for_width, plan, residual_sd, standard_error


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


def test_n_min_reads_the_skewness_of_the_machine_values_over_every_query():
    x = np.where(np.arange(400) < 20, 0.8, 0.0)
    (line,) = plan({"p@10": {"A": x}}, [{"p@10": {"A": x}}] * 2, width=0.1)
    g = stats.skew(x, bias=False)
    assert line.n_min == int(28 + 25 * g * g) + 1 > 60


def test_label_sets_are_drawn_from_the_judges_probabilities():
    rng = np.random.default_rng(0)
    drawn = [draw_labels({"h": {"Relevant": 0.3, "Irrelevant": 0.7}}, rng)["h"] for _ in range(2000)]
    assert np.mean([d == {"Relevant": 1.0} for d in drawn]) == pytest.approx(0.3, abs=0.03)
