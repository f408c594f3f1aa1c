"""Known judgments checked against the pairs to judge and handed to a judge (`hiera_dspy.data.known_evidence`),
and what the report says of them (`known_report`), on values built by hand."""

from __future__ import annotations

import pytest
from known_judge import KnownMajority

from hiera_dspy.data import DataError
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.known_evidence import checked, hand_over
from hiera_dspy.labels import custom_scheme
from hiera_dspy.review.known_report import TABLE_QUERIES, known_line, known_section
from hiera_dspy.testing import pair

SCHEME = custom_scheme("Bad,Good")


def known(*rows: tuple[str, str, int]) -> Known:
    return Known.of(SCHEME, (KnownJudgment(q, d, g, item_text=f"text {d}", query=f"query {q}", source=f"k.txt:{i}")
                             for i, (q, d, g) in enumerate(rows, 1)))


def pairs(*keys: tuple[str, str]):
    return [pair(i)._replace(query_id=q, item_id=d, query=f"query {q}") for i, (q, d) in enumerate(keys)]


def test_judgments_of_queries_without_pairs_are_counted_and_kept():
    evidence = checked(known(("q1", "a", 1), ("q9", "b", 0), ("q9", "c", 1)), "k.txt", pairs(("q1", "x")), {},
                       "error")
    assert evidence.counts == {"outside": 2, "outside_queries": 1, "matched_queries": 1, "text_matched_queries": 0}
    assert evidence.known.keys() == {("q1", "a"), ("q9", "b"), ("q9", "c")} and evidence.queries == ("q1",)


def test_a_known_pair_to_be_judged_is_an_error_or_dropped_and_counted():
    rows = (("q1", "a", 1), ("q1", "x", 0))
    with pytest.raises(DataError, match=r"k.txt, line 2: query 'q1' item 'x' is a known judgment and a pair to judge"):
        checked(known(*rows), "k.txt", pairs(("q1", "x")), {}, "error")
    evidence = checked(known(*rows), "k.txt", pairs(("q1", "x")), {}, "skip")
    assert evidence.known.keys() == {("q1", "a")} and evidence.counts["overlap_skipped"] == 1


def test_the_use_says_per_query_what_the_judge_read_or_that_it_reads_none():
    evidence = checked(known(("q1", "a", 1), ("q1", "b", 1)), "k.txt", pairs(("q1", "x"), ("q2", "y")), {}, "error")
    use = hand_over(KnownMajority(SCHEME), evidence)
    assert use["reads"] and use["read_per_query"] == {"q1": 2, "q2": 0} and use["known_per_query"] == {"q1": 2, "q2": 0}
    assert "the judge read 2 as evidence, for 1 queries" in known_line(use)
    assert "| q2 | 0 | 0 |" in known_section(use)
    alone = hand_over(object(), evidence)
    assert not alone["reads"] and alone["read"] == 0 and "none was used" in known_line(alone)
    assert hand_over(KnownMajority(SCHEME), None) is None and known_section(None) == []


def test_a_long_report_leaves_the_per_query_counts_to_the_summary():
    many = pairs(*((f"q{i}", "x") for i in range(TABLE_QUERIES + 1)))
    use = hand_over(object(), checked(known(("q0", "a", 1)), "k.txt", many, {}, "error"))
    section = "\n".join(known_section(use))
    assert "| q0 |" not in section and "summary.json `known.known_per_query`" in section


def test_a_list_that_looks_binary_on_a_graded_scheme_is_said_not_refused():
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.review.known_report import BINARY_LOOK, known_summary

    trec = get_scheme("trec")

    def said(grades, scheme=trec):
        rows = Known.of(scheme, (KnownJudgment("q1", f"d{i}", g, item_text="t", query="query q1", source=f"k:{i}")
                                 for i, g in enumerate(grades)))
        return known_summary(hand_over(object(), checked(rows, "k.txt", pairs(("q1", "x")), {}, "error")))

    binary = [i % 2 for i in range(BINARY_LOOK)]
    assert "if the list is binary (1 = relevant)" in said(binary)
    assert "'Irrelevant' or 'Related'" in said(binary)
    assert "binary" not in said([*binary, 2])  # a higher grade: a graded list
    assert "binary" not in said(binary[:-1])  # too few to tell
    assert "binary" not in said(binary, custom_scheme("No,Yes"))  # a two-grade scheme is binary
