"""What a `RelevanceScorer` reads (`features=`): the extractor's lexical and cosine features, plus optional blocks.

A set is a tuple of blocks appended to the extractor's features (`features.py`); a block is a function of the fitted
scorer, the (query, item_title, item_text) triples and the pairs' item ids (None when unknown) that returns one row
per triple, and a function naming its columns. A new block is one function and one line here.

- base: 3 lexical features + 2 MiniLM cosines (today's embed-lr);
- query: + QUERY_FEATURES (`query_features.py`);
- interactions: + the query x title and query x text embedding products (`interactions.py`, needs an embedder);
- query+interactions: both;
- fields: + FIELD_FEATURES (`field_features.py`: the query against each field of the item, its year);
- query+fields: query and fields;
- query+prior, query+fields+prior: + the item's relevance rate over the train split's other queries
  (`item_prior.py`, leave-query-out at fit time; the scorer keeps the counts);
- late, query+late: + LATE_FEATURES (`late_interaction.py`: MaxSim over MiniLM's token vectors and the sentence
  cosine from the same pass; for passages; reads the bundled weights itself, not the scorer's embedder);
- late+coverage: + LATE_FEATURES and COVERAGE_FEATURES (the weakest-matched query token's best cosine) from the same
  pass (late-lr's default; "late" stays what it was, so judges compiled with it read the same columns).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hiera_dspy.signals.field_features import FIELD_FEATURES, field_features
from hiera_dspy.signals.interactions import interaction_features, interaction_names
from hiera_dspy.signals.item_prior import PRIOR_FEATURES
from hiera_dspy.signals.late_interaction import LATE_COLUMNS, LATE_FEATURES
from hiera_dspy.signals.query_features import QUERY_FEATURES, query_features

Triples = Sequence[tuple[str, str, str]]

Ids = Sequence[str] | None
BLOCKS: dict[str, tuple[Callable[[object, Triples, Ids], np.ndarray], Callable[[int], tuple[str, ...]]]] = {
    "query": (lambda scorer, triples, ids: query_features(scorer.features.lexical, triples),
              lambda width: QUERY_FEATURES),
    "fields": (lambda scorer, triples, ids: field_features(scorer.features.lexical, triples),
               lambda width: FIELD_FEATURES),
    "prior": (lambda scorer, triples, ids: scorer.prior.features(triples, ids), lambda width: PRIOR_FEATURES),
    "interactions": (lambda scorer, triples, ids: interaction_features(scorer.features.embedder, triples),
                     lambda width: interaction_names(width // 2)),
    "late": (lambda scorer, triples, ids: _late(triples)[:, :len(LATE_FEATURES)], lambda width: LATE_FEATURES),
    "late+coverage": (lambda scorer, triples, ids: _late(triples), lambda width: LATE_COLUMNS),
}
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "base": (), "query": ("query",), "interactions": ("interactions",), "query+interactions": ("query", "interactions"),
    "fields": ("fields",), "query+fields": ("query", "fields"), "query+prior": ("query", "prior"),
    "query+fields+prior": ("query", "fields", "prior"), "late": ("late",), "query+late": ("query", "late"),
    "late+coverage": ("late+coverage",),
}
NEEDS_EMBEDDER = frozenset({"interactions"})


def _late(triples: Triples) -> np.ndarray:
    from hiera_dspy.signals.late_interaction import late_features  # the ONNX session loads on first use

    return late_features(triples)


def extra_features(scorer, feature_set: str, triples: Triples, ids: Ids = None) -> list[np.ndarray]:
    """The blocks of `feature_set` for `triples` (`ids`: their pairs' item ids, if known), in order."""
    return [BLOCKS[block][0](scorer, triples, ids) for block in FEATURE_SETS[feature_set]]


def extra_names(feature_set: str, width: int) -> tuple[str, ...]:
    """The column names of the blocks of `feature_set`, `width` columns in all."""
    names: tuple[str, ...] = ()
    blocks = FEATURE_SETS[feature_set]
    fixed = {b: len(BLOCKS[b][1](0)) for b in blocks if b != "interactions"}
    for block in blocks:
        names += BLOCKS[block][1](width - sum(fixed.values()) if block == "interactions" else 0)
    return names


def needs_embedder(feature_set: str) -> bool:
    """Whether a block of `feature_set` reads embeddings."""
    return bool(NEEDS_EMBEDDER & set(FEATURE_SETS[feature_set]))


def uses_prior(feature_set: str) -> bool:
    """Whether `feature_set` reads the train split's item priors (fitted with the scorer)."""
    return "prior" in FEATURE_SETS[feature_set]


# The widest set's matrix serves every narrower set of these: a set is a selection of its columns (base 5, query 5,
# fields 24, prior 2), so one matrix computed once is enough to compare them (the number: a prefix of the columns).
WIDE = "query+fields+prior"
WIDE_SUBSETS = {"base": 5, "query": 10, "query+fields": 34, "query+prior": None, "query+fields+prior": 36}


def wide_columns(feature_set: str) -> list[int]:
    """The columns of `feature_set` (one of `WIDE_SUBSETS`) in a `WIDE` scorer's feature matrix."""
    return list(range(10)) + [34, 35] if WIDE_SUBSETS[feature_set] is None else list(range(WIDE_SUBSETS[feature_set]))
