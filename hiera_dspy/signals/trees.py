"""Gradient-boosted trees for the learned scorer (`RelevanceScorer(model="hgb")`), kept as plain JSON arrays.

scikit-learn's HistGradientBoostingClassifier (fixed random_state, early stopping off so a fit is reproducible)
learns what a linear model cannot from a handful of features: a title match means more for a short query than for a
long one, BM25 saturates. It needs many train pairs (the MSRD pool: ~108,000); on 300 it overfits. The fitted trees
are saved as arrays (feature, threshold, where a missing value goes, children, leaf value) and evaluated with numpy,
so a scorer loaded from JSON gives the same probabilities as the one fitted, with no pickle.

Example:
    >>> model = fit_trees(x, y, n_classes=2)                 # doctest: +SKIP
    >>> predict_trees(model, x[:3])                          # doctest: +SKIP
    array([[0.91, 0.09], [0.12, 0.88], [0.64, 0.36]])
"""

from __future__ import annotations

import numpy as np

# OpenMP threads of the fit: one gives the same trees (histograms are built per feature), and on cores shared with
# other work many times less CPU, since OpenMP's threads wait busily for a descheduled one at every split (105,000
# rows of 12 features, 200 iterations, 2 busy cores: 16 s of CPU on one thread against 68 s on two).
FIT_THREADS = 1
NODE_FIELDS = ("feature_idx", "num_threshold", "missing_go_to_left", "left", "right", "is_leaf", "value")


def fit_trees(x: np.ndarray, y: np.ndarray, n_classes: int, class_weight: str | None = None,
              random_state: int = 0, max_iter: int = 200) -> dict:
    """Fit HistGradientBoostingClassifier on features `x` and class indices `y` (0..n_classes-1, every class
    present); returns the JSON-ready model."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    model = HistGradientBoostingClassifier(max_iter=max_iter, early_stopping=False, random_state=random_state,
                                           class_weight=class_weight)
    with threadpool_limits(FIT_THREADS, user_api="openmp"):
        model.fit(x, y)
    trees = [[{name: tree.nodes[name].tolist() for name in NODE_FIELDS} for tree in per_iteration]
             for per_iteration in model._predictors]
    return {"baseline": np.asarray(model._baseline_prediction, float).ravel().tolist(),
            "trees": trees, "n_classes": n_classes, "max_iter": max_iter}


def _tree_values(tree: dict, x: np.ndarray) -> np.ndarray:
    feature = np.asarray(tree["feature_idx"], int)
    threshold = np.asarray(tree["num_threshold"], float)
    missing_left = np.asarray(tree["missing_go_to_left"], bool)
    left, right = np.asarray(tree["left"], int), np.asarray(tree["right"], int)
    leaf, value = np.asarray(tree["is_leaf"], bool), np.asarray(tree["value"], float)
    node = np.zeros(x.shape[0], int)
    rows = np.arange(x.shape[0])
    while not leaf[node].all():
        v = x[rows, feature[node]]
        go_left = np.where(np.isnan(v), missing_left[node], v <= threshold[node])
        node = np.where(leaf[node], node, np.where(go_left, left[node], right[node]))
    return value[node]


def predict_trees(model: dict, x: np.ndarray) -> np.ndarray:
    """(n, n_classes) probabilities of the classes for features `x` (sigmoid for two classes, softmax above)."""
    x = np.asarray(x, float)
    baseline = np.asarray(model["baseline"], float)
    raw = np.tile(baseline, (x.shape[0], 1))
    for per_iteration in model["trees"]:
        for k, tree in enumerate(per_iteration):
            raw[:, k] += _tree_values(tree, x)
    if model["n_classes"] == 2:
        p1 = 1.0 / (1.0 + np.exp(-raw[:, 0]))
        return np.column_stack([1.0 - p1, p1])
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
