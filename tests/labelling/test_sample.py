"""The human sample: sizes, a seeded draw of whole queries, kept once in the run store (never redrawn), and its
state from the decisions (decided, pending, partly labelled, no holes)."""

from __future__ import annotations

import pytest

from hiera_dspy.errors import HieraError
from hiera_dspy.labelling.sample import Sample, SampleLog, count, draw, ensure, parse_size, state

QUERIES = ["q1", "q2", "q3", "q4"]


@pytest.mark.parametrize("text, n", [("2", 2), ("4", 4), ("10%", 1), ("50%", 2), ("51%", 3), ("100%", 4)])
def test_sizes_as_counts_or_percentages_rounded_up(text, n):
    assert count(parse_size(text), 4) == n


@pytest.mark.parametrize("text, fragment", [("5", "has only 4 queries; ask for at most 4"),
                                            ("0", "positive number"), ("120%", "percentage in (0, 100]"),
                                            ("ten", "a number of queries (8) or a percentage")])
def test_bad_sizes_say_what_to_give(text, fragment):
    with pytest.raises(HieraError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        count(parse_size(text), 4)


def test_the_draw_is_seeded_and_uniform_without_replacement():
    assert draw(QUERIES, 2, seed=1) == ["q2", "q3"] and draw(QUERIES, 2, seed=0) == ["q4", "q2"]
    assert sorted(draw(QUERIES, 4, seed=7)) == QUERIES


def test_a_sample_is_stored_once_and_never_redrawn(tmp_path):
    log = SampleLog(tmp_path / "store.sqlite")
    first = ensure(log, "run1", QUERIES, "2", seed=1)
    assert first == Sample(["q2", "q3"], 1, "random", "2")
    assert ensure(log, "run1", QUERIES, None, seed=0) == first  # a rerun without --human-sample keeps it
    assert ensure(log, "run1", QUERIES, "2", seed=1) == first
    with pytest.raises(HieraError, match="already has a human sample .* never redrawn"):
        ensure(log, "run1", QUERIES, "3", seed=1)
    assert ensure(log, "run2", QUERIES, None, seed=1) is None
    assert SampleLog(tmp_path / "store.sqlite").get("run1") == first  # another connection reads the same


def test_state_counts_a_query_only_when_every_pair_is_decided():
    sample = Sample(["q1", "q2", "q3"], 0, "random", "3")
    pairs = {"q1": ["q1:a", "q1:b"], "q2": ["q2:a", "q2:b", "q2:c"]}  # q3 has no holes
    st = state(sample, pairs, {"q1:a", "q1:b", "q2:b"})
    assert (st.decided, st.pending, st.partial, st.no_holes) == (["q1", "q3"], {"q2": 2}, ["q2"], ["q3"])
    assert st.remaining_pairs == 2
