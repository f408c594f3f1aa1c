"""The strata of the stratified human sample: per-query uncertainty (the sum of p(1 - p) over a query's holes, the
definition bench/conclusions_small.py imports), quantile strata, proportional allocation with the leftovers at random
(exact in expectation), and
a hole's relevance probability from its record."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.conclude.strata import UNKNOWN, allocate, query_uncertainty, relevance_probability, strata_of
from hiera_dspy.labels import get_scheme


def test_uncertainty_sums_p_times_one_minus_p_per_query():
    u = query_uncertainty(["a", "b", "c"], [("a", 0.5), ("b", 1.0), ("a", 0.1), ("c", 0.3), ("zz", 0.5)])
    assert u == pytest.approx([0.25 + 0.09, 0.0, 0.21])


def test_strata_are_quantiles_of_equal_size_ties_in_benchmark_order():
    u = np.array([5.0, 1.0, 1.0, 9.0, 0.0, 3.0, 7.0, 2.0, 8.0, 4.0])
    assert [s.tolist() for s in strata_of(u, 4)] == [[4, 1, 2], [7, 5, 9], [0, 6], [8, 3]]
    with pytest.raises(ValueError, match="at least 1"):
        strata_of(u, 0)


class Grid:
    """A stand-in for `random.Random`: `random()` walks a fine grid of [0, 1) and `sample` every order of the strata
    in turn, so averages over a whole cycle are exact."""

    def __init__(self, points: int = 1000):
        self.u = iter((np.arange(points) + 0.5) / points)
        self.turn = 0

    def random(self) -> float:
        return float(next(self.u))

    def sample(self, population, k):
        from itertools import permutations

        orders = list(permutations(population, k))
        self.turn += 1
        return list(orders[self.turn % len(orders)])


@pytest.mark.parametrize("sizes, n", [([10, 10, 10, 10], 10), ([3, 3, 2, 2], 5), ([100, 100, 100, 100], 40),
                                      ([1, 6, 3], 5), ([5, 5], 0), ([2, 3], 5), ([100] * 4, 10), ([7, 7, 6], 11)])
def test_allocation_is_proportional_in_expectation_exactly(sizes, n):
    share = np.array(sizes) * n / sum(sizes)
    grid = Grid(1200)
    draws = np.array([allocate(sizes, n, grid) for _ in range(1200)])  # 1200: a whole number of orders (24 or 2)
    assert (draws.sum(axis=1) == n).all() and np.all(np.abs(draws - share) < 1)
    # every stratum's expected count is its share, so every query is drawn with probability n / N (self-weighting)
    assert draws.mean(axis=0) == pytest.approx(share, abs=1e-3)


def test_leftovers_no_longer_always_go_to_the_least_uncertain_strata():
    import random

    seen = {tuple(allocate([100] * 4, 10, random.Random(seed))) for seed in range(50)}
    assert (3, 3, 2, 2) in seen and len(seen) == 6  # every way of giving the 2 leftovers to 2 of the 4 strata


def test_relevance_probability_from_distribution_then_confidence_then_unknown():
    msrd = get_scheme("msrd")  # Irrelevant, Relevant; threshold Relevant
    assert relevance_probability({"distribution": {"Relevant": 0.3, "Irrelevant": 0.7}}, msrd) == pytest.approx(0.3)
    assert relevance_probability({"machine_label": "Relevant", "confidence": 0.75}, msrd) == 0.75
    assert relevance_probability({"machine_label": "Irrelevant", "confidence": 0.75}, msrd) == 0.25
    assert relevance_probability({"machine_label": None, "confidence": 0.0, "escalated": True}, msrd) == UNKNOWN
    assert relevance_probability({"machine_label": "Relevant", "confidence": None}, msrd) == UNKNOWN


def test_every_allocation_sums_to_n_within_one_of_the_share():
    import random

    rng = random.Random(0)
    for total in range(1, 120, 7):
        for k in range(1, min(total, 9) + 1):
            sizes = np.array([len(s) for s in strata_of(np.zeros(total), k)])
            for n in range(k, total + 1, 3):
                got = allocate(sizes, n, rng)
                assert got.sum() == n and np.all(got <= sizes), (total, k, n, got)
                assert np.all(np.abs(got - sizes * n / total) < 1), (total, k, n, got)
