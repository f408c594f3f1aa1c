"""Every judgment's confidence and its source: label distribution from logprobs, DREAM agreement, vote share,
scorer probability, else none (said)."""

from __future__ import annotations

import pytest

from hiera_dspy.review.confidence import confidence


def turn(r, agent, stance):
    return {"round": r, "agent": agent, "stance": stance, "argument": "..."}


OPEN = [turn(0, "advocate", "relevant"), turn(0, "skeptic", "not relevant")]


@pytest.mark.parametrize("row, expected", [
    ({"label": "Good", "fields": {"label_probs": {"Bad": 0.1, "Good": 0.9}}}, (0.9, "logprobs")),
    ({"label": "Bad", "fields": {"distribution": {"Bad": 0.3, "Good": 0.7}}}, (0.3, "logprobs")),
    ({"label": "Relevant", "fields": {"history": OPEN + [turn(1, "advocate", "relevant"),
                                                         turn(1, "skeptic", "relevant")]}}, (1.0, "dream-agreement")),
    ({"label": "Relevant", "fields": {"history": OPEN + [turn(1, "advocate", "relevant"),
                                                         turn(1, "skeptic", "not relevant"),
                                                         turn(2, "advocate", "relevant"),
                                                         turn(2, "skeptic", "relevant")]}}, (0.75, "dream-agreement")),
    ({"label": None, "escalated": True, "fields": {"history": OPEN}}, (0.0, "dream-agreement")),
    ({"label": "Exact", "fields": {"votes": ["Exact", "Exact", "Irrelevant"]}}, (2 / 3, "vote-share")),
    ({"label": "Exact", "fields": {"votes": {"m1": "Exact", "m2": "Substitute"}}}, (0.5, "vote-share")),
    ({"label": "Relevant", "fields": {"scores": {"Irrelevant": 0.2, "Relevant": 0.8}, "routed": "scorer"}},
     (0.8, "scorer")),
])
def test_sources(row, expected):
    c = confidence(row)
    assert (c.value, c.source) == (pytest.approx(expected[0]), expected[1])


def test_logprobs_win_over_the_scorer_and_the_llm_label_is_not_the_scorers():
    both = {"label": "Good", "fields": {"label_probs": {"Good": 0.6, "Bad": 0.4}, "scores": {"Good": 0.99}}}
    assert confidence(both).source == "logprobs"
    cascade_llm = {"label": "Relevant", "fields": {"scores": {"Relevant": 0.55}, "routed": "llm"}}
    assert confidence(cascade_llm).value is None and confidence(cascade_llm).source.startswith("none")


def test_none_is_said():
    c = confidence({"label": "Relevant", "fields": {"reasoning": "..."}})
    assert c.value is None and c.source.startswith("none (") and "reports no label distribution" in c.source
    assert confidence({"label": None, "error": "TimeoutError"}).source == "none (the judgment failed)"
