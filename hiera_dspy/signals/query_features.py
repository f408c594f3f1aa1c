"""Query-level features: what kind of query a pair has, so a learned scorer can weigh its other features by it.

A title match says more for a two-word query than for a six-word one; a query that is a movie's title (or a prefix
of it) asks for that movie. Per pair, from the query and the title alone (the idf table is the fitted lexical
model's):

- query_terms: distinct content terms of the query;
- query_max_idf: the largest idf among them (a rare name vs only common words);
- title_terms: tokens of the title;
- title_in_query: the title's tokens appear in the query as one run;
- query_in_title: the query's tokens appear in the title as one run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hiera_dspy.signals.features import LexicalModel, content_terms, tokenize

QUERY_FEATURES = ("query_terms", "query_max_idf", "title_terms", "title_in_query", "query_in_title")


def _contains(outer: list[str], inner: list[str]) -> float:
    return float(bool(inner) and f" {' '.join(inner)} " in f" {' '.join(outer)} ")


def query_features(lexical: LexicalModel, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
    """(len(triples), 5): QUERY_FEATURES of (query, item_title, item_text) triples."""
    rows = []
    for query, title, _text in triples:
        q, t = tokenize(query), tokenize(title)
        terms = content_terms(q, lexical.stopwords)
        idf = max((lexical.idf.get(term, lexical.idf_unseen) for term in terms), default=0.0)
        rows.append([len(terms), idf, len(t), _contains(q, t), _contains(t, q)])
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(QUERY_FEATURES))
