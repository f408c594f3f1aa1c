"""The strata of the stratified human sample: per-query uncertainty (the sum of p(1 - p) over a query's holes, the
definition bench/conclusions_small.py imports), quantile strata, proportional allocation by largest remainders, and
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


@pytest.mark.parametrize("sizes, n, want", [([10, 10, 10, 10], 10, [3, 3, 2, 2]), ([3, 3, 2, 2], 5, [2, 1, 1, 1]),
                                            ([100, 100, 100, 100], 40, [10, 10, 10, 10]), ([1, 6, 3], 5, [1, 3, 1]),
                                            ([5, 5], 0, [0, 0]), ([2, 3], 5, [2, 3])])
def test_allocation_is_proportional_by_largest_remainders(sizes, n, want):
    k = allocate(sizes, n)
    assert k.tolist() == want and k.sum() == n
    assert np.all(np.abs(k - np.array(sizes) * n / sum(sizes)) < 1)


def test_relevance_probability_from_distribution_then_confidence_then_unknown():
    msrd = get_scheme("msrd")  # Irrelevant, Relevant; threshold Relevant
    assert relevance_probability({"distribution": {"Relevant": 0.3, "Irrelevant": 0.7}}, msrd) == pytest.approx(0.3)
    assert relevance_probability({"machine_label": "Relevant", "confidence": 0.75}, msrd) == 0.75
    assert relevance_probability({"machine_label": "Irrelevant", "confidence": 0.75}, msrd) == 0.25
    assert relevance_probability({"machine_label": None, "confidence": 0.0, "escalated": True}, msrd) == UNKNOWN
    assert relevance_probability({"machine_label": "Relevant", "confidence": None}, msrd) == UNKNOWN


def test_with_at_least_one_query_per_stratum_every_stratum_gets_one_within_one_of_its_share():
    for total in range(1, 120):
        for k in range(1, min(total, 9) + 1):
            sizes = np.array([len(s) for s in strata_of(np.zeros(total), k)])
            for n in range(k, total + 1):
                got = allocate(sizes, n)
                assert got.min() >= 1 and np.all(got <= sizes), (total, k, n, got)
                assert np.all(np.abs(got - sizes * n / total) < 1), (total, k, n, got)
