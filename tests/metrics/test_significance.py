"""McNemar's paired test (exact and chi-square forms), Bonferroni and Holm, checked by hand."""

import math

import pytest

from hiera_dspy.metrics.significance import bonferroni, holm, mcnemar


def paired(b, c, both_right=0, both_wrong=0):
    """gold all "1"; b pairs A right/B wrong, c pairs A wrong/B right, plus concordant pairs."""
    a = ["1"] * b + ["0"] * c + ["1"] * both_right + ["0"] * both_wrong
    bb = ["0"] * b + ["1"] * c + ["1"] * both_right + ["0"] * both_wrong
    return ["1"] * len(a), a, bb


def test_exact_form():
    # b=1, c=6: p = 2 * P(X <= 1), X ~ Bin(7, 0.5) = 2 * (1 + 7) / 128 = 0.125
    r = mcnemar(*paired(1, 6, both_right=5, both_wrong=2))
    assert (r["b"], r["c"], r["n"], r["method"]) == (1, 6, 14, "exact")
    assert r["p_value"] == pytest.approx(0.125)
    assert r["statistic"] == 1.0


def test_chi2_form():
    # b=30, c=12 (b+c=42 >= 25): stat = (|30-12| - 1)^2 / 42 = 289/42 = 6.880952...
    # 1-dof chi-square sf(x) = erfc(sqrt(x/2)) ~= 0.008712
    r = mcnemar(*paired(30, 12, both_right=10))
    assert r["method"] == "chi2"
    assert r["statistic"] == pytest.approx(289 / 42)
    assert r["p_value"] == pytest.approx(math.erfc(math.sqrt(289 / 84)))
    assert r["p_value"] == pytest.approx(0.008712, abs=1e-6)


def test_forced_forms_and_symmetry():
    # b=3, c=0 exact: 2 * (1/2)^3 = 0.25; forced chi2: (3-1)^2/3 = 4/3
    assert mcnemar(*paired(3, 0), exact=True)["p_value"] == pytest.approx(0.25)
    r = mcnemar(*paired(3, 0), exact=False)
    assert r["method"] == "chi2" and r["statistic"] == pytest.approx(4 / 3)
    assert mcnemar(*paired(30, 12), exact=True)["method"] == "exact"
    g, a, b = paired(2, 9)
    assert mcnemar(g, a, b)["p_value"] == pytest.approx(mcnemar(g, b, a)["p_value"])


def test_no_discordant_pairs_and_none_counts_as_wrong():
    r = mcnemar(*paired(0, 0, both_right=4))
    assert (r["b"], r["c"], r["statistic"], r["p_value"]) == (0, 0, 0.0, 1.0)
    assert mcnemar(*paired(0, 0), exact=False)["p_value"] == 1.0
    # every pair is used; a None prediction is wrong: pair 2 (A None, B right) is discordant for B
    r = mcnemar(["1", "1", "1", "1"], ["1", None, "0", None], ["0", "1", None, None])
    assert (r["n"], r["b"], r["c"]) == (4, 1, 1)
    # a method that fails on 6 pairs the other gets right is no longer "tied" with it: b=0, c=6, p = 2/2^6
    g, a, b = paired(0, 6, both_right=4)
    a = [None if x == "0" else x for x in a]
    assert mcnemar(g, a, b)["p_value"] == pytest.approx(2 / 64)
    with pytest.raises(ValueError):
        mcnemar(["1"], ["1"], [])


def test_bonferroni():
    assert bonferroni([0.01, 0.3, 0.6]) == pytest.approx([0.03, 0.9, 1.0])  # 0.6*3 capped at 1
    assert bonferroni([0.01], m=4) == pytest.approx([0.04])
    assert bonferroni([0.5, None], m=2) == [1.0, None]
    assert bonferroni([]) == []


def test_holm_by_hand_and_none_left_out():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1, then made monotone: 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
