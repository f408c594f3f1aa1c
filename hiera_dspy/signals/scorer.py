"""A learned relevance scorer: multinomial logistic regression over `features.py` signals, saved as plain JSON.

Example:
    >>> scorer = RelevanceScorer(get_scheme("msrd"), embedder=None).fit(train_pairs)   # doctest: +SKIP
    >>> scorer.predict_proba(pair)                                                     # doctest: +SKIP
    {'Irrelevant': 0.31, 'Relevant': 0.69}
    >>> RelevanceScorer.from_dict(json.loads(json.dumps(scorer.to_dict()))).predict(pair)  # doctest: +SKIP
    'Relevant'

Training uses scikit-learn (StandardScaler + LogisticRegression with a fixed random_state); prediction is plain numpy
over the stored arrays, so a scorer loaded from JSON gives bit-identical probabilities to the one that was fitted.
Probabilities come from the logistic model itself (fitted by log loss, so calibrated in the usual sense of logistic
regression; no separate calibration step). Labels the training pairs never had get probability 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.signals.features import Embedder, FeatureExtractor

FORMAT = "hiera-dspy/relevance-scorer"
FORMAT_VERSION = 1


class RelevanceScorer:
    """Per-label relevance probabilities for pairs of one label scheme.

    `embedder`: "auto" (all-MiniLM-L6-v2 when the `signals` extra is installed, else lexical only, announced once on
    stderr), None (lexical features only, even if embeddings are installed), a model id, or an `Embedder`.
    """

    def __init__(self, scheme: LabelScheme, embedder: "Embedder | str | None" = "auto", C: float = 1.0,
                 random_state: int = 0, max_iter: int = 1000):
        self.scheme = scheme
        self.C = float(C)
        self.random_state = int(random_state)
        self.max_iter = int(max_iter)
        self.features = FeatureExtractor(embedder=embedder)
        self.classes: tuple[str, ...] = ()
        self.coef: np.ndarray | None = None        # (n_classes, n_features); one row for two classes
        self.intercept: np.ndarray | None = None   # (n_classes,); one value for two classes
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    # ------------------------------------------------------------------------------------------- training

    def fit(self, pairs: Sequence[Pair]) -> "RelevanceScorer":
        """Fit the idf table, the scaler and the logistic regression on labelled pairs (labels of the scheme)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        pairs = list(pairs)
        labels = [self._check_label(p) for p in pairs]
        present = [label for label in self.scheme.labels if label in set(labels)]
        if len(present) < 2:
            raise ValueError(f"RelevanceScorer.fit needs pairs of at least two labels; got only {present}")
        self.features.fit(_triple(p) for p in pairs)
        x = self.features.transform([_triple(p) for p in pairs])
        scaler = StandardScaler().fit(x)
        # sklearn's scale_ is 1 for constant columns, so z-scores stay finite.
        model = LogisticRegression(C=self.C, random_state=self.random_state, max_iter=self.max_iter)
        y = np.array([self.scheme.labels.index(label) for label in labels])
        model.fit(scaler.transform(x), y)
        self.classes = tuple(self.scheme.labels[i] for i in model.classes_)
        self.coef = np.array(model.coef_, dtype=np.float64)
        self.intercept = np.array(model.intercept_, dtype=np.float64)
        self.mean = np.array(scaler.mean_, dtype=np.float64)
        self.scale = np.array(scaler.scale_, dtype=np.float64)
        return self

    def _check_label(self, pair: Pair) -> str:
        if pair.label not in self.scheme.labels:
            raise ValueError(f"pair {pair.id!r} has label {pair.label!r}; scheme {self.scheme.name!r} expects one of "
                             f"{list(self.scheme.labels)}")
        return pair.label

    # ------------------------------------------------------------------------------------------- prediction

    @property
    def fitted(self) -> bool:
        """Whether the scorer has learned its weights."""
        return self.coef is not None

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The names of the features, in the order of the weights."""
        return self.features.feature_names

    def predict_proba(self, pair: Pair) -> dict[str, float]:
        """{label: probability} over every label of the scheme, least relevant first; sums to 1."""
        return self.predict_proba_many([pair])[0]

    def predict(self, pair: Pair) -> str:
        """The most probable label (ties go to the less relevant label)."""
        return self.predict_many([pair])[0]

    def predict_proba_many(self, pairs: Sequence[Pair]) -> list[dict[str, float]]:
        """`predict_proba` for many pairs, embedding them in batches."""
        probs = self._proba_matrix(self.features.transform([_triple(p) for p in pairs]))
        return [{label: float(row[i]) for i, label in enumerate(self.scheme.labels)} for row in probs]

    def predict_many(self, pairs: Sequence[Pair]) -> list[str]:
        """The most probable label of each pair."""
        probs = self._proba_matrix(self.features.transform([_triple(p) for p in pairs]))
        return [self.scheme.labels[int(np.argmax(row))] for row in probs]

    def _proba_matrix(self, x: np.ndarray) -> np.ndarray:
        """(n, len(scheme.labels)) probabilities from raw features; columns follow the scheme's label order."""
        if not self.fitted:
            raise RuntimeError("RelevanceScorer is not fitted: call fit(pairs) or load one with from_dict()")
        z = (x - self.mean) / self.scale
        logits = z @ self.coef.T + self.intercept
        if len(self.classes) == 2:  # binary logistic regression: one logit for the second class
            p1 = 1.0 / (1.0 + np.exp(-logits[:, 0]))
            fitted = np.column_stack([1.0 - p1, p1])
        else:
            shifted = logits - logits.max(axis=1, keepdims=True)
            e = np.exp(shifted)
            fitted = e / e.sum(axis=1, keepdims=True)
        out = np.zeros((x.shape[0], len(self.scheme.labels)))
        for j, label in enumerate(self.classes):
            out[:, self.scheme.labels.index(label)] = fitted[:, j]
        return out

    # ------------------------------------------------------------------------------------------- JSON

    def to_dict(self) -> dict:
        """The fitted scorer as versioned JSON-ready data (scheme, weights, scaler, lexical statistics)."""
        if not self.fitted:
            raise RuntimeError("RelevanceScorer is not fitted: nothing to save")
        features = self.features.to_dict()
        return {
            "format": FORMAT, "version": FORMAT_VERSION,
            "scheme": self.scheme.to_dict(),
            "labels": list(self.classes),
            "feature_names": features["feature_names"],
            "embedding_model": features["embedding_model"],
            "coef": self.coef.tolist(),
            "intercept": self.intercept.tolist(),
            "scaler": {"mean": self.mean.tolist(), "scale": self.scale.tolist()},
            "lexical": features["lexical"],
            "params": {"C": self.C, "random_state": self.random_state, "max_iter": self.max_iter},
        }

    @classmethod
    def from_dict(cls, d: dict, embedder: "Embedder | str | None" = None) -> "RelevanceScorer":
        """Rebuild a fitted scorer. A scorer trained with embeddings reloads its saved `embedding_model` unless an
        `embedder` with the same model_id is given; it raises EmbedderUnavailable if that model cannot be loaded."""
        if d.get("format") != FORMAT or d.get("version") != FORMAT_VERSION:
            raise ValueError(f"not a {FORMAT} v{FORMAT_VERSION} document (format={d.get('format')!r}, "
                             f"version={d.get('version')!r})")
        params = d.get("params", {})
        scorer = cls(LabelScheme.from_dict(d["scheme"]), embedder=None, C=params.get("C", 1.0),
                     random_state=params.get("random_state", 0), max_iter=params.get("max_iter", 1000))
        scorer.features = FeatureExtractor.from_dict(
            {"feature_names": d["feature_names"], "embedding_model": d["embedding_model"], "lexical": d["lexical"]},
            embedder=embedder)
        scorer.classes = tuple(d["labels"])
        unknown = set(scorer.classes) - set(scorer.scheme.labels)
        if unknown:
            raise ValueError(f"saved labels {sorted(unknown)} are not in scheme {scorer.scheme.name!r}")
        scorer.coef = np.array(d["coef"], dtype=np.float64)
        scorer.intercept = np.array(d["intercept"], dtype=np.float64)
        scorer.mean = np.array(d["scaler"]["mean"], dtype=np.float64)
        scorer.scale = np.array(d["scaler"]["scale"], dtype=np.float64)
        n = len(scorer.feature_names)
        if scorer.coef.shape[1] != n or scorer.mean.shape != (n,) or scorer.scale.shape != (n,):
            raise ValueError(f"saved arrays do not match {n} features {list(scorer.feature_names)}")
        return scorer

    def save(self, path: str | Path) -> None:
        """Write `to_dict` as JSON to `path`."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path, embedder: "Embedder | str | None" = None) -> "RelevanceScorer":
        """A scorer `save` wrote (the embedder is rebuilt, or the one given is used)."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")), embedder=embedder)


def _triple(pair: Pair) -> tuple[str, str, str]:
    return pair.query, pair.item_title, pair.item_text
