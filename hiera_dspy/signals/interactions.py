"""Interaction features: the element-wise products of the query's and the item's embeddings (a learned, weighted
cosine), for a scorer fitted on thousands of pairs.

The cosine features of `features.py` give the scorer one number per text pair; with enough train pairs (the MSRD
pool holds ~108,000) a logistic regression can weigh each dimension of the product q * t (query x title) and q * d
(query x title + text) instead: 2 x 384 features for all-MiniLM-L6-v2. Vectors come from the scorer's own embedder
(cached on disk: `embed_cache.py`), so they cost nothing beyond the cosines.

Example:
    >>> interaction_features(embedder, [("alien", "Alien", "Sci-fi horror")]).shape   # doctest: +SKIP
    (1, 768)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hiera_dspy.signals.features import Embedder, item_document


def interaction_features(embedder: Embedder, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
    """(len(triples), 2 * dim): q * t and q * d for (query, item_title, item_text) triples, distinct texts embedded
    once."""
    if not triples:
        return np.zeros((0, 0))
    texts: dict[str, int] = {}
    for q, t, x in triples:
        for s in (q, t, item_document(t, x)):
            texts.setdefault(s, len(texts))
    vectors = np.asarray(embedder.encode(list(texts)), dtype=np.float64)
    q = vectors[[texts[q] for q, _, _ in triples]]
    t = vectors[[texts[t] for _, t, _ in triples]]
    d = vectors[[texts[item_document(t, x)] for _, t, x in triples]]
    return np.hstack([q * t, q * d])


def interaction_names(dim: int) -> tuple[str, ...]:
    """The names of the interaction features of a `dim`-dimensional embedder (qt_0.., qd_0..)."""
    return tuple(f"qt_{i}" for i in range(dim)) + tuple(f"qd_{i}" for i in range(dim))
