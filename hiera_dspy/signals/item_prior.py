"""Item priors: how often an item was judged relevant for the train split's other queries (`features="...+prior"`).

In a catalog judged for thousands of queries (the MSRD pool: ~9,750 movies, each judged for ~11 queries) an item
that is relevant for many queries (a popular, broad film) is more often relevant for the next one. Per item (keyed
by a hash of its title and text) the fit keeps the train pairs' relevance sum r and count n; a pair's features are

- `item_prior`: (r + a * p0) / (n + a), the item's smoothed relevance rate (p0 the train split's, a = `strength`);
- `item_judged`: n, how many train pairs judged the item.

**Leave-query-out**: at fit time a train pair's own judgment is taken out of its item's counts (r - own, n - 1), so
the model learns from priors computed without the evaluated query, as every later pair of a new query gets them. A
pair of a query the scorer learned from, scored after the fit, sees its own label in the counts: do not score
the train split with it (dev and held-out queries are never in the train split).
Relevance of a graded label: its index / (number of labels - 1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from hiera_dspy.signals.features import item_document

PRIOR_FEATURES = ("item_prior", "item_judged")


def item_key(title: str, text: str) -> str:
    """The key of an item: 16 hex digits of the sha256 of its document (title, then text)."""
    return hashlib.sha256(item_document(title, text).encode()).hexdigest()[:16]


class ItemPrior:
    """Per-item relevance counts of a train split, and the two PRIOR_FEATURES of pairs."""

    def __init__(self, strength: float = 5.0):
        self.strength = float(strength)
        self.p0 = 0.0
        self.counts: dict[str, list[float]] = {}  # item key -> [relevance sum, judged pairs]
        self._own: dict[tuple[str, str], list[float]] = {}  # fit time only: (query, item key) -> its own counts

    def fit(self, triples: Sequence[tuple[str, str, str]], relevance: Sequence[float]) -> ItemPrior:
        """Count `relevance` (0..1 per triple) per item; until `forget_train`, the fitted triples' own judgments are
        left out of their features."""
        self.counts, self._own = {}, {}
        for (query, title, text), rel in zip(triples, relevance):
            key = item_key(title, text)
            for table, k in ((self.counts, key), (self._own, (query, key))):
                row = table.setdefault(k, [0.0, 0.0])
                row[0] += float(rel)
                row[1] += 1.0
        self.p0 = float(np.mean(relevance)) if len(relevance) else 0.0
        return self

    def forget_train(self) -> None:
        """End the fit: from now on every pair sees the full counts (as after a reload)."""
        self._own = {}

    def features(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """(len(triples), 2): item_prior, item_judged (leave-query-out for the triples being fitted)."""
        rows = []
        for query, title, text in triples:
            key = item_key(title, text)
            r, n = self.counts.get(key, (0.0, 0.0))
            own_r, own_n = self._own.get((query, key), (0.0, 0.0))
            r, n = r - own_r, n - own_n
            rows.append([(r + self.strength * self.p0) / (n + self.strength), n])
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(PRIOR_FEATURES))

    def to_dict(self) -> dict:
        """JSON-ready: strength, p0 and the counts."""
        return {"strength": self.strength, "p0": self.p0, "counts": self.counts}

    @classmethod
    def from_dict(cls, d: dict) -> ItemPrior:
        """The prior `to_dict` wrote."""
        prior = cls(d["strength"])
        prior.p0 = float(d["p0"])
        prior.counts = {str(k): [float(v[0]), float(v[1])] for k, v in d["counts"].items()}
        return prior
