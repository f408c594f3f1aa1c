"""The embed-lr reference is an explicit object: fitted once, shared by every summary line it is given to."""

from __future__ import annotations

from hiera_dspy.data import load_dataset
from hiera_dspy.metrics.reference import ReferenceScorer, summary_line
from hiera_dspy.signals import RelevanceScorer


def test_reference_scores_every_pair_and_fits_once(monkeypatch):
    """A judgment without a label is wrong in the comparison too (McNemar over every pair, as hiera_dspy.metrics), and the
    scorer is fitted once (a compile's before/after lines share it)."""
    monkeypatch.setenv("HIERA_REFERENCE_EMBEDDER", "lexical")
    fits = []
    real_fit = RelevanceScorer.fit
    monkeypatch.setattr(RelevanceScorer, "fit", lambda self, pairs: fits.append(1) or real_fit(self, pairs))
    data = load_dataset("msrd")
    pairs = data.split("dev", 6)
    reference = ReferenceScorer(data)
    ref = reference.labels(pairs)
    rows = [{"id": p.id, "gold": p.label, "label": None, "error": "boom"} for p in pairs]  # every judgment failed
    line = summary_line(rows, list(data.scheme.labels), reference, pairs, "zero-shot")
    right = sum(r == p.label for r, p in zip(ref, pairs))
    assert right > 0
    assert f"b={right} c=0" in line, line
    assert len(fits) == 1


def test_no_reference_without_a_train_split_or_when_turned_off(monkeypatch):
    data = load_dataset("msrd")
    pairs = data.split("dev", 3)
    rows = [{"id": p.id, "gold": p.label, "label": p.label} for p in pairs]
    assert summary_line(rows, list(data.scheme.labels)) == summary_line(rows, list(data.scheme.labels), None, pairs)
    assert "embed-lr" not in summary_line(rows, list(data.scheme.labels), None, pairs)
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    assert ReferenceScorer(data).labels(pairs) is None


def test_a_graded_line_says_the_weighted_kappa_and_the_rmse_against_the_raters_mean():
    """Home Depot's pairs keep the raters' mean (`Pair.grade`, 0-2): the line scores the labels against it, and a
    judgment without a label is counted, not given a grade."""
    from hiera_dspy.records import Pair

    labels = ["Irrelevant", "Partially relevant", "Highly relevant"]
    grades = [0.0, 0.33, 1.0, 1.67, 2.0, 2.0]
    pairs = [Pair(f"p{i}", "q", "t", "", labels[round(g)], "q", f"i{i}", grade=g) for i, g in enumerate(grades)]
    said = [labels[0], labels[0], labels[1], labels[2], labels[2], None]
    rows = [{"id": p.id, "gold": p.label, "label": s} for p, s in zip(pairs, said)]
    line = summary_line(rows, labels, None, pairs)
    rmse = (sum((labels.index(s) - g) ** 2 for s, g in zip(said[:5], grades[:5])) / 5) ** 0.5
    assert f"RMSE {rmse:.3f} against the source's graded value" in line, line
    assert "on 5 labelled pairs (1 without a label)" in line
    assert "quadratic-weighted kappa" in line
    assert "RMSE" not in summary_line(rows, labels) and "quadratic-weighted" in summary_line(rows, labels)
    binary = summary_line([{"id": "a", "gold": "Relevant", "label": "Relevant"},
                           {"id": "b", "gold": "Irrelevant", "label": "Relevant"}], ["Irrelevant", "Relevant"])
    assert "weighted" not in binary
