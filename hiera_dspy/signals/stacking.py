"""Stacking: a logistic regression over the learned scorer's and an LLM's label distributions, saved as plain JSON.

Features per pair, for a scheme of k labels (least relevant first): the scorer's log-odds of each label against the
lowest (k-1 values), the LLM's the same way (k-1 values, 0 when the LLM gave no distribution) and an indicator that the
LLM's distribution is missing. Probabilities are clipped to [1e-4, 1 - 1e-4] before the logs. Fitted on train pairs
whose scorer distributions are out-of-fold (`out_of_fold`), so the stacker does not learn to trust an overfitted
scorer.

Example:
    >>> stacker = Stacker(("Irrelevant", "Relevant")).fit(scorer_dists, llm_dists, gold)        # doctest: +SKIP
    >>> stacker.predict_proba({"Irrelevant": .3, "Relevant": .7}, {"Irrelevant": .6, "Relevant": .4})  # doctest: +SKIP
    {'Irrelevant': 0.41, 'Relevant': 0.59}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from hiera_dspy.errors import HieraError, NotFitted

EPS = 1e-4
Dist = Mapping[str, float] | None


def _log_odds(dist: Dist, labels: Sequence[str]) -> list[float]:
    if dist is None:
        return [0.0] * (len(labels) - 1)
    clip = [min(1 - EPS, max(EPS, float(dist.get(label, 0.0)))) for label in labels]
    return [math.log(p) - math.log(clip[0]) for p in clip[1:]]


def features(scorer: Dist, llm: Dist, labels: Sequence[str]) -> list[float]:
    """The stacking features of one pair (see the module doc)."""
    return [*_log_odds(scorer, labels), *_log_odds(llm, labels), 1.0 if llm is None else 0.0]


class Stacker:
    """Multinomial logistic regression over `features`; predicts {label: probability} in scheme order."""

    def __init__(self, labels: Sequence[str], C: float = 1.0):
        self.labels, self.C = tuple(labels), float(C)
        self.classes: tuple[str, ...] = ()
        self.coef: np.ndarray | None = None
        self.intercept: np.ndarray | None = None

    def fit(self, scorer: Sequence[Dist], llm: Sequence[Dist], gold: Sequence[str]) -> Stacker:
        """Fit a logistic regression on the scorer and LLM distributions against the gold labels; needs two labels or
        more."""
        from sklearn.linear_model import LogisticRegression

        x = np.array([features(s, m, self.labels) for s, m in zip(scorer, llm)])
        y = np.array([self.labels.index(g) for g in gold])
        if len(set(y.tolist())) < 2:
            raise HieraError(f"the stacker needs pairs of at least two labels; got only {sorted(set(gold))}")
        model = LogisticRegression(C=self.C, random_state=0, max_iter=1000).fit(x, y)
        self.classes = tuple(self.labels[i] for i in model.classes_)
        self.coef, self.intercept = np.array(model.coef_, float), np.array(model.intercept_, float)
        return self

    def predict_proba(self, scorer: Dist, llm: Dist) -> dict[str, float]:
        """The stacked distribution over all labels for one pair (0 for labels never seen in fitting)."""
        if self.coef is None:
            raise NotFitted("Stacker is not fitted: call fit() or from_dict()")
        z = np.array(features(scorer, llm, self.labels)) @ self.coef.T + self.intercept
        if len(self.classes) == 2:
            p1 = 1.0 / (1.0 + math.exp(-float(z[0])))
            fitted = [1.0 - p1, p1]
        else:
            e = np.exp(z - z.max())
            fitted = (e / e.sum()).tolist()
        out = dict.fromkeys(self.labels, 0.0)
        for label, p in zip(self.classes, fitted):
            out[label] = float(p)
        return out

    def to_dict(self) -> dict:
        """The fitted model as plain JSON-ready values (for `from_dict`)."""
        if self.coef is None:
            raise NotFitted("Stacker is not fitted: nothing to save")
        return {"labels": list(self.labels), "C": self.C, "classes": list(self.classes), "coef": self.coef.tolist(),
                "intercept": self.intercept.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Stacker:
        """Rebuild a fitted stacker from `to_dict()` output; checks the coefficients' shape."""
        stacker = cls(d["labels"], d.get("C", 1.0))
        stacker.classes = tuple(d["classes"])
        stacker.coef, stacker.intercept = np.array(d["coef"], float), np.array(d["intercept"], float)
        width = 2 * (len(stacker.labels) - 1) + 1
        if stacker.coef.ndim != 2 or stacker.coef.shape[1] != width:
            raise HieraError(f"stacker coefficients have shape {stacker.coef.shape}; expected (*, {width})")
        return stacker


def out_of_fold(fit_predict, pairs: Sequence, folds: int = 5, seed: int = 0) -> list:
    """`fit_predict(train_pairs, test_pairs) -> predictions` run fold by fold: a prediction for every pair from a
    model that never saw it (folds drawn by a seeded permutation)."""
    order = np.random.default_rng(seed).permutation(len(pairs))
    out: list = [None] * len(pairs)
    for k in range(folds):
        test = [int(i) for i in order[k::folds]]
        held = set(test)
        train = [pairs[i] for i in range(len(pairs)) if i not in held]
        for i, prediction in zip(test, fit_predict(train, [pairs[i] for i in test])):
            out[i] = prediction
    return out
