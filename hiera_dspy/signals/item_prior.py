"""Item priors: how often an item was judged relevant for the train split's other queries (`features="...+prior"`).

In a catalog judged for thousands of queries (the MSRD pool: ~9,750 movies, each judged for ~11 queries) an item
that is relevant for many queries (a popular, broad film) is more often relevant for the next one. Per item the fit
keeps the train pairs' relevance sum r and count n; a pair's features are

- `item_prior`: (r + a * p0) / (n + a), the item's smoothed relevance rate (p0 the train split's, a = `strength`);
- `item_judged`: n, how many train pairs judged the item.

**Leave-query-out**: at fit time a train pair's own judgment is taken out of its item's counts (r - own, n - 1), so
the model learns from priors computed without the evaluated query, as every later pair of a new query gets them. A
pair of a query the scorer learned from, scored after the fit, sees its own label in the counts: do not score
the train split with it (dev and held-out queries are never in the train split).
Relevance of a graded label: its index / (number of labels - 1).

**The key of an item** (`key`, said in the saved prior), so that a catalog's re-wording of an item (a line added, the
fields in another order, the title re-cased) does not make a known item a stranger:
- "item_id": the pairs' `item_id` when every fitted pair has one (every bundled and benchmark dataset does); a pair
  is matched by its id when its title, folded (`item_form.title_key`: case, spaces, typography), is the one the
  fit saw for that id (an id of another catalog does not borrow a movie's rate), else by its content key (below,
  kept for every fitted item: a pair scored without its id);
- "content": `item_form.content_key`, the sha256 of the item's canonical form with case folded (typography, spaces,
  field order and field labels do not change it);
- "hash": a prior saved before the key was recorded: the sha256 of the exact title and text (`item_key`), read as it
  always was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from hiera_dspy.errors import HieraError
from hiera_dspy.signals.features import item_document
from hiera_dspy.signals.item_form import content_key, title_key

PRIOR_FEATURES = ("item_prior", "item_judged")
KEYS = ("item_id", "content", "hash")


def item_key(title: str, text: str) -> str:
    """The key of an item in a prior saved before keys were recorded ("hash"): 16 hex digits of the sha256 of its
    document (title, then text)."""
    return hashlib.sha256(item_document(title, text).encode()).hexdigest()[:16]


class ItemPrior:
    """Per-item relevance counts of a train split, and the two PRIOR_FEATURES of pairs."""

    def __init__(self, strength: float = 5.0, key: str = "content"):
        if key not in KEYS:
            raise HieraError(f"item prior key must be one of {list(KEYS)}; got {key!r}")
        self.strength = float(strength)
        self.key = key
        self.p0 = 0.0
        self.counts: dict[str, list[float]] = {}  # item key -> [relevance sum, judged pairs]
        self.titles: dict[str, str] = {}  # key "item_id": item id -> its folded title's key
        self.aliases: dict[str, str] = {}  # key "item_id": content key -> item id
        self._own: dict[tuple[str, str], list[float]] = {}  # fit time only: (query, item key) -> its own counts

    def fit(self, triples: Sequence[tuple[str, str, str]], relevance: Sequence[float],
            ids: Sequence[str] | None = None) -> ItemPrior:
        """Count `relevance` (0..1 per triple) per item, keyed by `ids` (the pairs' item ids) when every triple has
        one, else by content; until `forget_train`, the fitted triples' own judgments are left out of their
        features."""
        self.key = "item_id" if ids is not None and len(ids) == len(triples) and all(ids) else "content"
        self.counts, self.titles, self.aliases, self._own = {}, {}, {}, {}
        for i, ((query, title, text), rel) in enumerate(zip(triples, relevance)):
            if self.key == "item_id":
                key = str(ids[i])
                self.titles.setdefault(key, title_key(title))
                self.aliases.setdefault(content_key(title, text), key)
            else:
                key = content_key(title, text)
            for table, k in ((self.counts, key), (self._own, (query, key))):
                row = table.setdefault(k, [0.0, 0.0])
                row[0] += float(rel)
                row[1] += 1.0
        self.p0 = float(np.mean(relevance)) if len(relevance) else 0.0
        return self

    def key_of(self, title: str, text: str, item_id: str | None = None) -> str:
        """The key an item is counted under (module doc); an item the fit never saw gets a key of no counts."""
        if self.key == "hash":
            return item_key(title, text)
        content = content_key(title, text)
        if self.key == "content":
            return content
        if item_id and self.titles.get(str(item_id)) == title_key(title):
            return str(item_id)
        return self.aliases.get(content, content)

    def forget_train(self) -> None:
        """End the fit: from now on every pair sees the full counts (as after a reload)."""
        self._own = {}

    def features(self, triples: Sequence[tuple[str, str, str]], ids: Sequence[str] | None = None) -> np.ndarray:
        """(len(triples), 2): item_prior, item_judged (leave-query-out for the triples being fitted); `ids`: the
        pairs' item ids (None, or an empty id: the item is known by its content)."""
        rows = []
        for i, (query, title, text) in enumerate(triples):
            key = self.key_of(title, text, ids[i] if ids is not None else None)
            r, n = self.counts.get(key, (0.0, 0.0))
            own_r, own_n = self._own.get((query, key), (0.0, 0.0))
            r, n = r - own_r, n - own_n
            rows.append([(r + self.strength * self.p0) / (n + self.strength), n])
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(PRIOR_FEATURES))

    def to_dict(self) -> dict:
        """JSON-ready: strength, key, p0 and the counts (key "item_id": the ids' titles and content aliases too)."""
        extra = {"titles": self.titles, "aliases": self.aliases} if self.key == "item_id" else {}
        return {"strength": self.strength, "key": self.key, "p0": self.p0, "counts": self.counts, **extra}

    @classmethod
    def from_dict(cls, d: dict) -> ItemPrior:
        """The prior `to_dict` wrote; one saved before the key was recorded reads items by their exact hash."""
        prior = cls(d["strength"], key=d.get("key", "hash"))
        prior.p0 = float(d["p0"])
        prior.counts = {str(k): [float(v[0]), float(v[1])] for k, v in d["counts"].items()}
        prior.titles = {str(k): str(v) for k, v in d.get("titles", {}).items()}
        prior.aliases = {str(k): str(v) for k, v in d.get("aliases", {}).items()}
        return prior
