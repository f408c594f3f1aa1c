"""Feedback evidence: a pair against its query's known judgments, with exact numbers on a tiny fixture; a pair's own
judgment (same item id, or the same passage text) never informs it, and a query with nothing else known gives none."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.signals import feedback as ev


def _known():
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    return ev.QueryKnown(grades=np.array([3.0, 0.0, 1.0]), vectors=vectors, expected=np.array([2.0, 0.5, 1.0]),
                         item_ids=("a", "b", "c"), docs=("passage a", "passage b", "passage c"))


def test_the_evidence_row_on_a_tiny_query():
    names = ev.feature_names(4)
    row = dict(zip(names, ev.evidence(1.5, np.array([1.0, 0.0]), _known(), 4)))
    assert len(names) == 1 + 8 + 8
    assert row["e"] == 1.5 and row["sim_top"] == pytest.approx(1.0)
    assert [row[f"sim_{g}"] for g in range(4)] == pytest.approx([0.0, 0.6, 0.0, 1.0])
    assert [row[f"has_{g}"] for g in range(4)] == [1.0, 1.0, 0.0, 1.0]
    weights = np.exp(ev.SHARPNESS * (np.array([1.0, 0.0, 0.6]) - 1.0))
    assert row["knn_grade"] == pytest.approx(weights @ [3, 0, 1] / weights.sum())
    assert row["offset"] == pytest.approx(((3 - 2) + (0 - 0.5) + (1 - 1)) / 3)
    assert row["rank"] == pytest.approx(2 / 3)  # the judge scores two of the three known below 1.5
    assert row["mean_grade"] == pytest.approx(4 / 3) and row["top_share"] == pytest.approx(1 / 3)
    assert row["log_known"] == pytest.approx(np.log(4))


def test_a_pairs_own_judgment_never_informs_it():
    known = _known()
    mine = ev.own(known, "a", "some other text")
    assert mine.tolist() == [True, False, False]
    row = dict(zip(ev.feature_names(4), ev.evidence(1.5, np.array([1.0, 0.0]), known, 4, mine)))
    assert row["has_3"] == 0.0 and row["sim_3"] == 0.0  # its own grade-3 judgment is not read
    assert row["log_known"] == pytest.approx(np.log(3))
    by_text = ev.own(known, None, "passage b")  # no item id (a pair judged by text): the same passage is its own
    assert by_text.tolist() == [False, True, False]


def test_a_query_whose_only_known_judgment_is_the_pairs_own_gives_no_evidence():
    known = _known().without(1).without(1)
    assert len(known) == 1
    assert ev.evidence(1.0, np.array([1.0, 0.0]), known, 4, ev.own(known, "a", "")) is None
    rows, which = ev.evidence_rows([1.0, 2.0], np.eye(2), known, 4, ["a", "z"], ["x", "y"])
    assert which.tolist() == [1] and rows.shape == (1, len(ev.feature_names(4)))


def test_lexical_vectors_are_unit_length_and_alike_for_alike_passages():
    v = ev.lexical_vectors(["red apple pie", "red apple tart", "blue car engine"])
    assert np.linalg.norm(v, axis=1) == pytest.approx([1, 1, 1])
    assert v[0] @ v[1] > v[0] @ v[2]


def test_passage_vectors_come_from_the_late_interaction_pass_already_made():
    from hiera_dspy.signals.features import item_document
    from hiera_dspy.signals.late_interaction import LateInteraction
    from tests.signals.test_late_interaction import WordEncoder

    encoder = WordEncoder()
    late = LateInteraction(encoder)
    late.features([("red apple", "", "a red apple pie"), ("red apple", "", "a blue car")])
    calls = len(encoder.calls)
    vectors = late.vectors([item_document("", "a red apple pie"), item_document("", "a blue car")])
    assert len(encoder.calls) == calls  # read from the pass's memory, no second encoding
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0) and vectors[0] @ vectors[1] < 0.99
    late.vectors(["a new passage"])
    assert encoder.calls[-1] == ["a new passage"]
