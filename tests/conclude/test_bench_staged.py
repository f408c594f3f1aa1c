"""The staged benchmark (bench/conclusions_staged.py) in small: the floor no valid interval goes below, the active
draw's headroom, and a short run on MSRD's bundled judgments whose report (the aligned sequence) is narrower than the
sequence of before and no narrower than the floor."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bench import conclusions_staged as staged
from hiera_dspy.conclude import sequence


def test_the_floor_is_the_width_a_valid_interval_needs_on_a_sample_of_zeros():
    # 10 queries with holes of 20; 2 decided: a sample misses k = 7 of them with probability C(3, 2) / C(10, 2) =
    # 3 / 45 > 0.05, and k = 8 with 1 / 45: the interval must hold the mean with 7 drops of 0.1 and with 7 rises of 0.2
    big_n = 20
    c = {"x": np.full((big_n, 1), 0.5), "lo": np.full((big_n, 1), 0.4), "hi": np.full((big_n, 1), 0.7),
         "certain": (np.arange(big_n) >= 10)[:, None]}
    assert staged.valid_floor(c, np.array([2]))[0] == pytest.approx((7 * 0.1 + 7 * 0.2) / big_n)
    # and the product's confidence sequence on such a sample is at least that wide (the floor is not too high)
    lo_r, hi_r = np.where(c["certain"], 0.0, -0.1), np.where(c["certain"], 0.0, 0.2)
    _, lo, hi = sequence.mean_interval(np.zeros((2, 1)), lo_r, hi_r, [0, 1], np.ones(big_n), 0.5, horizon=5)
    assert hi[0] - lo[0] >= staged.valid_floor(c, np.array([2]))[0]


def test_active_headroom_is_nil_for_even_weights_and_the_ideal_weights_gain():
    rng = np.random.default_rng(0)
    big_n = 30
    r = rng.normal(0, 0.1, (big_n, 2)) * (np.arange(big_n) % 3 == 0)[:, None]  # a third of the queries err
    cols = {"m": {"x": np.zeros((big_n, 2)), "y": r, "certain": np.zeros((big_n, 2), dtype=bool), "systems": 2}}
    even = staged.active_headroom(cols, np.ones(big_n))
    assert even["all"] == pytest.approx(0.0, abs=1e-12) and even["ideal_all"] > 0.2
    assert staged.active_headroom(cols, np.abs(r).mean(axis=1))["all"] > 0.2


def test_a_short_staged_run_reports_the_aligned_sequence_narrower_than_before_and_above_the_floor():
    args = SimpleNamespace(dataset="msrd", trec_qrels=None, queries=40, systems=4, full=0.4, seed=3)
    b, _ = staged.benchmark(args)
    records = staged.judge_records(b, "labels", 4)
    cols = staged.columns_of(b, records)
    samples, _ = staged.samples_of(b, records, "random", 14, 8, 5)
    rows = staged.stage_coverage(cols, samples, None, 4)
    first = rows[0]
    assert first["decided"] == 4
    assert first["rep_width"] < first["old_width"]  # aligned ranges, the bets of now
    assert first["floor"] <= first["rep_width"]
    assert first["oracle"] > 0 and 0.0 <= first["rep_systems_min"] <= 1.0
