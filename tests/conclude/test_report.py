"""The conclusions in words: a separated pair, a pair that more sampled queries would separate, and no sample."""

from __future__ import annotations

import pytest

from hiera_dspy.conclude.report import sample_lines, sentences


def diff(a, b, ppi, ci, p, more, n=20):
    return {"a": a, "b": b, "measure": "ndcg@10", "ppi": ppi, "ci": ci, "p": p, "more_queries": more, "n": n,
            "note": None}


def test_separated_and_not_yet_separated_pairs_in_plain_sentences():
    c = {"level": 0.95, "queries": 200, "differences": [
        diff("A", "B", 0.05, [0.02, 0.08], 0.003, 0),
        diff("B", "C", -0.01, [-0.03, 0.01], 0.4, 60),
        diff("A", "C", 0.04, [0.001, 0.08], 0.07, 0),
        diff("C", "D", 0.001, [-0.05, 0.052], 0.9, 50000)]}
    assert sentences(c, "ndcg@10") == [
        "A > B (difference 0.050 [0.020, 0.080], p = 0.003).",
        "B and C cannot be told apart at this sample size (difference 0.010 [-0.010, 0.030], p = 0.400); label about "
        "60 more sampled queries to tell B from C (80% power at the difference estimated now).",
        "A and C cannot be told apart after Holm's correction over the pairs (difference 0.040 [0.001, 0.080], "
        "p = 0.070).",
        "C and D cannot be told apart at this sample size (difference 0.001 [-0.050, 0.052], p = 0.900); only "
        "labelling all 180 unsampled queries would tell C from D (80% power at the difference estimated now)."]


def test_without_a_sample_the_report_says_how_to_draw_one():
    assert "Draw one with --human-sample N|P%" in sample_lines(None)[0]


def test_a_sample_below_cochrans_rule_carries_a_caution_naming_the_estimates():
    from hiera_dspy.conclude.report import small_sample_note

    enough = {"estimates": {"A": {"p@10": {"n": 40, "n_min": 29}}}, "differences": [diff("A", "B", 0.1, [0, 0.2],
                                                                                          0.04, 0)]}
    assert small_sample_note(enough) is None  # a difference without n_min is not counted
    short = {"estimates": {"A": {"p@10": {"n": 20, "n_min": 75}, "ndcg@10": {"n": 20, "n_min": 19}}},
             "differences": [{**diff("A", "B", 0.1, [0, 0.2], 0.04, 0), "n_min": 120}]}
    note = small_sample_note(short)
    assert note.startswith("Caution: for 2 of the 3 estimates the decided queries with holes are fewer than the "
                           "normal approximation behind the t interval needs")
    assert "the most needed: A - B ndcg@10 (n = 20 of 120), A p@10 (n = 20 of 75)." in note


def test_the_blind_spot_is_the_error_share_a_random_sample_misses_too_often():
    from hiera_dspy.conclude.report import blind_spot_note

    note = blind_spot_note(40, 0.95)
    assert "fewer than 7.2% of the queries" in note and "more than 5% of random samples of 40 queries" in note
    share = float(note.split("fewer than ")[1].split("%")[0]) / 100
    assert (1 - share) ** 40 == pytest.approx(0.05, abs=0.002)  # missed with exactly the stated probability
    assert "fewer than 0.7% " in blind_spot_note(400, 0.95)  # about 3 / n


def test_the_caution_quotes_each_estimates_own_n_and_no_other_datasets_figures():
    # finding 7: the caution quoted n = 20's coverage for n < 20 and MSRD's figures for every dataset
    from hiera_dspy.conclude import report

    short = {"estimates": {"A": {"p@10": {"n": 12, "n_min": 75}, "ndcg@10": {"n": 9, "n_min": 40}}}, "differences": []}
    note = report.small_sample_note(short)
    assert "(n = 12 of 75)" in note and "(n = 9 of 40)" in note
    assert "MSRD" not in note and "samples of 20" not in note and "betting interval" in note


def test_betting_intervals_and_exact_values_are_named():
    from hiera_dspy.conclude.report import betting_note

    c = {"estimates": {"A": {"p@10": {"rule": "betting"}, "ndcg@10": {"rule": "difference"}}},
         "differences": [{**diff("A", "B", 0.0, [-0.07, 0.07], 1.0, None), "measure": "p@10", "rule": "betting"}]}
    assert betting_note(c).startswith("2 intervals (A p@10, A - B p@10) come from the betting interval")
    assert betting_note({"estimates": {}, "differences": []}) is None
    exact = {**diff("A", "B", 0.25, None, None, None), "rule": "exact", "note": "no hole can change this value"}
    assert sentences({"level": 0.95, "queries": 10, "differences": [exact]}, "ndcg@10") == [
        "A > B by exactly 0.250 (no hole can change this value)."]
