"""The target's grade shares apart from per-pair labels (`methods/shares.py`), on simulated label shift: a judge
calibrated on a collection with one set of shares meets a target with others; the known judgments are a random
sample of the target's pairs or a pool (its top-scored pairs). The estimate is near the truth, its interval covers
it at a reasonable rate; a pool (chosen by a covariate, not by the grade) is neither copied nor read under label
shift; and the cut gives the shares it is asked for."""

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


def pooled(rng: np.random.Generator, queries: int = 40, per: int = 25, depth: int = 5):
    """A benchmark's pool, simulated: each query's grade shares drawn around TARGET, the judge's score x ~ N(grade, 1)
    and its posterior calibrated under TRAIN (another collection); the pool is each query's top `depth` by a
    system's score, x plus noise: chosen on a covariate correlated with the grade, never on the grade itself.
    (grades, distributions, query of each pair, in the pool)."""
    y, q = [], []
    for n in range(queries):
        y.append(rng.choice(4, size=per, p=rng.dirichlet(TARGET * 20)))
        q += [str(n)] * per
    grades, queries_of = np.concatenate(y), np.array(q)
    x = rng.normal(MEANS[grades], 1.0)
    like = np.exp(-0.5 * (x[:, None] - MEANS[None, :]) ** 2) * TRAIN[None, :]
    system = x + rng.normal(0.0, 1.0, len(x))
    known = np.zeros(len(x), dtype=bool)
    for name in np.unique(queries_of):
        members = np.flatnonzero(queries_of == name)
        known[members[np.argsort(-system[members])[:depth]]] = True
    return grades, like / like.sum(axis=1, keepdims=True), queries_of, known


def test_a_pool_recalibrates_the_judge_under_covariate_shift_and_label_shift_is_biased_there(monkeypatch):
    """The pool estimator (`ESTIMATORS["pool"]`, what the stage uses) finds the holes' share of grade >= 2 within a
    few points and its interval covers it; the pool's own share is far off, and so is EM under label shift from the
    training collection: the holes sit lower among the judge's scores than the collection did, which label shift
    reads as fewer relevant pairs."""
    monkeypatch.setattr(sh, "BOOTSTRAP", 40)
    covered, errors, copied, label_shift, raw = 0, [], [], [], []
    reps = 12
    for rep in range(reps):
        rng = np.random.default_rng(200 + rep)
        y, dist, queries, known = pooled(rng)
        holes = ~known
        truth = relevant(y[holes])
        found = sh.ESTIMATORS["pool"](y[known], dist[known], dist[holes], 4, queries[known], queries[holes], seed=rep)
        errors.append(found["at_least"][1] - truth)
        covered += found["low"][1] <= truth <= found["high"][1]
        copied.append(relevant(y[known]) - truth)
        label_shift.append(sh.label_shift_shares(TRAIN, dist[holes], queries[holes].tolist(), seed=rep)["at_least"][1]
                           - truth)
        raw.append(sh.cumulative(dist[holes])[:, 1].mean() - truth)
    assert np.mean(np.abs(errors)) < 0.03
    assert covered >= 0.75 * reps
    assert np.mean(np.abs(copied)) > 0.25  # the pool's own share: far off
    assert np.mean(label_shift) < -0.06  # EM under label shift: biased low on a pool's holes
    assert np.mean(np.abs(errors)) < 0.4 * np.mean(np.abs(label_shift))
    assert np.mean(np.abs(errors)) < np.mean(np.abs(raw))  # recalibrating beats the judge's own mean


def test_the_recalibration_is_the_identity_for_a_calibrated_judge_and_fixes_an_overconfident_one():
    rng = np.random.default_rng(9)
    p = rng.uniform(0.02, 0.98, 4000)
    slope, intercept = sh.recalibration(p, rng.random(4000) < p)
    assert slope == pytest.approx(1.0, abs=0.15) and intercept == pytest.approx(0.0, abs=0.15)
    z = rng.normal(0.0, 2.0, 4000)
    truth = 1 / (1 + np.exp(-(0.5 * z - 1.0)))  # the judge says expit(z): too sure and too generous
    slope, intercept = sh.recalibration(1 / (1 + np.exp(-z)), rng.random(4000) < truth)
    assert slope == pytest.approx(0.5, abs=0.1) and intercept == pytest.approx(-1.0, abs=0.2)


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



def test_a_sample_is_always_cut_at_its_shares_and_a_pool_only_on_three_grades_or_more():
    assert sh.cuts("sample", 2) and sh.cuts("sample", 4)
    assert sh.cuts("pool", 4) and sh.cuts("pool", 3) and not sh.cuts("pool", 2)  # MSRD's binary pools: not cut
    assert not sh.cuts("auto", 4)  # `auto` is resolved to a kind before the cut
