"""The target's grade shares apart from per-pair labels (`methods/shares.py`), on simulated label shift: a judge
calibrated on a collection with one set of shares meets a target with others; the known judgments are a random
sample of the target's pairs or a pool (its top-scored pairs). The estimate is near the truth, its interval covers
it at a reasonable rate, a pool's shares are not copied, and the cut gives the shares it is asked for."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.methods import shares as sh

TRAIN = np.array([0.6, 0.2, 0.12, 0.08])  # the collection the judge is calibrated on
TARGET = np.array([0.45, 0.28, 0.18, 0.09])  # as DL 2023 differs from DL 2020
MEANS = np.array([0.0, 1.0, 2.0, 3.0])


def collection(n: int, prevalence: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(grades, the judge's distributions): a score x ~ N(grade, 1), the judge's posterior calibrated under TRAIN."""
    y = rng.choice(len(prevalence), size=n, p=prevalence)
    x = rng.normal(MEANS[y], 1.0)
    like = np.exp(-0.5 * (x[:, None] - MEANS[None, :]) ** 2) * TRAIN[None, :]
    return y, like / like.sum(axis=1, keepdims=True)


def relevant(y: np.ndarray) -> float:
    return float(np.mean(y >= 2))


def test_a_random_sample_gives_the_targets_shares_within_tolerance_and_its_interval_covers():
    covered, errors = 0, []
    for rep in range(40):
        rng = np.random.default_rng(rep)
        y, dist = collection(1200, TARGET, rng)
        known = rng.choice(len(y), 125, replace=False)
        rest = np.setdiff1d(np.arange(len(y)), known)
        found = sh.sample_shares(y[known], dist[known], dist[rest], 4)
        truth = relevant(y[rest])
        errors.append(found["at_least"][1] - truth)
        covered += found["low"][1] <= truth <= found["high"][1]
    assert abs(np.mean(errors)) < 0.015  # unbiased
    assert np.mean(np.abs(errors)) < 0.04
    assert covered >= 0.85 * 40


def test_a_pool_is_not_copied_and_em_under_label_shift_finds_the_holes_shares(monkeypatch):
    """The judge is calibrated on training holes (shares TRAIN); the target's holes have other shares (TARGET) and its
    pool, the known judgments, far higher ones."""
    monkeypatch.setattr(sh, "BOOTSTRAP", 40)
    covered, errors, copied = 0, [], []
    for rep in range(6):
        rng = np.random.default_rng(100 + rep)
        y, dist = collection(800, TARGET, rng)
        pool, _ = collection(100, np.array([0.2, 0.25, 0.3, 0.25]), rng)
        queries = np.repeat(np.arange(40), 20).astype(str).tolist()
        found = sh.pool_shares(TRAIN, dist, queries, seed=rep)
        truth = relevant(y)
        errors.append(found["at_least"][1] - truth)
        copied.append(relevant(pool) - truth)
        covered += found["low"][1] <= truth <= found["high"][1]
    assert np.mean(np.abs(errors)) < 0.04
    assert np.mean(np.abs(errors)) < 0.25 * np.mean(np.abs(copied))  # the pool's own shares would be far off
    assert covered >= 5


def test_auto_tells_a_pool_from_a_random_sample():
    rng = np.random.default_rng(3)
    y, dist = collection(1000, TARGET, rng)
    score = dist @ np.arange(4)
    top = np.argsort(-score)
    assert sh.looks_like(score[top[:100]], score[top[100:]])["kind"] == "pool"
    sample = rng.choice(1000, 100, replace=False)
    assert sh.looks_like(score[sample], np.delete(score, sample))["kind"] == "sample"


@pytest.mark.parametrize("want", [[0.55, 0.27, 0.09], [0.9, 0.1, 0.0], [1.0, 0.5, 0.5]])
def test_the_cumulative_cut_gives_the_shares_asked_for_and_monotone_grades(want):
    rng = np.random.default_rng(1)
    dist = rng.dirichlet(np.ones(4), size=1000)
    t = sh.cumulative_thresholds(dist, want)
    grades = sh.cut_cumulative(dist, t)
    got = [np.mean(grades >= k) for k in (1, 2, 3)]
    assert got == pytest.approx(want, abs=2 / 1000)
    passed = sh.cumulative(dist) > t[None, :]
    assert all(((grades >= k) == passed[:, k - 1:].any(axis=1)).all() for k in (1, 2, 3))


def test_the_cut_keeps_the_judges_ranking_at_each_boundary():
    rng = np.random.default_rng(2)
    dist = rng.dirichlet(np.ones(4), size=500)
    grades = sh.cut_cumulative(dist, sh.cumulative_thresholds(dist, [0.6, 0.3, 0.1]))
    top = sh.cumulative(dist)[:, 2]
    assert top[grades == 3].min() > top[grades < 3].max()  # the top grade: the pairs the judge puts highest there


def test_grade_shares_and_monotone_shares():
    assert sh.grade_shares([0.55, 0.27, 0.09]) == pytest.approx([0.45, 0.28, 0.18, 0.09])
    assert sh.monotone(np.array([0.5, 0.6, -0.1])).tolist() == [0.5, 0.5, 0.0]


def test_the_learned_lean_finds_a_better_cut_than_the_true_shares_for_a_weak_judge():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(5)
    y = (rng.random(3000) < 0.1).astype(int)
    x = rng.normal(1.0 * y, 1.0)  # a weak judge of a rare grade
    p1 = 1 / (1 + np.exp(-(x - 2.5)))
    dist = np.column_stack([1 - p1, p1])
    groups = np.repeat(np.arange(6), 500)
    offsets, best = sh.share_offsets(dist, y, groups, 2, lambda g, p, k: cohen_kappa_score(g, p))
    assert offsets[0] != 0  # the best cut of a weak judge of a rare grade does not give the true share
    at_truth = sh.cut_cumulative(dist, sh.cumulative_thresholds(dist, [y.mean()]))
    assert best > cohen_kappa_score(y, at_truth)
    leaned = sh.cut_cumulative(dist, sh.cumulative_thresholds(dist, sh.shifted_shares([y.mean()], offsets)))
    assert cohen_kappa_score(y, leaned) > cohen_kappa_score(y, at_truth)
