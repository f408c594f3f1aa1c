"""The benchmark's own mean: PPI++ as Cochran's regression estimator over a finite population of N queries.

The estimand of `hiera_dspy.conclude` is the mean of a per-query value over the benchmark's N queries (a finite
population), not the mean of a population the queries stand for. With the unsampled queries as ppi_py's unlabeled
set, ppi_py's PPI++ point estimate is

    theta = lam * mean(x over the N - n unsampled) + mean(y - lam * x over the n sampled)
          = mean(y_s) + b * (mean(x over all N) - mean(x_s)),   b = lam / (1 - f),  f = n / N,

Cochran's regression estimator with slope b ("Sampling Techniques", 3rd ed., Wiley 1977, sections 7.1-7.3). Under a
simple random sample of queries it is unbiased for a fixed b, with variance (1 - f) / n * S^2 of the residual
d = y - b * x over the N queries, estimated without bias by (1 - f) / n * s^2 of d over the sample (divisor n - 1;
n - 2 when b is fitted on the same sample, Cochran's (1 - f) * sum(residual^2) / (n (n - 2))). ppi_py's own variance
treats the N - n unsampled queries as a fresh draw and adds their sampling variance, which the benchmark's mean does
not have: its intervals are too wide for this estimand (by 12-22% at 40 of 400 queries). `columns` computes the
point estimate with ppi_py (`ppi_mean_pointestimate`; with `tune`, its lam tuning too, the variance-optimal
b = cov(x, y) / var(x)) and the variance by Cochran's formula; the quantile is Student's t (scipy).

The slope. By default it is 1: the difference estimator, plain PPI over the benchmark's queries (the machine's mean
over all N plus the mean human-minus-machine gap; ppi_py's lam = 1 - f), exactly unbiased with an exactly unbiased
variance estimate. PPI++'s tuned slope (`tune=True`) is the regression estimator, whose variance estimate runs low in
small samples (Cochran 1977, section 7.3); on MSRD it was no narrower than slope 1 and covered less often
(docs/conclusions.md), so it is an option, used only from `n_min` sampled queries on (Cochran's rule n > 28 + 25 g^2,
g a skewness over all N queries: the caller's figure, by default the machine's values', `min_queries_columns`; never
below 29) and never when the
sampled human values have no spread (ppi_py's tuning is then 0, and the interval the human sample's zero width).

Two guards against intervals that claim more than the sample shows:

- A residual with no spread over the sample (every sampled query shows the same human-minus-machine gap) does not
  show a population without spread: the interval is then the rule of three's (Hanley and Lippman-Hand, JAMA 1983),
  made exact for sampling without replacement: with confidence `level`, at most K of the unsampled queries differ
  from the sampled gap, K the largest count for which a sample of n shows none of them with probability >= 1 -
  `level` (hypergeometric, scipy); the interval runs from the estimate to the most the K most extreme unsampled
  queries could move the mean within the metric's range. `bounds` gives that range.
- Every interval is clipped to `bounds` (a metric's [0, 1], a difference's [-1, 1]), and so is the point estimate:
  the truth lies in the range, so the clipped estimate is never farther from it (the p-value keeps the unclipped
  one).

Pure: arrays in, arrays out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

FLAT = 1e-12  # a spread at or below this is none


@dataclass(frozen=True)
class Columns:
    """Many means at once (one per column): PPI++ point estimates and interval ends, human-only interval ends, the
    lam of each column (ppi_py's parametrisation), the sampled queries its normal approximation needs (`n_min`:
    Cochran's rule for all N queries, the caller's or on the machine's values, or on the sample's residuals if that
    asks more),
    the residual standard deviation behind each interval (`sd`: standard error = sqrt((1 - f) / n) * sd), its
    degrees of freedom, two-sided p-values of a zero mean, and which rule gave each interval (`rule`:
    "regression" with lam tuned, "difference" with the slope fixed to 1, "range" for a residual with no spread)."""
    ppi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    human_lo: np.ndarray
    human_hi: np.ndarray
    lam: np.ndarray | None = None
    n_min: np.ndarray | None = None
    sd: np.ndarray | None = None
    df: np.ndarray | None = None
    p: np.ndarray | None = None
    rule: np.ndarray | None = None


def min_queries_columns(values: np.ndarray) -> np.ndarray:
    """`hiera_dspy.conclude.ppi.min_queries` of every column of an (n, d) array at once (0 below 3 rows)."""
    from scipy.stats import skew

    values = np.asarray(values, dtype=float)
    if values.shape[0] < 3:
        return np.zeros(values.shape[1], dtype=int)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's precision note on nearly constant columns
        g = np.where(np.ptp(values, axis=0) > FLAT, skew(values, axis=0, bias=False), 0.0)
    return (np.floor(28 + 25 * np.nan_to_num(g) ** 2) + 1).astype(int)


def tuned_lams(y: np.ndarray, yhat: np.ndarray, unl: np.ndarray) -> np.ndarray:
    """The per-column lam ppi_py's `ppi_mean_ci(lam=None, lam_optim_mode="element")` tunes (clipped to [0, 1]);
    NaN where a column has no variance."""
    from ppi_py import ppi_mean_pointestimate
    from ppi_py.ppi import _calc_lam_glm

    with np.errstate(invalid="ignore", divide="ignore"):
        theta = ppi_mean_pointestimate(y, yhat, unl, lam=1)
        lam = _calc_lam_glm(y - theta, yhat - theta, unl - theta, np.eye(y.shape[1]), coord=None, clip=True,
                            optim_mode="element")
    return np.asarray(lam, dtype=float).ravel().copy()


@lru_cache(maxsize=256)
def deviants_bound(big_n: int, n: int, level: float) -> int:
    """The most queries, of the N - n unsampled, that can differ from what a simple random sample of n showed on
    every one of its queries, at confidence `level`: the largest K with P(a sample of n from N misses all K) >=
    1 - level (the hypergeometric probability of none, scipy); about 3 N / n at 95% (the rule of three)."""
    from scipy.stats import hypergeom

    ks = np.arange(0, big_n - n + 1)
    none = hypergeom.pmf(0, big_n, ks, n)
    return int(ks[none >= 1 - level - 1e-12].max())


def range_interval(point, resid, slope, unl, bounds, big_n: int, n: int, level: float):
    """The interval of a column whose sampled residuals all equal `resid` (see the module): the K =
    `deviants_bound` unsampled queries that move the mean furthest within `bounds` (the human value's range per
    query), each way. `point`, `resid`, `slope`, the bounds: per column; `unl`: the unsampled queries' machine
    values (N - n, d)."""
    k = deviants_bound(big_n, n, level)
    if k == 0 or unl.shape[0] == 0:
        return np.array(point, dtype=float), np.array(point, dtype=float)
    low, high = bounds
    down = np.sort(np.minimum(low - slope * unl - resid, 0.0), axis=0)[:k].sum(axis=0)
    up = -np.sort(-np.maximum(high - slope * unl - resid, 0.0), axis=0)[:k].sum(axis=0)
    return point + down / big_n, point + up / big_n


def range_p_value(point: float, resid: float, slope: float, unl: np.ndarray, bounds, big_n: int, n: int,
                  null: float = 0.0) -> float:
    """The exact p-value of "the mean equals `null`" for a column whose sampled residuals all equal `resid`: the
    probability that a sample of n misses every one of the fewest unsampled queries that could move the mean from
    the estimate to `null` (hypergeometric, scipy); 0 when no number of them could, 1 when none need to."""
    from scipy.stats import hypergeom

    gap = (null - point) * big_n
    if abs(gap) <= FLAT * big_n:
        return 1.0
    low, high = bounds
    moves = (np.sort(np.minimum(low - slope * unl - resid, 0.0)) if gap < 0
             else -np.sort(-np.maximum(high - slope * unl - resid, 0.0)))
    reach = np.flatnonzero(np.abs(np.cumsum(moves)) >= abs(gap) - FLAT)
    if len(reach) == 0:
        return 0.0
    return float(hypergeom.pmf(0, big_n, int(reach[0]) + 1, n))


def columns(y, yhat, unl, level: float = 0.95, lam: float | None = None, bounds=None, n_min=None,
            tune: bool = False) -> Columns:
    """The benchmark-mean interval of every column of (n, d) arrays (see the module): `y`, `yhat` the sampled
    queries' human and machine values, `unl` the machine values of the N - n others; `lam` fixes ppi_py's lam for
    every column (None: the difference estimator, slope 1; with `tune`, PPI++'s tuned lam where the rules allow);
    `bounds` (low, high), scalars
    or per column, the range of a human value (None: no range rule, no clipping); `n_min`, per column, Cochran's
    rule for all N when the caller has it (the plan's, `hiera_dspy.conclude.plan.predicted_n_min`; None: on the
    machine's values over all N). Needs 2 <= n < N."""
    from ppi_py import ppi_mean_pointestimate
    from scipy.stats import t

    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, unl))
    n, d = y.shape
    big_n = n + unl.shape[0]
    if not 2 <= n < big_n:
        raise ValueError(f"the benchmark-mean interval needs 2 <= n < N sampled queries, got n = {n} of {big_n}")
    f, alpha = n / big_n, 1.0 - level
    n_min = min_queries_columns(np.vstack([yhat, unl])) if n_min is None else np.asarray(n_min)
    if lam is not None:
        lams, fitted = np.full(d, float(lam)), np.zeros(d, dtype=bool)
    else:
        lams = tuned_lams(y, yhat, unl) if n >= 3 and tune else np.full(d, np.nan)
        fitted = tune & np.isfinite(lams) & (n >= n_min) & (np.ptp(y, axis=0) > FLAT)
        lams = np.where(fitted, lams, 1.0 - f)  # slope 1: the difference estimator
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.asarray(ppi_mean_pointestimate(y, yhat, unl, lam=lams), dtype=float).ravel()
    slope = lams / (1.0 - f)
    resid = y - slope * yhat
    df = np.where(fitted, n - 2, n - 1)
    sd = np.sqrt(((resid - resid.mean(axis=0)) ** 2).sum(axis=0) / df)
    quantile = t.ppf(1 - alpha / 2, df)
    half = quantile * math.sqrt((1 - f) / n) * sd
    lo, hi = point - half, point + half
    human = y.mean(axis=0)
    human_half = t.ppf(1 - alpha / 2, n - 1) * math.sqrt((1 - f) / n) * y.std(axis=0, ddof=1)
    human_lo, human_hi = human - human_half, human + human_half
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(sd > FLAT, 2 * t.sf(np.abs(point) / (math.sqrt((1 - f) / n) * sd), df), np.nan)
    rule = np.where(fitted, "regression", "difference").astype(object)
    n_min = np.maximum(n_min, min_queries_columns(resid))  # and what the sample's own residuals show
    if bounds is not None:
        low, high = (np.broadcast_to(np.asarray(b, dtype=float), (d,)) for b in bounds)
        flat = np.ptp(resid, axis=0) <= FLAT
        if flat.any():
            c = np.flatnonzero(flat)
            lo[c], hi[c] = range_interval(point[c], resid[0, c], slope[c], unl[:, c], (low[c], high[c]), big_n, n,
                                          level)
            rule[c] = "range"
            p[c] = [range_p_value(point[j], resid[0, j], slope[j], unl[:, j], (low[j], high[j]), big_n, n)
                    for j in c]
        flat_y = np.ptp(y, axis=0) <= FLAT
        if flat_y.any():
            c = np.flatnonzero(flat_y)
            human_lo[c], human_hi[c] = range_interval(human[c], y[0, c], np.zeros(len(c)), unl[:, c],
                                                      (low[c], high[c]), big_n, n, level)
        point, lo, hi, human_lo, human_hi = (np.clip(a, low, high) for a in (point, lo, hi, human_lo, human_hi))
    return Columns(point, lo, hi, human_lo, human_hi, lams, n_min, sd, df, p, rule)
