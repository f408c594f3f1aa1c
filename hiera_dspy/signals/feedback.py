"""Feedback evidence: what a query's known judgments say about one of its unjudged pairs (the feedback stage's
inputs; the learned combination that reads them is `methods/feedback.py`).

A benchmark with holes already judges some passages of every query. For a pair of such a query, `evidence` gives
one row of FEEDBACK_FEATURES from the pair's passage vector and the judge's own expected grade of it, against the
query's known passages (their grades, vectors, and the judge's expected grades of them):

- e: the judge's own expected grade of the pair (what it says without feedback);
- sim_<g> and has_<g>, for every grade g: the pair's highest sentence cosine to a known passage of grade g (0 when
  the query has none of that grade) and whether it has one; sim_top: its highest cosine to any known passage. A
  passage that reads like the query's judged relevant ones is likelier relevant (Büttcher et al., SIGIR 2007, train
  a classifier per topic on its judged documents);
- knn_grade: the known grades weighted by softmax(SHARPNESS * cosine), the grade of the passages most like it;
- offset: the mean of (known grade - the judge's expected grade) over the known: how far the judge is off on this
  query (a per-query calibration); rank: the share of the known the judge scores below this pair; local_grade: the
  known grades weighted by how close the judge's score of each is to this pair's (a kernel of width BANDWIDTH,
  shrunk to their mean by one pseudo-judgment);
- log_known, mean_grade, top_share: how many known judgments the query has (log 1 + n), their mean grade and the
  share in the upper half of the scale.

A pair's own judgment never informs it: a known passage with the pair's item id, or with its very text, is left out
(`own`). A query with no known judgment left has no evidence (None): its pairs are judged as without the stage.

Sentence vectors come from the late-interaction pass late-lr already makes (`late_interaction.LateInteraction.
vectors`: a passage that pass read costs nothing more), or, where the bundled MiniLM is not installed, from a
hashed bag of words (`LEXICAL_VECTORS`); a stage reads the kind it was fitted with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SHARPNESS = 20.0  # softmax temperature of knn_grade over cosines (MiniLM cosines of one query's passages span ~0.3)
BANDWIDTH = 0.25  # local_grade's kernel width on the expected-grade scale
MINILM_VECTORS, LEXICAL_VECTORS = "minilm", "lexical"
HASH_DIM = 4096


def feature_names(k: int) -> tuple[str, ...]:
    """FEEDBACK_FEATURES of a scheme of `k` grades, in the order `evidence` returns them."""
    per_grade = tuple(f"sim_{g}" for g in range(k)) + tuple(f"has_{g}" for g in range(k))
    return ("e", *per_grade, "sim_top", "knn_grade", "offset", "rank", "local_grade", "log_known", "mean_grade",
            "top_share")


@dataclass(frozen=True)
class QueryKnown:
    """One query's known judgments as arrays: `grades` (n,) grade indices, `vectors` (n, d) unit sentence vectors of
    their passages, `expected` (n,) the judge's expected grade of each, `item_ids` and `docs` (their passages' ids
    and texts, to leave a pair's own judgment out)."""

    grades: np.ndarray
    vectors: np.ndarray
    expected: np.ndarray
    item_ids: tuple[str, ...]
    docs: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.grades)

    def without(self, index: int) -> QueryKnown:
        """The same judgments but the one at `index` (a known pair scored from the query's other judgments)."""
        keep = np.arange(len(self)) != index
        return QueryKnown(self.grades[keep], self.vectors[keep], self.expected[keep],
                          tuple(i for i, k in zip(self.item_ids, keep) if k), tuple(d for d, k in zip(self.docs, keep)
                                                                                     if k))


def own(known: QueryKnown, item_id: str | None, doc: str) -> np.ndarray:
    """(n,) bool: the known judgments that are the pair's own (same item id, or the very same passage text)."""
    return np.array([(item_id is not None and i == item_id) or d == doc for i, d in zip(known.item_ids, known.docs)],
                    dtype=bool)


def evidence(expected: float, vector: np.ndarray, known: QueryKnown, k: int, exclude: np.ndarray | None = None
             ) -> np.ndarray | None:
    """One row of `feature_names(k)` for a pair (the judge's `expected` grade of it, its passage's unit `vector`)
    against its query's `known` judgments but those `exclude` marks (its own); None when none is left."""
    keep = np.ones(len(known), dtype=bool) if exclude is None else ~np.asarray(exclude, dtype=bool)
    if not keep.any():
        return None
    grades, exp_known = known.grades[keep], known.expected[keep]
    sims = known.vectors[keep] @ np.asarray(vector, dtype=float)
    sim_g = [float(sims[grades == g].max()) if (grades == g).any() else 0.0 for g in range(k)]
    has_g = [float((grades == g).any()) for g in range(k)]
    weights = np.exp(SHARPNESS * (sims - sims.max()))
    knn = float(weights @ grades / weights.sum())
    mean = float(grades.mean())
    closeness = np.exp(-0.5 * ((exp_known - expected) / BANDWIDTH) ** 2)
    local = float((closeness @ grades + mean) / (closeness.sum() + 1.0))
    rank = float(((exp_known < expected).sum() + 0.5 * (exp_known == expected).sum()) / len(grades))
    return np.array([expected, *sim_g, *has_g, float(sims.max()), knn, float((grades - exp_known).mean()), rank,
                     local, float(np.log1p(len(grades))), mean, float((grades >= k / 2).mean())])


def evidence_rows(expected: Sequence[float] | np.ndarray, vectors: np.ndarray, known: QueryKnown, k: int,
                  item_ids: Sequence[str | None], docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, which): the evidence of each pair of one query (their own judgments left out), and the indices of the
    pairs that have some (a pair whose only known judgment is its own has none)."""
    rows, which = [], []
    for i, (e, v, item_id, doc) in enumerate(zip(expected, vectors, item_ids, docs)):
        row = evidence(float(e), v, known, k, own(known, item_id, doc))
        if row is not None:
            rows.append(row)
            which.append(i)
    width = len(feature_names(k))
    return (np.array(rows) if rows else np.zeros((0, width))), np.array(which, dtype=int)


def lexical_vectors(docs: Sequence[str]) -> np.ndarray:
    """Unit hashed bag-of-words vectors (`LEXICAL_VECTORS`: where the bundled MiniLM is not installed)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=HASH_DIM, alternate_sign=False, norm="l2").transform(list(docs)).toarray()


def minilm_vectors(docs: Sequence[str]) -> np.ndarray:
    """Unit MiniLM sentence vectors of passages from the late-interaction pass (remembered from late-lr's features)."""
    from hiera_dspy.signals.late_interaction import late_interaction
    from hiera_dspy.signals.minilm import DEFAULT_MODEL_ID

    vectors = late_interaction(DEFAULT_MODEL_ID).vectors(list(docs))  # the instance late_features made: its memory
    out = np.array([v if len(v) else np.zeros(len(vectors[0]) if vectors else 0) for v in vectors], dtype=float)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12) if len(out) else out


def _vectors(kind: str, docs: Sequence[str]) -> np.ndarray:
    """The `kind` vectors of `docs` (tests and benchmarks swap this for a table, as `feature_sets._late`)."""
    return VECTORS[kind](docs)


VECTORS = {MINILM_VECTORS: minilm_vectors, LEXICAL_VECTORS: lexical_vectors}


def passage_vectors(kind: str, docs: Sequence[str]) -> np.ndarray:
    """(len(docs), d) unit sentence vectors of `docs`, of `kind` (MINILM_VECTORS | LEXICAL_VECTORS)."""
    if not len(docs):
        return np.zeros((0, 1))
    return np.asarray(_vectors(kind, docs), dtype=float)


def available_kind() -> str:
    """MINILM_VECTORS where the bundled MiniLM and onnxruntime are installed, else LEXICAL_VECTORS."""
    from hiera_dspy.signals import onnx_encoder
    from hiera_dspy.signals.minilm import bundled_model_path

    return MINILM_VECTORS if bundled_model_path() is not None and onnx_encoder.available() else LEXICAL_VECTORS
