"""Grades from grade distributions: the expected grade, the K-1 thresholds that cut it (chosen by an agreement on
out-of-fold predictions), and the query-grouped folds those predictions come from. Shared by the learned judges that
cut an expected grade (ce-blend, late-lr) and the feedback stage.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from hiera_dspy.errors import HieraError
from hiera_dspy.records import Pair

THRESHOLDS = tuple(np.linspace(0.2, 0.8, 25))  # two labels: the cut on P(top label)
SWEEPS = 4  # coordinate-ascent passes over the K-1 thresholds of a graded scheme


def query_folds(pairs: Sequence[Pair], k: int, seed: int, option: str = "ce-blend: blend_folds") -> list[int]:
    """Each pair's fold: the sorted queries in a seeded order, dealt round-robin into `k` folds (fewer queries than
    folds: ValueError naming `option`, the setting that asked for `k`)."""
    queries = sorted({p.query_id or p.query for p in pairs})
    random.Random(seed).shuffle(queries)
    fold = {q: i % k for i, q in enumerate(queries)}
    if len(queries) < k:
        raise HieraError(f"{option}={k} needs at least as many train queries; {len(queries)} given: lower it or "
                         "give more queries")
    return [fold[p.query_id or p.query] for p in pairs]


def expected_grade(dists: np.ndarray) -> np.ndarray:
    """(n, K) grade distributions -> their expected grades, 0 .. K-1."""
    return np.asarray(dists, dtype=float) @ np.arange(np.shape(dists)[1])


def cut(values, thresholds: Sequence[float]) -> np.ndarray:
    """Grade indices: how many of the increasing `thresholds` each value reaches (value >= threshold)."""
    return (np.asarray(values, dtype=float)[:, None] >= np.asarray(thresholds, dtype=float)[None, :]).sum(axis=1)


def objective(name: str):
    """The agreement a blend is chosen by, on grade indices: Cohen's kappa or its quadratic-weighted form."""
    from hiera_dspy.metrics.agreement import cohen_kappa, quadratic_kappa

    measure = {"kappa": cohen_kappa, "weighted_kappa": quadratic_kappa}.get(name)
    if measure is None:
        raise HieraError(f"ce-blend: blend_objective {name!r} is not one of kappa, weighted_kappa")

    def score(gold: np.ndarray, pred: np.ndarray, k: int) -> float:
        cm = np.zeros((k, k))
        np.add.at(cm, (gold, pred), 1)
        value = float(measure(cm))
        return 0.0 if np.isnan(value) else value

    return score


def graded_and_binary(binary_from: int):
    """The mean of Cohen's kappa on the grades and on their binary view (grade >= `binary_from` relevant): the
    feedback stage's thresholds are chosen by it, so a cut that gains on four grades cannot lose the binary view
    (chosen by four-grade kappa alone, the thresholds called too few passages relevant). With two grades it is kappa."""
    kappa = objective("kappa")

    def score(gold: np.ndarray, pred: np.ndarray, k: int) -> float:
        binary = kappa((gold >= binary_from).astype(int), (pred >= binary_from).astype(int), 2)
        return 0.5 * (kappa(gold, pred, k) + binary)

    return score


def grid(k: int) -> tuple[float, ...]:
    """Candidate thresholds on the expected-grade scale: `THRESHOLDS` for two labels, else 25 per grade step."""
    return THRESHOLDS if k == 2 else tuple(np.linspace(0.2, k - 1.2, 25 * (k - 1)))


def best_thresholds(gold: np.ndarray, values: np.ndarray, k: int, score) -> tuple[float, tuple[float, ...]]:
    """(agreement, K-1 increasing thresholds) maximising `score` of `cut(values, thresholds)` on the grid: the one
    threshold of two labels by exhaustive search, K-1 by coordinate ascent from the cuts that reproduce gold's
    label shares (ties: the larger threshold)."""
    candidates = np.asarray(grid(k))
    shares = np.cumsum(np.bincount(gold, minlength=k))[:-1] / len(gold)
    current = [float(candidates[np.abs(candidates - np.quantile(values, s)).argmin()]) for s in shares]
    best = score(gold, cut(values, current), k)
    for _ in range(SWEEPS if k > 2 else 1):
        for j in range(k - 1):
            low = current[j - 1] if j > 0 else -np.inf
            high = current[j + 1] if j < k - 2 else np.inf
            for t in candidates[(candidates > low) & (candidates < high)]:
                trial = current[:j] + [float(t)] + current[j + 1:]
                value = score(gold, cut(values, trial), k)
                if (value, t) > (best, current[j]):
                    best, current = value, trial
    return best, tuple(current)


def distributions(rows: Sequence[dict[str, float]], labels: Sequence[str]) -> np.ndarray:
    """Label distributions (dicts) -> an (n, K) array in `labels` order."""
    return np.array([[float(row.get(label, 0.0)) for label in labels] for row in rows], dtype=float)
