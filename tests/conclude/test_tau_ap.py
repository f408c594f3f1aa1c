"""tau_ap (Yilmaz, Aslam and Robertson, SIGIR 2008) by hand on four systems, and the ranking comparison eval.holes
reports: Kendall's tau (scipy), tau_ap and the run that moved most."""

from __future__ import annotations

import pytest

from hiera_dspy.conclude.retrieval import ranking_agreement, tau_ap


def test_tau_ap_by_hand():
    truth = [0.4, 0.3, 0.2, 0.1]  # systems A > B > C > D
    assert tau_ap(truth, truth) == 1 and tau_ap(truth, [1, 2, 3, 4]) == -1
    # estimate A, C, B, D: C(2)=1/1 (A above C), C(3)=1/2 (A yes, C no), C(4)=3/3 -> 2/3 * 2.5 - 1
    assert tau_ap(truth, [4, 2, 3, 1]) == pytest.approx(2 / 3)
    # estimate B, A, C, D: the swap at the top: C(2)=0, C(3)=1, C(4)=1 -> 2/3 * 2 - 1
    assert tau_ap(truth, [3, 4, 2, 1]) == pytest.approx(1 / 3)
    # estimate A, B, D, C: the swap at the bottom: 1 + 1 + 2/3 -> 2/3 * 8/3 - 1
    assert tau_ap(truth, [4, 3, 1, 2]) == pytest.approx(7 / 9)
    assert tau_ap([1.0], [1.0]) is None
    with pytest.raises(ValueError):
        tau_ap([1, 2], [1])


def test_ranking_agreement_names_the_run_that_moved_most():
    out = ranking_agreement(["a", "b", "c"], [0.5, 0.4, 0.3], [0.45, 0.6, 0.31])
    assert out["kendall_tau"] == pytest.approx(1 / 3) and out["tau_ap"] == pytest.approx(0.0)
    assert out["largest_change"] == {"run": "b", "before": 0.4, "after": 0.6, "change": pytest.approx(0.2)}
    assert ranking_agreement([], [], [])["largest_change"] is None
