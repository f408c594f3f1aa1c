"""The conclusions in words: a separated pair, a pair that more sampled queries would separate, and no sample."""

from __future__ import annotations

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
        "B and C cannot be told apart at this sample size (difference 0.010 [-0.010, 0.030], p = 0.400); about 60 "
        "more sampled queries would.",
        "A and C cannot be told apart after Holm's correction over the pairs (difference 0.040 [0.001, 0.080], "
        "p = 0.070).",
        "C and D cannot be told apart at this sample size (difference 0.001 [-0.050, 0.052], p = 0.900); about 50000 "
        "more sampled queries would, more than the 180 unsampled queries there are."]


def test_without_a_sample_the_report_says_how_to_draw_one():
    assert "Draw one with --human-sample N|P%" in sample_lines(None)[0]


def test_a_small_decided_sample_carries_a_caution():
    from hiera_dspy.conclude.report import small_sample_note

    assert small_sample_note(1) is None and small_sample_note(30) is None
    assert small_sample_note(12).startswith("Caution: 12 decided sample queries.")
