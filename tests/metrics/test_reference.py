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
