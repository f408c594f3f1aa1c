"""A learned relevance scorer: multinomial logistic regression over `features.py` signals, saved as plain JSON.

Example:
    >>> scorer = RelevanceScorer(get_scheme("msrd"), embedder=None).fit(train_pairs)   # doctest: +SKIP
    >>> scorer.predict_proba(pair)                                                     # doctest: +SKIP
    {'Irrelevant': 0.31, 'Relevant': 0.69}
    >>> RelevanceScorer.from_dict(json.loads(json.dumps(scorer.to_dict()))).predict(pair)  # doctest: +SKIP
    'Relevant'

Training uses scikit-learn (StandardScaler + LogisticRegression, lbfgs, fixed random_state: with a handful of features
it fits 100,000 pairs in seconds, so no subsample is needed; `features="interactions"` adds 768 columns and ~1.2 GB per
100,000 pairs, so cap a larger split with `optimize.compile --train-limit`); prediction is plain numpy over the stored
arrays, so a scorer loaded from JSON gives bit-identical probabilities to the one that was fitted.
Probabilities come from the logistic model itself (fitted by log loss, so calibrated in the usual sense of logistic
regression; no separate calibration step). Labels the training pairs never had get probability 0.

Options (config keys of embed-lr and probe-stacked, `hiera_dspy.methods.params`): `features` "base" (lexical + two
cosines) | "interactions" (+ the query x item embedding products, `interactions.py`); `class_weight` "balanced"
(each label weighs as much in the fit: a train split with the pool's ~15% relevant then predicts for a balanced
prior); `C_grid` (C chosen on a query-grouped dev split of the train pairs, `selection.py`; `C` is then ignored); `model`
"lr" | "hgb" (gradient-boosted trees over the same features, `trees.py`; for thousands of pairs; C unused).
`features` "query" adds query-level features (`query_features.py`), "fields" field-level ones (`field_features.py`),
"prior" the train split's leave-query-out item priors (`item_prior.py`, keyed by the pairs' item ids); the sets are
in `feature_sets.py`.

Every feature reads the item in its canonical form (`item_form.py`: typography folded, known field lines relabelled and
in one order), so a catalog's re-wording does not move them; the saved scorer says so (`item_form`): "fields" when
every train item was made of known field lines only (MSRD: a line added later, about availability say, is then not
read), "title" when no train item had a text (Home Depot's titles: a text added later is not read), else "canonical"
(every line read). A scorer saved before reads items as they come ("raw"), as it always did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hiera_dspy.errors import HieraError, NotFitted
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.signals.feature_sets import FEATURE_SETS, extra_features, extra_names, needs_embedder, uses_prior
from hiera_dspy.signals.features import Embedder, FeatureExtractor
from hiera_dspy.signals.item_form import canonical_triples, loose_lines_matter
from hiera_dspy.signals.item_prior import ItemPrior
from hiera_dspy.signals.selection import choose_C
from hiera_dspy.signals.trees import fit_trees, predict_trees

MODELS = ("lr", "hgb")  # `model=`: logistic regression (default) | gradient-boosted trees (trees.py)
ITEM_FORMS = ("canonical", "fields", "title", "raw")  # canonical_item, its known fields only, its title | as they come

FORMAT = "hiera-dspy/relevance-scorer"
FORMAT_VERSION = 1


class RelevanceScorer:
    """Per-label relevance probabilities for pairs of one label scheme.

    `embedder`: "auto" (all-MiniLM-L6-v2 when the `signals` extra is installed, else lexical only, announced once on
    stderr), None (lexical features only, even if embeddings are installed), a model id, or an `Embedder`.
    """

    def __init__(self, scheme: LabelScheme, embedder: Embedder | str | None = "auto", C: float = 1.0,
                 random_state: int = 0, max_iter: int = 1000, features: str = "base",
                 class_weight: str | None = None, C_grid: list[float] | None = None, model: str = "lr"):
        if features not in FEATURE_SETS:
            raise HieraError(f"features must be one of {list(FEATURE_SETS)}; got {features!r}")
        if model not in MODELS:
            raise HieraError(f"model must be one of {list(MODELS)}; got {model!r}")
        self.model = model
        self.trees: dict | None = None  # model="hgb": the fitted trees (trees.py)
        self.prior: ItemPrior | None = None  # a feature set with "prior": the train split's item priors
        self.item_form = "canonical"  # chosen by `fit` (`fitted_form`); a scorer saved before item forms: "raw"
        self.scheme = scheme
        self.C = float(C)
        self.random_state = int(random_state)
        self.max_iter = int(max_iter)
        self.feature_set, self.class_weight = features, class_weight
        self.C_grid = [float(c) for c in C_grid] if C_grid else None
        self.C_losses: dict[float, float] = {}  # dev log loss per C when C_grid chose C
        self.features = FeatureExtractor(embedder=embedder)
        if needs_embedder(features) and self.features.embedder is None:
            raise HieraError(f"features={features!r} needs an embedder (the signals extra, or embedder=MODEL); "
                             "with embedder=lexical use features='base' or 'query'")
        self.classes: tuple[str, ...] = ()
        self.coef: np.ndarray | None = None        # (n_classes, n_features); one row for two classes
        self.intercept: np.ndarray | None = None   # (n_classes,); one value for two classes
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    # ------------------------------------------------------------------------------------------- training

    def fit(self, pairs: Sequence[Pair], rows: np.ndarray | None = None) -> RelevanceScorer:
        """Fit the idf table, the scaler and the logistic regression on labelled pairs (labels of the scheme).

        `rows`: the pairs' feature rows computed beforehand by a scorer of the same options and embedder fitted on
        the same pairs (a benchmark reusing one matrix for several fits; the prior's columns in their leave-query-out
        form); the item priors are still fitted here, and the idf table unless the extractor is already fitted (the
        one that computed `rows`)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        pairs = list(pairs)
        labels = [self._check_label(p) for p in pairs]
        present = [label for label in self.scheme.labels if label in set(labels)]
        if len(present) < 2:
            raise HieraError(f"RelevanceScorer.fit needs pairs of at least two labels; got only {present}")
        if self.C_grid and self.model == "lr":
            self.C, self.C_losses = choose_C(self._fit_with_C, pairs, self.C_grid, seed=self.random_state)
        if self.item_form != "raw":
            self.item_form = fitted_form(pairs)
        triples = self._triples(pairs)
        base = None
        if rows is None:  # the extractor's columns, each item screened once for the idf table and the rows
            base = self.features.fit_transform(triples)
        elif not self.features.lexical.fitted:
            self.features.fit(triples)
        y = np.array([self.scheme.labels.index(label) for label in labels])
        if uses_prior(self.feature_set):  # leave-query-out while the train rows are built (item_prior.py)
            self.prior = ItemPrior().fit([_triple(p) for p in pairs], y / max(1, len(self.scheme.labels) - 1),
                                         [p.item_id for p in pairs])
        x = self._matrix(pairs, triples, base) if rows is None else np.asarray(rows, dtype=np.float64)
        if x.shape[0] != len(pairs):
            raise HieraError(f"rows has {x.shape[0]} rows for {len(pairs)} pairs")
        if self.prior is not None:
            self.prior.forget_train()
        if self.model == "hgb":
            return self._fit_trees(x, y)
        scaler = StandardScaler().fit(x)
        # sklearn's scale_ is 1 for constant columns, so z-scores stay finite.
        model = LogisticRegression(C=self.C, random_state=self.random_state, max_iter=self.max_iter,
                                   class_weight=self.class_weight)
        model.fit(scaler.transform(x), y)
        self.classes = tuple(self.scheme.labels[i] for i in model.classes_)
        self.coef = np.array(model.coef_, dtype=np.float64)
        self.intercept = np.array(model.intercept_, dtype=np.float64)
        self.mean = np.array(scaler.mean_, dtype=np.float64)
        self.scale = np.array(scaler.scale_, dtype=np.float64)
        return self

    def train_rows(self, pairs: Sequence[Pair]) -> np.ndarray:
        """The feature rows of labelled `pairs` that `fit(pairs, rows=...)` takes, the item form and idf table fixed
        from them here: one matrix for several fits (a judge choosing its thresholds out of fold). Not for a set
        with item priors, whose train rows are leave-query-out (ValueError)."""
        if uses_prior(self.feature_set):
            raise HieraError(f"train_rows: features {self.feature_set!r} read item priors, fitted inside fit()")
        pairs = list(pairs)
        if self.item_form != "raw":
            self.item_form = fitted_form(pairs)
        self.features.fit(self._triples(pairs))
        return self._matrix(pairs)

    def proba_rows(self, x: np.ndarray) -> np.ndarray:
        """(n, len(scheme.labels)) probabilities of feature rows (`train_rows`' columns), in the scheme's order."""
        return self._proba_matrix(np.asarray(x, dtype=np.float64))

    def _fit_trees(self, x: np.ndarray, y: np.ndarray) -> RelevanceScorer:
        """model="hgb": trees over the raw features, classes renumbered 0..k-1 in scheme order."""
        present = sorted(set(y.tolist()))
        self.classes = tuple(self.scheme.labels[i] for i in present)
        self.trees = fit_trees(x, np.array([present.index(v) for v in y]), len(present), self.class_weight,
                               self.random_state)
        width = x.shape[1]
        self.mean, self.scale = np.zeros(width), np.ones(width)
        self.coef, self.intercept = np.zeros((1, width)), np.zeros(1)  # unused by trees; keeps `fitted` and shapes
        return self

    def _fit_with_C(self, pairs: list[Pair], C: float) -> RelevanceScorer:
        """A scorer of this one's options and embedder, fitted with `C` (for choosing C)."""
        other = RelevanceScorer(self.scheme, embedder=self.features.embedder, C=C, random_state=self.random_state,
                                max_iter=self.max_iter, features=self.feature_set, class_weight=self.class_weight,
                                model=self.model)
        return other.fit(pairs)

    def _matrix(self, pairs: Sequence[Pair], triples: list[tuple[str, str, str]] | None = None,
                base: np.ndarray | None = None) -> np.ndarray:
        """The feature rows of `pairs`: the extractor's (`base`, when computed already from `triples`, the pairs in
        this scorer's item form), then the blocks of the feature set."""
        triples = self._triples(pairs) if triples is None else triples
        x = self.features.transform(triples) if base is None else base
        if triples and FEATURE_SETS[self.feature_set]:
            x = np.hstack([x, *extra_features(self, self.feature_set, triples, [p.item_id for p in pairs])])
        return x

    def _triples(self, pairs: Sequence[Pair]) -> list[tuple[str, str, str]]:
        """The pairs' (query, item_title, item_text), the item in this scorer's form (`item_form`)."""
        triples = [_triple(p) for p in pairs]
        if self.item_form == "title":
            return [(q, title, "") for q, title, _ in canonical_triples(triples)]
        return triples if self.item_form == "raw" else canonical_triples(triples, self.item_form == "canonical")

    def _check_label(self, pair: Pair) -> str:
        if pair.label not in self.scheme.labels:
            raise HieraError(f"pair {pair.id!r} has label {pair.label!r}; scheme {self.scheme.name!r} expects one of "
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
        names = self.features.feature_names
        if FEATURE_SETS[self.feature_set] and self.coef is not None:
            names += extra_names(self.feature_set, self.coef.shape[1] - len(names))
        return names

    def predict_proba(self, pair: Pair) -> dict[str, float]:
        """{label: probability} over every label of the scheme, least relevant first; sums to 1."""
        return self.predict_proba_many([pair])[0]

    def predict(self, pair: Pair) -> str:
        """The most probable label (ties go to the less relevant label)."""
        return self.predict_many([pair])[0]

    def predict_proba_many(self, pairs: Sequence[Pair]) -> list[dict[str, float]]:
        """`predict_proba` for many pairs, embedding them in batches."""
        probs = self._proba_matrix(self._matrix(pairs))
        return [{label: float(row[i]) for i, label in enumerate(self.scheme.labels)} for row in probs]

    def predict_many(self, pairs: Sequence[Pair]) -> list[str]:
        """The most probable label of each pair."""
        probs = self._proba_matrix(self._matrix(pairs))
        return [self.scheme.labels[int(np.argmax(row))] for row in probs]

    def _proba_matrix(self, x: np.ndarray) -> np.ndarray:
        """(n, len(scheme.labels)) probabilities from raw features; columns follow the scheme's label order."""
        if not self.fitted:
            raise NotFitted("RelevanceScorer is not fitted: call fit(pairs) or load one with from_dict()")
        z = (x - self.mean) / self.scale
        logits = z @ self.coef.T + self.intercept
        if self.trees is not None:
            fitted = predict_trees(self.trees, x)
        elif len(self.classes) == 2:  # binary logistic regression: one logit for the second class
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
            raise NotFitted("RelevanceScorer is not fitted: nothing to save")
        features = self.features.to_dict()
        return {
            "format": FORMAT, "version": FORMAT_VERSION,
            "scheme": self.scheme.to_dict(),
            "labels": list(self.classes),
            "feature_names": features["feature_names"],
            "feature_set": self.feature_set,
            **({"item_form": self.item_form} if self.item_form != "raw" else {}),
            **({"model": self.model, "trees": self.trees} if self.trees is not None else {}),
            **({"item_prior": self.prior.to_dict()} if self.prior is not None else {}),
            "embedding_model": features["embedding_model"],
            "coef": self.coef.tolist(),
            "intercept": self.intercept.tolist(),
            "scaler": {"mean": self.mean.tolist(), "scale": self.scale.tolist()},
            "lexical": features["lexical"],
            "params": {"C": self.C, "random_state": self.random_state, "max_iter": self.max_iter,
                       **({"class_weight": self.class_weight} if self.class_weight else {}),
                       **({"C_grid": self.C_grid, "C_losses": {str(c): v for c, v in self.C_losses.items()}}
                          if self.C_grid else {})},
        }

    @classmethod
    def from_dict(cls, d: dict, embedder: Embedder | str | None = None) -> RelevanceScorer:
        """Rebuild a fitted scorer. A scorer trained with embeddings reloads its saved `embedding_model` unless an
        `embedder` with the same model_id is given; it raises EmbedderUnavailable if that model cannot be loaded."""
        if d.get("format") != FORMAT or d.get("version") != FORMAT_VERSION:
            raise HieraError(f"not a {FORMAT} v{FORMAT_VERSION} document (format={d.get('format')!r}, "
                             f"version={d.get('version')!r})")
        params = d.get("params", {})
        scorer = cls(LabelScheme.from_dict(d["scheme"]), embedder=None, C=params.get("C", 1.0),
                     random_state=params.get("random_state", 0), max_iter=params.get("max_iter", 1000),
                     class_weight=params.get("class_weight"))
        scorer.feature_set = d.get("feature_set", "base")
        scorer.item_form = d.get("item_form", "raw")
        if scorer.item_form not in ITEM_FORMS:
            raise HieraError(f"saved item_form {scorer.item_form!r} is not one of {list(ITEM_FORMS)}: a scorer of a "
                             "newer hiera-dspy? upgrade, or refit it")
        scorer.model, scorer.trees = d.get("model", "lr"), d.get("trees")
        scorer.prior = ItemPrior.from_dict(d["item_prior"]) if "item_prior" in d else None
        if uses_prior(scorer.feature_set) and scorer.prior is None:
            raise HieraError(f"feature set {scorer.feature_set!r} needs the saved item priors; none were saved")
        scorer.C_grid = params.get("C_grid")
        scorer.features = FeatureExtractor.from_dict(
            {"feature_names": d["feature_names"], "embedding_model": d["embedding_model"], "lexical": d["lexical"]},
            embedder=embedder)
        scorer.classes = tuple(d["labels"])
        unknown = set(scorer.classes) - set(scorer.scheme.labels)
        if unknown:
            raise HieraError(f"saved labels {sorted(unknown)} are not in scheme {scorer.scheme.name!r}")
        scorer.coef = np.array(d["coef"], dtype=np.float64)
        scorer.intercept = np.array(d["intercept"], dtype=np.float64)
        scorer.mean = np.array(d["scaler"]["mean"], dtype=np.float64)
        scorer.scale = np.array(d["scaler"]["scale"], dtype=np.float64)
        if needs_embedder(scorer.feature_set) and scorer.features.embedder is None:
            raise HieraError("a scorer with interaction features needs its embedding model; none was saved")
        n = len(scorer.feature_names)
        if scorer.coef.shape[1] != n or scorer.mean.shape != (n,) or scorer.scale.shape != (n,):
            raise HieraError(f"saved arrays do not match {n} features {list(scorer.feature_names)}")
        return scorer

    def save(self, path: str | Path) -> None:
        """Write `to_dict` as JSON to `path`."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path, embedder: Embedder | str | None = None) -> RelevanceScorer:
        """A scorer `save` wrote (the embedder is rebuilt, or the one given is used)."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")), embedder=embedder)


def fitted_form(pairs: Sequence[Pair]) -> str:
    """The item form a scorer fitted on `pairs` reads in: "title" (no pair has an item text), "fields" (every text is
    known field lines only), else "canonical"."""
    if not any(p.item_text for p in pairs):
        return "title"
    return "canonical" if loose_lines_matter((p.item_title, p.item_text) for p in pairs) else "fields"


def _triple(pair: Pair) -> tuple[str, str, str]:
    return pair.query, pair.item_title, pair.item_text
