"""The staged benchmark in small: the floor no valid interval goes below (`hiera_dspy.conclude.ranges.valid_floor`),
and a short run of `bench.conclusions --staged` on MSRD's bundled judgments whose report (the sequence on aligned
ranges) is narrower than the sequence of before and no narrower than the floor."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.conclude import sequence
from hiera_dspy.conclude.ranges import valid_floor
from tests.bench_command import run_bench


def test_the_floor_is_the_width_a_valid_interval_needs_on_a_sample_of_zeros():
    # 10 queries with holes of 20; 2 decided: a sample misses k = 7 of them with probability C(3, 2) / C(10, 2) =
    # 3 / 45 > 0.05, and k = 8 with 1 / 45: the interval must hold the mean with 7 drops of 0.1 and with 7 rises of 0.2
    big_n = 20
    floor = valid_floor(np.full(10, 0.1), np.full(10, 0.2), 2, big_n)
    assert floor == pytest.approx((7 * 0.1 + 7 * 0.2) / big_n)
    assert np.isnan(valid_floor(np.full(10, 0.1), np.full(10, 0.2), 10, big_n))  # every query decided: exact
    # the product's confidence sequence on such a sample is at least that wide (the floor is not set too high)
    holes = (np.arange(big_n) < 10)[:, None]
    lo_r, hi_r = np.where(holes, -0.1, 0.0), np.where(holes, 0.2, 0.0)
    _, lo, hi = sequence.mean_interval(np.zeros((2, 1)), lo_r, hi_r, [0, 1], np.ones(big_n), 0.5, horizon=5)
    assert hi[0] - lo[0] >= floor


@pytest.mark.slow  # a bench run: ~7 s (CI runs the slow tests; the default suite stays under 10 minutes)
def test_a_short_staged_run_reports_the_aligned_sequence_narrower_than_before_and_above_the_floor(tmp_path):
    table = tmp_path / "staged.md"
    run_bench("conclusions", "--staged", "--dataset", "msrd", "--queries", "40", "--systems", "4", "--samples", "8",
              "--sample-size", "14", "--every", "4", "--designs", "random", "--judges", "labels", "--table", table)
    rows = [line.split("|")[1:-1] for line in table.read_text().splitlines() if line.startswith("| labels")]
    first = [cell.strip() for cell in rows[0]]
    assert first[:3] == ["labels", "random", "4"]
    before, now, oracle, floor = float(first[6]), float(first[8]), float(first[11]), float(first[13])
    assert now < before  # aligned ranges and the bets of now, on the same draws
    assert floor <= now and oracle > 0
