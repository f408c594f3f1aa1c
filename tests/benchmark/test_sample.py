"""The human sample: sizes, a seeded draw of whole queries, kept once in the run store (never redrawn), and its
state from the decisions (decided, pending, partly labelled, no holes)."""

from __future__ import annotations

import pytest

from hiera_dspy.benchmark.draws import draw, draw_stratified
from hiera_dspy.benchmark.sample import count, ensure, parse_size
from hiera_dspy.conclude.sample import Sample, state
from hiera_dspy.errors import HieraError
from hiera_dspy.review.sample_log import SampleLog

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


FORTY = [f"q{i:02d}" for i in range(40)]
SPREAD = [float((7 * i) % 40) for i in range(40)]  # every query its own uncertainty; stratum h = values 10h..10h+9


def test_the_stratified_draw_takes_each_strata_share_and_is_seeded():
    queries, stratum = draw_stratified(FORTY, 10, seed=5, uncertainty=SPREAD, strata=4)
    # 2.5 queries a stratum: the two leftovers go to two strata at random (not always the least uncertain two)
    assert len(set(queries)) == 10 and sorted(stratum.count(h) for h in range(4)) == [2, 2, 3, 3]
    u = dict(zip(FORTY, SPREAD))
    assert all(int(u[q]) // 10 == h for q, h in zip(queries, stratum))  # each query drawn from its own stratum
    assert draw_stratified(FORTY, 10, seed=5, uncertainty=SPREAD, strata=4) == (queries, stratum)
    others = {tuple(draw_stratified(FORTY, 10, seed=s, uncertainty=SPREAD, strata=4)[0]) for s in range(6)}
    assert len(others) == 6  # the seed matters
    orders = [draw_stratified(FORTY, 10, seed=s, uncertainty=SPREAD, strata=4)[1] for s in range(4)]
    assert any(o != sorted(o) for o in orders)  # shuffled: a prefix a person labels first is not the low strata


def test_a_random_draw_ignores_the_strata():
    counts = {tuple(sorted(int(dict(zip(FORTY, SPREAD))[q]) // 10 for q in draw(FORTY, 10, seed=s))) for s in range(20)}
    assert counts != {(0, 0, 0, 1, 1, 1, 2, 2, 3, 3)}  # proof the per-stratum test above can fail


def never(*_):
    raise AssertionError("a stored sample must not be redrawn, nor the judgments read again")


def test_a_stratified_sample_is_stored_with_its_strata_and_never_redrawn(tmp_path):
    log = SampleLog(tmp_path / "store.sqlite")
    first = ensure(log, "run1", FORTY, "25%", seed=2, method="stratified", uncertainty=lambda: SPREAD)
    assert (first.method, first.strata, len(first.queries)) == ("stratified", 4, 10)
    assert first.allocation == [draw_stratified(FORTY, 10, 2, SPREAD, 4)[1].count(h) for h in range(4)]
    assert sorted(first.allocation) == [2, 2, 3, 3]
    assert first.queries == draw_stratified(FORTY, 10, 2, SPREAD, 4)[0]
    again = SampleLog(tmp_path / "store.sqlite")  # a resumed command: another connection
    assert ensure(again, "run1", FORTY, "25%", 2, "stratified", 4, never) == first
    assert ensure(again, "run1", FORTY, None, 0, None, None, never) == first  # a rerun without --human-sample
    assert ensure(again, "run1", FORTY, None, 0, "stratified", None, never) == first
    for method, strata, differ in [("random", None, "--sample"), ("stratified", 3, "--strata"),
                                   (None, None, "--sample")]:
        with pytest.raises(HieraError, match=f"already has a human sample \\(25%, seed 2, stratified, 4 strata: 10 "
                                             f"queries\\) and a sample is never redrawn; this request differs in "
                                             f"{differ}"):
            ensure(again, "run1", FORTY, "25%", 2, method, strata, never)
    with pytest.raises(HieraError, match="differs in --sample"):
        ensure(again, "run1", FORTY, None, 0, "random", None, never)


def test_a_random_sample_refuses_a_stratified_request(tmp_path):
    log = SampleLog(tmp_path / "store.sqlite")
    ensure(log, "run1", QUERIES, "2", seed=1)
    with pytest.raises(HieraError, match=r"\(2, seed 1, random: 2 queries\) .* differs in --sample, --strata"):
        ensure(log, "run1", QUERIES, "2", 1, "stratified", None, never)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"method": "stratified", "strata": 2}, "needs the machine's judgments of the holes .* run the eval.holes command"),
    ({"method": "random", "strata": 4}, "--strata 4 applies to --sample stratified only"),
    ({"method": "stratified", "strata": 0, "uncertainty": lambda: [0.0] * 4}, "at least 1 stratum"),
    ({"method": "stratified", "strata": 3, "uncertainty": lambda: [0.0] * 4},
     "over 3 strata needs at least 3 sampled queries .* 2 asked: ask for more, or give --strata 2 or fewer"),
    ({"method": "uncertain"}, "--sample 'uncertain': give one of random, stratified")])
def test_a_stratified_request_that_cannot_be_met_says_why(tmp_path, kwargs, fragment):
    log = SampleLog(tmp_path / "store.sqlite")
    with pytest.raises(HieraError, match=fragment):
        ensure(log, "run1", QUERIES, "2", 0, **kwargs)
    assert log.get("run1") is None


def test_a_store_made_before_the_strata_columns_still_reads(tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "store.sqlite")
    db.executescript("CREATE TABLE human_sample (run_id TEXT NOT NULL, query_id TEXT NOT NULL, rank INTEGER NOT NULL, "
                     "seed INTEGER NOT NULL, method TEXT NOT NULL, requested TEXT NOT NULL, drawn REAL NOT NULL, "
                     "PRIMARY KEY (run_id, query_id)); INSERT INTO human_sample VALUES ('old', 'q3', 0, 1, 'random', "
                     "'1', 0.0);")
    db.commit()
    db.close()
    log = SampleLog(tmp_path / "store.sqlite")
    assert log.get("old") == Sample(["q3"], 1, "random", "1")
    assert ensure(log, "new", FORTY, "4", 0, "stratified", 2, lambda: SPREAD).allocation == [2, 2]


def test_an_active_sample_keeps_its_probabilities_and_weights_and_is_never_redrawn(tmp_path):
    log = SampleLog(tmp_path / "store.sqlite")
    first = ensure(log, "run1", FORTY, "10", seed=2, method="active", uncertainty=lambda: SPREAD)
    assert first.method == "active" and len(set(first.queries)) == 10
    assert len(first.probabilities) == 10 and all(0 < p < 1 for p in first.probabilities)
    assert first.weights == pytest.approx({q: u ** 0.5 for q, u in zip(FORTY, SPREAD)})
    # the stored probabilities are the draw's: replayed from the weights and the order
    from hiera_dspy.conclude.sequence import probabilities

    left, index = [True] * 40, {q: i for i, q in enumerate(FORTY)}
    for q, p in zip(first.queries, first.probabilities):
        assert probabilities(list(first.weights.values()), left)[index[q]] == pytest.approx(p)
        left[index[q]] = False
    assert ensure(log, "run1", FORTY, "10", seed=2, method="active", uncertainty=never) == first  # resumed
    assert ensure(log, "run1", FORTY, None, seed=0, uncertainty=never) == first
    with pytest.raises(HieraError, match="differs in --sample"):
        ensure(log, "run1", FORTY, "10", seed=2, method="random")
    assert SampleLog(tmp_path / "store.sqlite").get("run1") == first  # a shared store reads the same sample


def test_an_active_draw_favours_the_uncertain_queries_and_can_draw_any():
    from hiera_dspy.benchmark.draws import draw_active

    weights = [0.0] * 20 + [1.0] * 20
    drawn = [q for s in range(200) for q in draw_active(FORTY, 4, s, weights)[0]]
    certain = sum(FORTY.index(q) < 20 for q in drawn)
    assert 0 < certain < len(drawn) / 3  # the floor draws them, half as often as an even draw would at most
    with pytest.raises(HieraError, match="needs the machine's judgments"):
        ensure(SampleLog(":memory:"), "r", FORTY, "4", seed=0, method="active")
