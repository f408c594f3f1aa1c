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

Where the t interval is not yet trusted, the betting interval of Waudby-Smith and Ramdas
(`hiera_dspy.conclude.betting`), valid for bounded values sampled without replacement at every n and continuous in
the data, stands beside it (`bounds` gives the human value's range, hence the residual's: [low - max x, high - min x]
over the N queries):

- below `n_min` the interval is the hull of the two (rule "betting");
- from `n_min` on the t interval stands while each side of it is at least 1 / (TRUST + 1) of the betting interval's
  side (the residual's spread is not small against its range); beyond, that side widens continuously to the betting
  one less TRUST times the t half-width (rule "betting"): a sample whose residuals are all within 0.001 of each other
  gets nearly the betting interval (TRUST = 30), as does the flat sample, with no cliff between them (the rule of three's range
  interval, the rule before 2026-12-05, fell from 0.105 to 0.0001 wide when one residual moved by 0.001).

Every interval is clipped to `bounds` (a metric's [0, 1], a difference's [-1, 1]), and so is the point estimate:
the truth lies in the range, so the clipped estimate is never farther from it (the p-value keeps the unclipped
one); a t interval wholly outside the range is replaced by the betting interval, never by [0, 0]. The p-value of a
"betting" interval is the larger of the t test's and the betting one's.

A stratified sample (`strata`: each row's stratum, sampled and unsampled) gets the stratified estimator and its
variance, sum W_h^2 (1 - f_h) s_h^2 / n_h (Cochran 1977, section 5.3), strata with fewer than 2 sampled rows merged
into the next (section 5A.12's collapsed strata), the degrees of freedom Satterthwaite's (section 5.4).

Pure: arrays in, arrays out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from hiera_dspy.conclude import betting, sequence
from hiera_dspy.errors import HieraError

FLAT = 1e-12  # a spread at or below this is none
TRUST = 30  # the t interval stands while the betting side exceeds it by at most TRUST t half-widths


@dataclass(frozen=True)
class Columns:
    """Many means at once (one per column): PPI++ point estimates and interval ends, human-only interval ends, the
    lam of each column (ppi_py's parametrisation), the sampled queries its normal approximation needs (`n_min`:
    Cochran's rule for all N queries, the caller's or on the machine's values, or on the sample's residuals if that
    asks more),
    the residual standard deviation behind each interval (`sd`: standard error = sqrt((1 - f) / n) * sd), its
    degrees of freedom, two-sided p-values of a zero mean, and which rule gave each interval (`rule`:
    "regression" with lam tuned, "difference" with the slope fixed to 1, "betting" where the betting interval set a
    side: below n_min, or a residual whose spread is small against its range)."""
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


def stratified(resid: np.ndarray, sampled: np.ndarray, unsampled: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                     np.ndarray]:
    """(the stratified mean of the residual over all N, its standard error, Satterthwaite's degrees of freedom) per
    column of `resid` (n, d): `sampled` the stratum of each of its rows, `unsampled` of each of the N - n others
    (or, 2-D, per column); strata with fewer than 2 sampled rows merged into the next (the last into the one
    before): Cochran 1977, sections 5.3, 5.4 and 5A.12."""
    sampled, unsampled = np.asarray(sampled), np.asarray(unsampled)
    if sampled.ndim == 2:  # each column its own sample's strata
        return _stratified_columns(resid, sampled, unsampled)
    labels = sorted(set(sampled.tolist()) | set(unsampled.tolist()))
    groups: list[list] = []
    for h in labels:  # collapse: a stratum joins the next until the group has 2 sampled rows
        if groups and np.isin(sampled, groups[-1]).sum() < 2:
            groups[-1].append(h)
        else:
            groups.append([h])
    if len(groups) > 1 and np.isin(sampled, groups[-1]).sum() < 2:
        last = groups.pop()
        groups[-1] += last
    big_n = len(sampled) + len(unsampled)
    mean, var, dof = np.zeros(resid.shape[1]), np.zeros(resid.shape[1]), np.zeros(resid.shape[1])
    for g in groups:
        rows = np.isin(sampled, g)
        n_h, big_n_h = int(rows.sum()), int(rows.sum() + np.isin(unsampled, g).sum())
        w = big_n_h / big_n
        part = resid[rows]
        s2 = part.var(axis=0, ddof=1)
        term = w * w * (1 - n_h / big_n_h) * s2 / n_h
        mean += w * part.mean(axis=0)
        var += term
        dof += term ** 2 / (n_h - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = np.where(dof > 0, var ** 2 / dof, len(sampled) - len(groups))
    return mean, np.sqrt(var), np.maximum(df, 1.0)


def _stratified_columns(resid: np.ndarray, sampled: np.ndarray, unsampled: np.ndarray):
    """`stratified` with each column's own strata (n, d) and (N - n, d): at once where every stratum has 2 sampled
    rows, one column at a time (collapsing) elsewhere."""
    labels = np.unique(np.concatenate([sampled.ravel(), unsampled.ravel()]))
    n, d = resid.shape
    big_n = n + unsampled.shape[0]
    rows = [sampled == h for h in labels]
    counts = np.array([r.sum(axis=0) for r in rows])  # (k, d)
    totals = counts + np.array([(unsampled == h).sum(axis=0) for h in labels])
    fine = ((counts >= 2) | (totals == 0)).all(axis=0)
    mean, var, dof = np.zeros(d), np.zeros(d), np.zeros(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        for r, n_h, big_n_h in zip(rows, counts, totals):
            w = big_n_h / big_n
            m_h = np.where(n_h > 0, (resid * r).sum(axis=0) / n_h, 0.0)
            s2 = np.where(n_h > 1, (((resid - m_h) ** 2) * r).sum(axis=0) / (n_h - 1), 0.0)
            term = np.where(n_h > 0, w * w * (1 - n_h / np.maximum(big_n_h, 1)) * s2 / n_h, 0.0)
            mean += w * m_h
            var += term
            dof += np.where(n_h > 1, term ** 2 / (n_h - 1), 0.0)
        df = np.where(dof > 0, var ** 2 / dof, n - len(labels))
    out = [mean, np.sqrt(var), np.maximum(df, 1.0)]
    for j in np.flatnonzero(~fine):
        one = stratified(resid[:, [j]], sampled[:, j], unsampled[:, j])
        for i in range(3):
            out[i][j] = one[i][0]
    return tuple(out)


def scaled(c: Columns, share, base) -> Columns:
    """The mean over all N of a domain's `Columns` whose other queries (the certainty stratum) are known: base +
    share * each point and interval end, share = N_H / N, base = the known values' sum / N (per column or
    scalars); the rest as they are."""
    def move(a):
        return None if a is None else base + share * a

    return Columns(move(c.ppi), move(c.lo), move(c.hi), move(c.human_lo), move(c.human_hi), c.lam, c.n_min, c.sd,
                   c.df, c.p, c.rule)


def columns(y, yhat, unl, level: float = 0.95, lam: float | None = None, bounds=None, n_min=None,
            tune: bool = False, strata=None, spans=None) -> Columns:
    """The benchmark-mean interval of every column of (n, d) arrays (see the module): `y`, `yhat` the sampled
    queries' human and machine values, rows in the order they were drawn, `unl` the machine values of the N - n
    others; `lam` fixes ppi_py's lam for
    every column (None: the difference estimator, slope 1; with `tune`, PPI++'s tuned lam where the rules allow);
    `bounds` (low, high), scalars
    or per column, the range of a human value (None: no betting interval, no clipping); `n_min`, per column,
    Cochran's rule for all N when the caller has it (the plan's, `hiera_dspy.conclude.sample_size.predicted_n_min`; None:
    on the machine's values over all N); `strata` (each sampled row's stratum, each unsampled one's): the stratified
    estimator (slope 1); `spans` (low, high, horizon): each query's range of the human value, (N, d) each (sampled
    rows first), and the sample's planned size: the interval is the confidence sequence
    (`hiera_dspy.conclude.sequence`, valid after every decided query, no n_min switch; rule "sequence"), its p-value
    the sequence's. Needs 2 <= n < N."""
    from ppi_py import ppi_mean_pointestimate
    from scipy.stats import t

    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, unl))
    n, d = y.shape
    big_n = n + unl.shape[0]
    if not 2 <= n < big_n:
        raise HieraError(f"the benchmark-mean interval needs 2 <= n < N sampled queries, got n = {n} of {big_n}")
    f, alpha = n / big_n, 1.0 - level
    n_min = min_queries_columns(np.vstack([yhat, unl])) if n_min is None else np.asarray(n_min)
    if lam is not None:
        lams, fitted = np.full(d, float(lam)), np.zeros(d, dtype=bool)
    else:
        lams = tuned_lams(y, yhat, unl) if n >= 3 and tune and strata is None else np.full(d, np.nan)
        fitted = tune & np.isfinite(lams) & (n >= n_min) & (np.ptp(y, axis=0) > FLAT)
        lams = np.where(fitted, lams, 1.0 - f)  # slope 1: the difference estimator
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.asarray(ppi_mean_pointestimate(y, yhat, unl, lam=lams), dtype=float).ravel()
    slope = lams / (1.0 - f)
    resid = y - slope * yhat
    df = np.where(fitted, n - 2, n - 1).astype(float)
    sd = np.sqrt(((resid - resid.mean(axis=0)) ** 2).sum(axis=0) / df)
    every = np.vstack([yhat, unl])
    if strata is not None and lam is None and not fitted.any():
        shift, se, df = stratified(resid, *strata)
        point = every.mean(axis=0) + shift
        sd = se / math.sqrt((1 - f) / n)
    half = t.ppf(1 - alpha / 2, df) * math.sqrt((1 - f) / n) * sd
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
        trusted = n >= n_min
        gap = y - yhat  # the slope-1 residual, in [low - max x, high - min x]
        r_low, r_high = low - every.max(axis=0), high - every.min(axis=0)
        base = every.mean(axis=0)
        if spans is None:
            b_lo, b_hi = (base + e for e in betting.interval(gap, big_n, r_low, r_high, level))
        else:  # the confidence sequence over each query's own range
            lo_r, hi_r = np.asarray(spans[0], dtype=float) - every, np.asarray(spans[1], dtype=float) - every
            z, za, zb = sequence.increments(gap, lo_r, hi_r, list(range(n)), np.ones(big_n))
            seen = gap.sum(axis=0)
            possible = (seen + lo_r[n:].sum(axis=0), seen + hi_r[n:].sum(axis=0))
            b_lo, b_hi = (base + e / big_n for e in sequence.interval(z, za, zb, level, spans[2], possible))
        if spans is not None:  # the confidence sequence is the interval: valid after every decided query
            lo, hi, bet = b_lo, b_hi, np.ones(d, dtype=bool)
            point = np.clip(point, lo, hi)  # the interval's point nearest the estimate
            rule[:] = "sequence"
        else:
            lo, hi, bet = _with_betting(point, half, b_lo, b_hi, trusted)
        if bet.any() and spans is None:
            c = np.flatnonzero(bet)
            rule[c] = "betting"
            p[c] = np.fmax(p[c], betting.p_value(gap[:, c], big_n, r_low[c], r_high[c], -base[c], level))
        elif spans is not None:
            p = sequence.p_value(z, za, zb, -every.sum(axis=0), level, spans[2])
        h_lo, h_hi = betting.interval(y, big_n, low, high, level)
        human_lo, human_hi, _ = _with_betting(human, human_half, h_lo, h_hi, trusted)
        point, lo, hi, human_lo, human_hi = (np.clip(a, low, high) for a in (point, lo, hi, human_lo, human_hi))
        lo, hi = _never_empty(lo, hi, *(np.clip(b, low, high) for b in (b_lo, b_hi)), 2 * half, low, high)
        human_lo, human_hi = _never_empty(human_lo, human_hi, *(np.clip(b, low, high) for b in (h_lo, h_hi)),
                                          2 * human_half, low, high)
    return Columns(point, lo, hi, human_lo, human_hi, lams, n_min, sd, df, p, rule)


def _with_betting(point, half, b_lo, b_hi, trusted):
    """(lo, hi, where the betting interval set a side): below n_min the hull of the t and betting intervals; from it
    on each t side widened to the betting side less TRUST t half-widths where that is wider (see the module)."""
    down = np.where(trusted, np.maximum(half, point - b_lo - TRUST * half), np.maximum(half, point - b_lo))
    up = np.where(trusted, np.maximum(half, b_hi - point - TRUST * half), np.maximum(half, b_hi - point))
    return point - down, point + up, (down > half + FLAT) | (up > half + FLAT)


def _never_empty(lo, hi, b_lo, b_hi, width, low, high):
    """A clipped interval that collapsed (a t interval wholly outside the range) replaced by the betting one; if that
    collapsed too (a sample that contradicts the range, which a random one does with probability below 1 - level),
    the t interval's width from the range's nearer end."""
    empty = hi - lo <= FLAT
    lo, hi = np.where(empty, np.minimum(lo, b_lo), lo), np.where(empty, np.maximum(hi, b_hi), hi)
    empty = hi - lo <= FLAT
    width = np.maximum(np.nan_to_num(width), FLAT * 10)
    at_low = np.abs(lo - low) <= np.abs(high - hi)
    lo = np.where(empty & ~at_low, np.maximum(high - width, low), lo)
    hi = np.where(empty & at_low, np.minimum(low + width, high), hi)
    return lo, hi
