"""The target's grade shares, apart from per-pair labels (quantification), and a cut of the judge's grade
distributions that gives those shares.

**What the known judgments are** (`hiera_dspy.data.known.KINDS`): a random `sample` of the pairs, or a `pool` (the top of a few systems'
runs, as a benchmark's qrels are). `auto` checks: a pool's pairs sit high among the judge's scores of the pairs to
judge, a sample's spread like them (`looks_like`, a Mann-Whitney test of the judge's expected grade of the known
pairs against a sample of the pairs to judge). A pool's shares are never copied as the pairs' shares.

**Shares** (`estimate`), each of grade >= k for k = 1..K-1, with an interval:
- sample: prediction-powered (Angelopoulos et al. 2023, `ppi_py.ppi_mean_ci`): the mean of the judge's P(grade >= k)
  over the pairs to judge, rectified by the known pairs' mean of 1[grade >= k] - P(grade >= k); unbiased whatever
  the judge, narrower than the known's own share where the judge ranks well.
- pool: under covariate shift. A pool is chosen by the systems' ranks, i.e. by covariates, not by the grade, so
  P(grade | the judge's evidence) is the same in the pool and in the holes, while P(evidence | grade), which label
  shift keeps, is not (the holes sit lower among the judge's scores). Each boundary's P(grade >= k) is recalibrated
  on the known pool (a logistic map of its logit, shrunk towards the judge's own) and averaged over the pairs to judge
  (probabilistic classify-and-count), the interval from a bootstrap of the queries (`recalibrated_shares`). EM prior
  adjustment under label shift from the training collection (Saerens, Latinne and Decaestecker 2002; QuaPy's
  `EMQ.EM`, `label_shift_shares`) is reported beside it: on DL 2020's pools it missed the holes' share of relevant
  pairs by 10 points, reading the holes' low scores as fewer relevant pairs.

**The cut** (`cumulative_thresholds`, `cut_cumulative`; for the kinds and scales of `CUT_KINDS`: a sample always, a
pool on three grades or more, its binary cut lowered kappa and the fill on MSRD's pools): one boundary k at a time
on P(grade >= k), from the top grade down, each threshold where the share of the pairs to judge at or above k
matches the estimate; a pair's grade is the highest k whose P(grade >= k) passes its threshold, so the labels are
monotone and the ranking at each boundary is the judge's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LEVEL = 0.95
BOOTSTRAP = 100  # bootstrap draws of a pool's EM estimate
POOL_AUC = 0.60  # auto: known pairs above the pairs to judge at least this often (and significantly) -> a pool
POOL_P = 0.01
CUT_KINDS = {"sample": 2, "pool": 3}  # the kinds of known judgments whose estimated shares the grades are cut at, on
# scales of at least this many grades (a binary pool's cut lowered kappa and the fill on MSRD: its thresholds stand)
LEANS = ("sample",)  # the kinds whose cut leans as the stage learned (`share_offsets`); a pool's falls at the estimate


def cumulative(dist: np.ndarray) -> np.ndarray:
    """(n, K-1) P(grade >= k) for k = 1..K-1 of (n, K) grade distributions."""
    d = np.asarray(dist, dtype=float)
    return np.cumsum(d[:, ::-1], axis=1)[:, ::-1][:, 1:]


def cumulative_thresholds(dist: np.ndarray, shares: Sequence[float] | np.ndarray) -> np.ndarray:
    """(K-1,) thresholds on P(grade >= k) such that, cut by `cut_cumulative`, the pairs of `dist` (n, K) have
    `shares[k-1]` of them at grade >= k (as near as n allows), set from the top boundary down."""
    c = cumulative(dist)
    n, bounds = c.shape
    grade = np.zeros(n, dtype=int)
    out = np.zeros(bounds)
    for k in range(bounds, 0, -1):
        above = grade >= k
        need = int(round(float(shares[k - 1]) * n)) - int(above.sum())
        rest = np.sort(c[~above, k - 1])[::-1]
        if need <= 0 or not len(rest):
            out[k - 1] = np.inf
        elif need >= len(rest):
            out[k - 1] = -np.inf
        else:
            out[k - 1] = (rest[need - 1] + rest[need]) / 2
        grade[~above & (c[:, k - 1] > out[k - 1])] = k
    return out


def cut_cumulative(dist: np.ndarray, thresholds: Sequence[float] | np.ndarray) -> np.ndarray:
    """(n,) grades: the highest k whose P(grade >= k) is above its threshold (0 where none is)."""
    passed = cumulative(dist) > np.asarray(thresholds, dtype=float)[None, :]
    k = passed.shape[1]
    highest = k - np.argmax(passed[:, ::-1], axis=1)
    return np.where(passed.any(axis=1), highest, 0)


def monotone(shares: np.ndarray) -> np.ndarray:
    """Shares of grade >= k made non-increasing in k and kept in [0, 1]."""
    return np.minimum.accumulate(np.clip(np.asarray(shares, dtype=float), 0.0, 1.0))


def looks_like(known_scores: np.ndarray, target_scores: np.ndarray) -> dict:
    """`auto`'s check: how often a known pair's judge score is above a pair to judge's (AUC, 0.5 for a random
    sample), its one-sided Mann-Whitney p, and the kind it points to."""
    from scipy.stats import mannwhitneyu

    known_scores, target_scores = np.asarray(known_scores, float), np.asarray(target_scores, float)
    if len(known_scores) < 2 or len(target_scores) < 2:
        return {"auc": None, "p": None, "kind": "sample"}
    test = mannwhitneyu(known_scores, target_scores, alternative="greater")
    auc = float(test.statistic) / (len(known_scores) * len(target_scores))
    kind = "pool" if auc >= POOL_AUC and test.pvalue < POOL_P else "sample"
    return {"auc": round(auc, 3), "p": float(test.pvalue), "kind": kind}


def sample_shares(known_grades: np.ndarray, known_dist: np.ndarray, target_dist: np.ndarray, k: int,
                  known_queries: Sequence[str] = (), target_queries: Sequence[str] = (), seed: int = 0,
                  level: float = LEVEL) -> dict:
    """Shares of grade >= k of the pairs to judge when the known are a random sample of them: prediction-powered
    from the judge's P(grade >= k) (`known_dist` scored as the pairs to judge are, without the pair's own judgment;
    the queries and seed are not needed: `ESTIMATORS`' common signature)."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    y = np.asarray(known_grades, dtype=int)
    fk, ft = cumulative(known_dist), cumulative(target_dist)
    point, low, high = [], [], []
    for b in range(1, k):
        yb = (y >= b).astype(float)
        point.append(float(np.ravel(ppi_mean_pointestimate(yb, fk[:, b - 1], ft[:, b - 1]))[0]))
        lo, hi = ppi_mean_ci(yb, fk[:, b - 1], ft[:, b - 1], alpha=1 - level)
        low.append(float(np.ravel(lo)[0]))
        high.append(float(np.ravel(hi)[0]))
    return {"method": "prediction-powered (known sample + the judge's P(grade >= k))",
            "at_least": monotone(np.array(point)).tolist(), "low": np.clip(low, 0, 1).tolist(),
            "high": np.clip(high, 0, 1).tolist()}


def label_shift_shares(train_shares: Sequence[float], target_dist: np.ndarray, queries: Sequence[str], seed: int = 0,
                       level: float = LEVEL) -> dict:
    """Shares of grade >= k of the pairs to judge under label shift from the training collection (reported beside a
    pool's estimate, `recalibrated_shares`): EM prior adjustment of the judge's distributions `target_dist`
    (calibrated on a collection with grade shares `train_shares`), the interval from `BOOTSTRAP` draws of the pairs
    by query."""
    from quapy.method.aggregative import EMQ  # QuaPy takes seconds to import: only here

    prior = np.asarray(train_shares, dtype=float)
    d = np.asarray(target_dist, dtype=float)

    def at_least(rows: np.ndarray) -> np.ndarray:
        prevalence, _ = EMQ.EM(prior, rows)
        return cumulative(np.asarray(prevalence)[None, :])[0]

    point = at_least(d)
    names = sorted(set(queries))
    members = [np.flatnonzero(np.asarray(queries) == q) for q in names]
    rng = np.random.default_rng(seed)
    draws = np.array([at_least(d[np.concatenate([members[i] for i in rng.integers(0, len(names), len(names))])])
                      for _ in range(BOOTSTRAP)])
    tail = (1 - level) / 2
    return {"method": "EM prior adjustment (Saerens et al. 2002) under label shift from the training collection",
            "at_least": monotone(point).tolist(), "low": np.quantile(draws, tail, axis=0).tolist(),
            "high": np.quantile(draws, 1 - tail, axis=0).tolist()}


PLATT_PENALTY = 5.0  # L2 weight pulling a boundary's recalibration towards the judge's own (slope 1, intercept 0)


def recalibration(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of a logistic map from the logit of the judge's P(grade >= k) `p` to the outcome `y`
    (1[grade >= k]) on the known pairs (Platt 1999), shrunk towards the judge's own map by `PLATT_PENALTY`."""
    from scipy.optimize import minimize
    from scipy.special import expit

    x = _logit(p)
    y = np.asarray(y, dtype=float)

    def loss(w):
        z = w[0] * x + w[1]
        q = expit(z)
        value = float(np.sum(np.logaddexp(0.0, z) - y * z)) + PLATT_PENALTY * ((w[0] - 1.0) ** 2 + w[1] ** 2)
        r = q - y
        return value, np.array([float(r @ x) + 2 * PLATT_PENALTY * (w[0] - 1.0),
                                float(r.sum()) + 2 * PLATT_PENALTY * w[1]])

    w = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B").x
    return float(w[0]), float(w[1])


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(q) - np.log1p(-q)


def recalibrated_mean(known_grades: np.ndarray, known_cum: np.ndarray, target_cum: np.ndarray) -> np.ndarray:
    """(K-1,) each boundary's share of the pairs to judge: the mean of the judge's P(grade >= k) recalibrated on the
    known pairs (`recalibration`); a boundary the known all pass or all fail keeps the judge's own mean."""
    from scipy.special import expit

    out = []
    for b in range(known_cum.shape[1]):
        y = (known_grades >= b + 1).astype(float)
        if y.min() == y.max():
            out.append(float(target_cum[:, b].mean()))
            continue
        slope, intercept = recalibration(known_cum[:, b], y)
        out.append(float(expit(slope * _logit(target_cum[:, b]) + intercept).mean()))
    return monotone(np.array(out))


def recalibrated_shares(known_grades: np.ndarray, known_dist: np.ndarray, target_dist: np.ndarray, k: int,
                        known_queries: Sequence[str], target_queries: Sequence[str], seed: int = 0,
                        level: float = LEVEL) -> dict:
    """Shares of grade >= k of the pairs to judge when the known are a pool: under covariate shift. A pool is chosen
    by the systems' ranks, not by the grade, so P(grade | the judge's evidence) holds in the pool and the holes
    alike, while P(evidence | grade), what label shift keeps, does not (the holes sit lower). Each boundary's
    P(grade >= k) is recalibrated on the known pool (`recalibration`) and averaged over the pairs to judge
    (probabilistic classify-and-count, Bella et al. 2010); the interval from `BOOTSTRAP` draws of the queries (their
    known and their pairs to judge together)."""
    y = np.asarray(known_grades, dtype=int)
    fk, ft = cumulative(known_dist), cumulative(target_dist)
    point = recalibrated_mean(y, fk, ft)
    kq, tq = np.asarray(known_queries), np.asarray(target_queries)
    names = sorted(set(kq.tolist()) | set(tq.tolist()))
    km = [np.flatnonzero(kq == q) for q in names]
    tm = [np.flatnonzero(tq == q) for q in names]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BOOTSTRAP):
        pick = rng.integers(0, len(names), len(names))
        ki, ti = np.concatenate([km[i] for i in pick]), np.concatenate([tm[i] for i in pick])
        if len(ki) and len(ti):
            draws.append(recalibrated_mean(y[ki], fk[ki], ft[ti]))
    tail = (1 - level) / 2
    draws_ = np.array(draws) if draws else point[None, :]
    return {"method": "the judge recalibrated on the known pool, averaged over the pairs to judge (covariate shift)",
            "at_least": point.tolist(), "low": np.minimum(np.quantile(draws_, tail, axis=0), point).tolist(),
            "high": np.maximum(np.quantile(draws_, 1 - tail, axis=0), point).tolist()}


def cuts(kind: str, grades: int) -> bool:
    """Whether the pairs to judge are cut at the estimated shares when the known are `kind` on a scale of `grades`
    (`CUT_KINDS`; otherwise the compiled thresholds stand and the estimate is reported)."""
    return kind in CUT_KINDS and grades >= CUT_KINDS[kind]


ESTIMATORS = {"sample": sample_shares, "pool": recalibrated_shares}  # what the known judgments are -> the estimate


def grade_shares(at_least: Sequence[float]) -> list[float]:
    """Each grade's share from the shares of grade >= k (k = 1..K-1)."""
    ge = np.concatenate([[1.0], np.asarray(at_least, dtype=float), [0.0]])
    return (ge[:-1] - ge[1:]).tolist()


OFFSETS = np.round(np.linspace(-1.0, 1.0, 21), 2)  # the grid of a boundary's offset on the log-odds of its share
SWEEPS = 2


def shifted_shares(at_least: Sequence[float] | np.ndarray, offsets: Sequence[float] | np.ndarray) -> np.ndarray:
    """Shares of grade >= k moved by `offsets` on their log-odds (the cut's learned lean), kept monotone."""
    from scipy.special import expit, logit

    p = np.clip(np.asarray(at_least, dtype=float), 1e-4, 1 - 1e-4)
    return monotone(expit(logit(p) + np.asarray(offsets, dtype=float)))


def share_offsets(dist: np.ndarray, gold: np.ndarray, groups: np.ndarray, k: int, score) -> tuple[np.ndarray, float]:
    """(K-1 offsets, the agreement they give): where, on the log-odds of each boundary's share, the cut should fall
    against the true share to maximise `score` (gold, predicted, k), learned on labelled out-of-fold distributions
    `dist`: each group's rows (one simulated set of holes) cut at its own true shares moved by the offsets, by
    coordinate ascent over `OFFSETS`. An imperfect judge's best cut need not give the true shares: a rare grade is
    best called a little less often than it occurs."""
    gold = np.asarray(gold, dtype=int)
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    truth = [cumulative((np.bincount(gold[m], minlength=k) / len(m))[None, :])[0] for m in members]

    def value(offsets: np.ndarray) -> float:
        pred = np.zeros(len(gold), dtype=int)
        for m, t in zip(members, truth):
            pred[m] = cut_cumulative(dist[m], cumulative_thresholds(dist[m], shifted_shares(t, offsets)))
        return float(score(gold, pred, k))

    offsets = np.zeros(k - 1)
    best = value(offsets)
    for _ in range(SWEEPS if k > 2 else 1):
        for b in range(k - 1):
            for o in OFFSETS:
                trial = offsets.copy()
                trial[b] = o
                v = value(trial)
                if v > best + 1e-9:
                    best, offsets = v, trial
    return offsets, best
