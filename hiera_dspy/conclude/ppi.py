"""Prediction-powered inference over per-query metric values: a system's mean metric and the difference of two
systems, from machine labels on every query and human labels on a random sample of queries.

PPI (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382, 2023,
arXiv:2301.09633) corrects the mean of the machine's values by the mean human-minus-machine difference on the sample;
PPI++ (Angelopoulos, Duchi and Zrnic, arXiv:2311.01453) scales the machine's part by a tuned `lam`. Oosterhuis et al.
("Reliable confidence intervals for information retrieval evaluation using generative AI", KDD 2024,
arXiv:2407.02464) apply it to per-query IR metrics: a query is the unit, its metric under machine labels is `Yhat`,
under human labels `Y`. A difference of two systems' per-query values is itself a per-query value, so pairwise
differences (paired) use the same estimators.

The estimand (`estimand="benchmark"`, the default) is the benchmark's own mean over its N queries, a finite
population: PPI++ with the unsampled queries as ppi_py's unlabeled set is then Cochran's regression estimator; by
default its slope is 1 (the difference estimator, plain PPI over the benchmark's queries), and its finite-population
variance, the rule of three for a residual with no spread and clipping to the metric's range are
`hiera_dspy.conclude.finite`. ppi_py computes the point
estimates and tunes lam. `estimand="superpopulation"` keeps the intervals shipped before 2026-12-03: ppi_py's
`ppi_mean_ci` (the mean of a population the queries stand for) widened into a Student-t interval (`t_factor`),
lam tuned from 3 sampled queries on, no clipping; it is too wide for the benchmark's mean and gives a zero-width
interval when the sampled human values have no spread (docs/conclusions.md measures both). Every p-value of pairs is
Holm-adjusted (statsmodels). Pure functions: arrays in, numbers out, no I/O.

How many sampled queries the normal approximation needs is `min_queries`: Cochran's rule as refined by Sugden, Smith
and Jones ("Cochran's rule for simple random sampling", JRSS B 62, 2000): n > 28 + 25 g^2, g a skewness over all N
queries, not the sample's (which reads near 0 exactly in the samples that fail). `min_queries` reads the machine's
values; the filled benchmark's conclusions give `estimate` the plan's figure instead, the skewness of the
human-minus-machine residual the judge's probabilities predict (`hiera_dspy.conclude.sample_size.predicted_n_min`).

Example:
    >>> e = estimate(y=[0.5, 0.7, 0.2], yhat=[0.4, 0.7, 0.1], yhat_unlabeled=[0.3, 0.6, 0.5, 0.2])  # doctest: +SKIP
    >>> e.ppi, e.ci                                                                                 # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np

from hiera_dspy.conclude import finite
from hiera_dspy.conclude.finite import Columns, min_queries_columns, tuned_lams
from hiera_dspy.conclude.sample_size import METRIC_RANGE, more_queries
from hiera_dspy.errors import HieraError
from hiera_dspy.metrics.significance import holm

ESTIMANDS = ("benchmark", "superpopulation")
FEW = "fewer than 2 sampled queries are decided: a confidence interval needs the spread of the human labels over " \
      "at least 2 queries (one query shows no spread, and ppi_py would return a zero-width interval)"
EXACT = "every query is in the decided sample: the value is the benchmark's exact mean, no interval needed"
NO_HOLES = "no hole can change this value on any query: it is the benchmark's exact value, no interval needed"
KNOWN = ("every query whose value a hole can change is decided and the others have no holes: the value is exact, "
         "no interval needed")
SAME = "the two runs rank the same documents in the same order on every query: their difference is exactly 0"


@dataclass(frozen=True)
class Estimate:
    """One mean (a system's metric, or a difference of two systems) from machine and human per-query values.

    `machine`: the machine labels' mean over every query; `ppi`, `ci`: the PPI++ point estimate and interval;
    `human_only`, `human_only_ci`: the sampled queries' human mean and Student-t interval; `n`: sampled
    (decided) queries; `N`: every query; `lam`: the PPI++ power-tuning weight used (ppi_py's parametrisation);
    `n_min`: the sampled queries the normal approximation needs (Cochran's rule: the caller's figure for all N, by
    default `min_queries` of the machine's values over all N, or the sample's own residuals' if larger);
    `note`: why a field is None; `estimand`: "benchmark" (the mean over the N queries) or "superpopulation";
    `rule`: which rule gave the interval ("regression", "difference", "range", `hiera_dspy.conclude.finite`);
    `sd`: the residual standard deviation behind it over the queries with holes (standard error
    holes / N * sqrt((1 - n / holes) / n) * sd; for planning); `holes`: the queries whose value a hole can change
    (the rest, the certainty stratum, are known exactly; None: all N).
    """
    machine: float | None
    ppi: float | None
    ci: tuple[float, float] | None
    human_only: float | None
    human_only_ci: tuple[float, float] | None
    n: int
    N: int
    lam: float | None = None
    note: str | None = None
    n_min: int | None = None
    estimand: str = "benchmark"
    rule: str | None = None
    sd: float | None = None
    holes: int | None = None

    def to_dict(self) -> dict:
        """JSON-ready fields (tuples as lists)."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def estimate(y, yhat, yhat_unlabeled, level: float = 0.95, lam: float | None = None, tell_lam: bool = True,
             estimand: str = "benchmark", bounds=METRIC_RANGE, tune: bool = False,
             n_min: int | None = None, known=None, strata=None, draw=None, spans=None) -> Estimate:
    """PPI++ estimate and CI of a mean, beside the machine-only and human-only ones.

    Args:
        y: human per-query values of the sampled queries (decided, in sample order).
        yhat: machine per-query values of the same sampled queries, in the same order.
        yhat_unlabeled: machine per-query values of every other query whose value the holes can change.
        level: confidence level of the intervals (0.95: alpha = 0.05).
        lam: PPI++ power tuning (ppi_py's lam); None: the difference estimator for the benchmark's mean (slope 1,
            `hiera_dspy.conclude.finite`; with `tune`, PPI++'s tuned lam where its rules allow) and the tuned lam for
            the superpopulation; 1 is ppi_py's plain PPI, 0 the human sample alone.
        tell_lam: (superpopulation) recompute the tuned lam for `Estimate.lam` (one more ppi_py step).
        estimand: "benchmark" (default; the mean over the N queries) or "superpopulation" (the shipped intervals
            before 2026-12-03).
        bounds: the range of a human value, (0, 1) for a metric; a difference's is (low - high, high - low). None:
            no betting interval and no clipping.
        n_min: Cochran's rule for the queries with holes when the caller has it
            (`hiera_dspy.conclude.sample_size.predicted_n_min`); None: `min_queries` of their machine values.
        known: the values of the certainty stratum (benchmark only): queries no hole can change, whose machine
            value is the human one, sampled or not. `y`, `yhat`, `yhat_unlabeled` are then the domain of the other
            queries, of which the decided ones are a simple random sample given their number (Cochran 1977, section
            2.13; Sarndal, Swensson and Wretman 1992, section 10.3): the mean over all N is (sum of `known` + N_H
            times the domain's estimate) / N, its interval the domain's scaled by N_H / N.
        strata: (each sampled value's stratum, each unlabeled one's): the stratified estimator and variance
            (`hiera_dspy.conclude.finite.stratified`).
        draw: an active sample's (weights of every query, sampled first then unlabeled; which of them no hole can
            change; the sample's planned size): `y` is then the decided first queries of the draw, in draw order,
            `yhat_unlabeled` every other query (with holes or not), and the estimate Des Raj's with the confidence
            sequence (`hiera_dspy.conclude.active.columns`).
        spans: (low, high, horizon): every domain query's range of the human value (sampled, then unlabeled;
            `hiera_dspy.conclude.ranges`) and the sample's planned size: the confidence sequence
            (`hiera_dspy.conclude.sequence`) stands beside the t interval instead of the betting interval over the
            metric's range (`hiera_dspy.conclude.finite`).

    Returns:
        An `Estimate`; with fewer than two sampled queries `ci` and `human_only_ci` are None and `note` says why;
        with every query that holes can change decided (or none at all) the value is exact (no interval, `note`
        says so, rule "exact").
    """
    return _estimate(y, yhat, yhat_unlabeled, level, lam, tell_lam, estimand, bounds, tune, n_min, known, strata,
                     draw=draw, spans=spans)[0]


def _estimate(y, yhat, yhat_unlabeled, level, lam, tell_lam, estimand, bounds, tune, n_min, known, strata,
              test: bool = False, draw=None, spans=None) -> tuple[Estimate, float | None]:
    """`estimate`, and with `test` (the benchmark's mean) the two-sided p-value of "the mean is 0" from the same
    computation (`p_value`'s: the domain shifted to that null, which moves every end by as much)."""
    if draw is not None:
        return _active(y, yhat, yhat_unlabeled, level, bounds, n_min, draw)
    y, yhat, unl = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, yhat_unlabeled))
    fixed = np.asarray([] if known is None else known, dtype=float).ravel()
    _check(y, yhat, level, estimand)
    n, big_n_h = len(y), len(y) + len(unl)
    big_n = big_n_h + len(fixed)
    machine = float(np.concatenate([yhat, unl, fixed]).mean()) if big_n else None
    share, base = (big_n_h / big_n, float(fixed.sum()) / big_n) if big_n else (1.0, 0.0)
    if big_n and n == big_n_h:  # nothing left to estimate (ppi_py would divide by 0): the value is known
        value = base + share * (float(y.mean()) if n else 0.0)
        note = EXACT if n and not len(fixed) else NO_HOLES if not n else KNOWN
        return Estimate(machine, value, None, value, None, n, big_n, note=note, estimand=estimand, rule="exact",
                        holes=big_n_h), None
    if n == 0:
        return Estimate(machine, None, None, None, None, 0, big_n, note="no sampled query is decided yet",
                        estimand=estimand, holes=big_n_h), None
    human = base + share * float(y.mean())
    if n < 2:
        point = machine + share * float((y - yhat).mean())  # the difference estimator (slope 1)
        return Estimate(machine, point, None, human, None, n, big_n, lam=1.0 - n / big_n_h, note=FEW,
                        estimand=estimand, rule="difference", holes=big_n_h), None
    if estimand == "superpopulation":
        with np.errstate(invalid="ignore", divide="ignore"):  # no variance: ppi_py's tuning is 0/0, handled below
            return _superpopulation(y, yhat, unl, level, lam, tell_lam, machine, human), None
    null = -base / share if test else 0.0  # the domain's mean when the benchmark's is 0
    moved = None if bounds is None else (bounds[0] - null, bounds[1] - null)
    spans = None if spans is None or bounds is None else \
        (np.asarray(spans[0], dtype=float)[:, None] - null, np.asarray(spans[1], dtype=float)[:, None] - null, spans[2])
    c = finite.columns((y - null)[:, None], (yhat - null)[:, None], (unl - null)[:, None], level, lam, moved,
                       None if n_min is None else [n_min], tune=tune,
                       strata=None if strata is None else tuple(np.asarray(s) for s in strata), spans=spans)
    p = float(c.p[0])
    if math.isnan(p):  # no spread and no range: the mean is known exactly
        p = 1.0 if abs(float(c.ppi[0])) < 1e-12 else 0.0
    c = finite.scaled(c, share, base + share * null)
    return Estimate(machine, float(c.ppi[0]), (float(c.lo[0]), float(c.hi[0])), human,
                    (float(c.human_lo[0]), float(c.human_hi[0])), n, big_n, lam=float(c.lam[0]),
                    n_min=int(c.n_min[0]), estimand=estimand, rule=str(c.rule[0]), sd=float(c.sd[0]),
                    holes=big_n_h), (p if test else None)


def _active(y, yhat, unl, level, bounds, n_min, draw) -> tuple[Estimate, float | None]:
    """`_estimate` of an actively drawn sample (`draw`: weights, certain, planned size; see `estimate`)."""
    from hiera_dspy.conclude import active, sequence

    y, yhat, unl = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, unl))
    weights, sure, horizon = (np.asarray(draw[0], dtype=float), np.asarray(draw[1], dtype=bool), draw[2])
    spans = None if len(draw) < 4 or draw[3] is None else tuple(np.asarray(v, dtype=float)[:, None] for v in draw[3])
    _check(y, yhat, level)
    n, big_n = len(y), len(y) + len(unl)
    machine = float(np.concatenate([yhat, unl]).mean()) if big_n else None
    holes = int((~sure).sum())
    if n == 0:
        return Estimate(machine, None, None, None, None, 0, big_n, note="no sampled query is decided yet",
                        rule="active", holes=holes), None
    if holes == 0 or not (~sure[n:]).any():  # every query a hole can change is decided: exact
        value = float((np.concatenate([y, unl])).mean())
        return Estimate(machine, value, None, float(y.mean()), None, n, big_n,
                        note=NO_HOLES if holes == 0 else KNOWN, rule="exact", holes=holes), None
    c = active.columns(y[:, None], yhat[:, None], unl[:, None], weights, level,
                       (0.0, 1.0) if bounds is None else bounds, None if n_min is None else [n_min], horizon,
                       sure[:, None], spans=spans)
    assert c.p is not None and c.n_min is not None and c.rule is not None and c.sd is not None
    p = float(c.p[0])
    z, _, _ = sequence.increments(y, np.zeros(big_n), np.ones(big_n), list(range(n)), weights, aligned=False)
    human = float(np.clip(z.mean() / big_n, c.human_lo[0], c.human_hi[0]))  # Des Raj's, the human values alone
    return Estimate(machine, float(c.ppi[0]), (float(c.lo[0]), float(c.hi[0])), human,
                    (float(c.human_lo[0]), float(c.human_hi[0])), int(n - sure[:n].sum()), big_n,
                    n_min=int(c.n_min[0]), rule=str(c.rule[0]), sd=float(c.sd[0]), holes=holes), \
        (p if not math.isnan(p) else None)


def _superpopulation(y, yhat, unl, level, lam, tell_lam, machine, human) -> Estimate:
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    n, big_n, alpha = len(y), len(y) + len(unl), 1.0 - level
    used = lam if n >= 3 else 1.0  # tuning needs a spread and a degree of freedom left; else plain PPI
    point = _scalar(ppi_mean_pointestimate(y, yhat, unl, lam=used))
    if math.isnan(point):  # no variance anywhere (e.g. two identical systems): tuning is 0/0, plain PPI is exact
        used = 1.0
        point = _scalar(ppi_mean_pointestimate(y, yhat, unl, lam=used))
    lo, hi = widen(*ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=used), alpha, n, fitted=used is None)
    hlo, hhi = widen(*classical_mean_ci(y, alpha=alpha), alpha, n, fitted=False)
    told = _lam(used, y, yhat, unl) if tell_lam or used is not None else None
    return Estimate(machine, point, (_scalar(lo), _scalar(hi)), human, (_scalar(hlo), _scalar(hhi)), n, big_n,
                    lam=told if tell_lam else used, n_min=min_queries(np.concatenate([yhat, unl])),
                    estimand="superpopulation", rule="superpopulation")


def t_factor(alpha: float, n: int, fitted: bool) -> float:
    """How much wider the Student-t interval with the unbiased variance is than a normal interval with the plug-in
    variance (ppi_py's) at the same level: t_{alpha/2, df} * sqrt(n / df) / z_{alpha/2}, df = n - 1, or n - 2 when lam
    is fitted on the same sample (Cochran 1977, section 7.3: the regression estimator's variance divides by n - 2).
    Needs df >= 1."""
    from scipy.stats import norm, t

    df = n - (2 if fitted else 1)
    if df < 1:
        raise HieraError(f"a t interval needs a degree of freedom: {n} sampled queries, lam "
                         f"{'fitted' if fitted else 'fixed'}")
    return float(t.ppf(1 - alpha / 2, df) * math.sqrt(n / df) / norm.ppf(1 - alpha / 2))


def widen(lo, hi, alpha: float, n: int, fitted: bool):
    """ppi_py's normal interval (centred on the point estimate) widened into the Student-t one (`t_factor`)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * t_factor(alpha, n, fitted)
    return mid - half, mid + half


def min_queries(values) -> int | None:
    """Sampled queries the normal approximation of a mean of `values` needs: the least n with n > 28 + 25 g^2, g the
    sample skewness (scipy, bias-corrected) of the values (Sugden, Smith and Jones, "Cochran's rule for simple random
    sampling", JRSS B 62(4), 2000, refining Cochran 1977, section 2.15). None below 3 values; values with no spread
    give the rule's floor (29): a skewness cannot be seen in them, which does not make them symmetric."""
    from scipy.stats import skew

    v = np.asarray(values, dtype=float).ravel()
    if len(v) < 3:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        g = float(skew(v, bias=False)) if np.ptp(v) > 1e-12 else 0.0
    return int(math.floor(28 + 25 * g * g)) + 1



def estimate_columns(y, yhat, yhat_unlabeled, level: float = 0.95, lam: float | None = None,
                     estimand: str = "benchmark", bounds=None, n_min=None, tune: bool = False) -> Columns:
    """`estimate` for every column of (n, d) arrays (for resampling loops), the same numbers as d separate calls.
    "benchmark": `hiera_dspy.conclude.finite.columns` (`bounds`, `n_min` as there; bounds None: no range rule, no
    clipping).
    "superpopulation" (the intervals shipped before 2026-12-03): PPI++ with one tuned lam per column (ppi_py's
    tuning with `optim_mode="element"`), Student-t widened, the human-only interval as ppi_py's lam = 0 interval at
    the t level; a column without variance gets plain PPI (lam = 1). Needs n >= 2."""
    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    if y.shape[0] < 2:
        raise HieraError(FEW)
    if estimand == "benchmark":
        return finite.columns(y, yhat, unl, level, lam, bounds, n_min, tune)
    if estimand != "superpopulation":
        raise HieraError(f"estimand must be one of {ESTIMANDS}, got {estimand!r}")
    return _superpopulation_columns(y, yhat, unl, level, lam)


def _superpopulation_columns(y, yhat, unl, level, lam) -> Columns:
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    n, alpha = y.shape[0], 1.0 - level
    fitted = lam is None and n >= 3
    with np.errstate(invalid="ignore", divide="ignore"):
        lams = tuned_lams(y, yhat, unl) if fitted else np.full(y.shape[1], 1.0 if lam is None else float(lam))
        plain = np.isnan(lams)
        lams[plain] = 1.0
        point = np.asarray(ppi_mean_pointestimate(y, yhat, unl, lam=lams), dtype=float).ravel()
        lo, hi = (a.ravel() for a in widen(*ppi_mean_ci(y, yhat, unl, lam=lams, alpha=alpha), alpha, n, fitted))
        if fitted and plain.any():  # plain PPI's interval has one more degree of freedom
            cols = np.flatnonzero(plain)
            flo, fhi = widen(*ppi_mean_ci(y[:, cols], yhat[:, cols], unl[:, cols], lam=1, alpha=alpha), alpha, n, False)
            lo[cols], hi[cols] = np.asarray(flo, dtype=float).ravel(), np.asarray(fhi, dtype=float).ravel()
        hlo, hhi = (a.ravel() for a in widen(*ppi_mean_ci(y, yhat, unl, lam=0, alpha=alpha), alpha, n, False))
    return Columns(point, lo, hi, hlo, hhi, lams, min_queries_columns(y - lams * yhat))


def p_value(y, yhat, yhat_unlabeled, null: float = 0.0, lam: float | None = None, estimand: str = "benchmark",
            bounds=METRIC_RANGE, known=None, strata=None) -> float | None:
    """Two-sided p-value of "the mean equals `null`", the test `estimate`'s interval inverts: for the benchmark's
    mean the Student-t test of the finite-population estimate (or, where the betting interval stands beside it, the
    larger of that and the betting p-value, `hiera_dspy.conclude.finite`), over the domain of queries with holes
    when `known` gives the certainty stratum (as `estimate`); for the superpopulation ppi_py's `ppi_mean_pval` (a z
    test) turned into the Student-t test (`t_p_value`). None below 2 queries, or with every query sampled."""
    y, yhat, unl = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, yhat_unlabeled))
    if len(y) < 2 or len(unl) == 0:
        return None
    if estimand == "superpopulation":
        with np.errstate(invalid="ignore", divide="ignore"):
            if lam is None and len(y) >= 3:
                lam = _lam(None, y, yhat, unl)
                fitted = lam is not None and not math.isnan(lam)
                return _p_value(y, yhat, unl, null, lam if fitted else 1.0, fitted)
            return _p_value(y, yhat, unl, null, 1.0 if lam is None else lam, False)
    fixed = np.asarray([] if known is None else known, dtype=float).ravel()
    big_n_h = len(y) + len(unl)
    null = (null * (big_n_h + len(fixed)) - float(fixed.sum())) / big_n_h  # the domain's mean under the null
    shifted = None if bounds is None else (bounds[0] - null, bounds[1] - null)
    c = finite.columns((y - null)[:, None], (yhat - null)[:, None], (unl - null)[:, None], lam=lam, bounds=shifted,
                       strata=None if strata is None else tuple(np.asarray(s) for s in strata))
    p = float(c.p[0])
    if math.isnan(p):  # no spread and no range: the mean is known exactly
        return 1.0 if abs(float(c.ppi[0])) < 1e-12 else 0.0
    return p


def t_p_value(p_z: float, n: int, fitted: bool) -> float:
    """The two-sided Student-t p-value of the statistic whose normal p-value with the plug-in variance is `p_z`
    (the test that `widen`'s interval inverts): |t| = |z| * sqrt(df / n), df as in `t_factor`."""
    from scipy.stats import norm, t

    df = n - (2 if fitted else 1)
    return float(2 * t.sf(norm.isf(p_z / 2) * math.sqrt(df / n), df))


def _p_value(y, yhat, unl, null, lam, fitted) -> float:
    from ppi_py import ppi_mean_pval

    p = _scalar(ppi_mean_pval(y, yhat, unl, null=null, lam=lam))
    if math.isnan(p):
        p, fitted = _scalar(ppi_mean_pval(y, yhat, unl, null=null, lam=1.0)), False
    if not math.isnan(p):
        return t_p_value(p, len(y), fitted)
    from ppi_py import ppi_mean_pointestimate  # no spread at all: the mean is known exactly (two systems alike)

    return 1.0 if abs(_scalar(ppi_mean_pointestimate(y, yhat, unl, lam=1.0)) - null) < 1e-12 else 0.0


@dataclass(frozen=True)
class Difference:
    """System `a` minus system `b` on one measure: the estimate, its two-sided p-value (unadjusted and adjusted
    over every pair), and how many more sampled queries would tell the two apart (`more_queries`)."""
    a: str
    b: str
    measure: str
    estimate: Estimate
    p: float | None
    p_adjusted: float | None = None
    more_queries: int | None = None

    def to_dict(self) -> dict:
        """The summary.json row: a, b, measure, ppi, ci, p (adjusted), then the rest."""
        e = self.estimate
        return {"a": self.a, "b": self.b, "measure": self.measure, "ppi": e.ppi, "ci": list(e.ci) if e.ci else None,
                "p": self.p_adjusted, "p_unadjusted": self.p, "machine": e.machine, "human_only": e.human_only,
                "human_only_ci": list(e.human_only_ci) if e.human_only_ci else None, "n": e.n, "N": e.N,
                "more_queries": self.more_queries, "n_min": e.n_min, "note": e.note, "rule": e.rule,
                "estimand": e.estimand, "sd": e.sd, "holes": e.holes}


@dataclass(frozen=True)
class Values:
    """One system's per-query values on one measure: `human` for the decided sampled queries (in sample order),
    `machine_sampled` for the same queries, `machine_rest` for every other query (same query order in every
    system); `key`, when given, identifies what the system ranks (two systems with equal keys rank the same
    documents on every query, so their difference is exactly 0). `certain_sampled`, `certain_rest` (bool, same
    orders): the queries no hole can change (the certainty stratum, known exactly); `stratum_sampled`,
    `stratum_rest`: a stratified sample's strata (None: a simple random sample)."""
    human: np.ndarray
    machine_sampled: np.ndarray
    machine_rest: np.ndarray
    key: object = None
    certain_sampled: np.ndarray | None = None
    certain_rest: np.ndarray | None = None
    stratum_sampled: np.ndarray | None = None
    stratum_rest: np.ndarray | None = None
    draw: tuple | None = None  # an active sample's (weights sampled then rest, its planned size)
    span: tuple | None = None  # each query's range of the human value (low, high sampled; low, high rest; horizon)

    def minus(self, other: Values) -> Values:
        """The paired per-query difference of two systems; certain where both are."""
        def both(a, b, size: int):
            return None if a is None and b is None else _certain(a, size) & _certain(b, size)

        return Values(self.human - other.human, self.machine_sampled - other.machine_sampled,
                      self.machine_rest - other.machine_rest, None,
                      both(self.certain_sampled, other.certain_sampled, len(self.human)),
                      both(self.certain_rest, other.certain_rest, len(self.machine_rest)),
                      self.stratum_sampled, self.stratum_rest, self.draw,
                      None if self.span is None or other.span is None else
                      (self.span[0] - other.span[1], self.span[1] - other.span[0], self.span[2] - other.span[3],
                       self.span[3] - other.span[2], self.span[4]))

    def split(self) -> dict:
        """`estimate`'s y, yhat, yhat_unlabeled, known, strata and draw: the domain of queries with holes and the
        certainty stratum's values (an active sample: every query, and the draw)."""
        if self.draw is not None:
            sure = np.concatenate([_certain(self.certain_sampled, len(self.human)),
                                   _certain(self.certain_rest, len(self.machine_rest))])
            spans = None if self.span is None else (np.concatenate([self.span[0], self.span[2]]),
                                                    np.concatenate([self.span[1], self.span[3]]))
            return {"y": self.human, "yhat": self.machine_sampled, "yhat_unlabeled": self.machine_rest,
                    "known": None, "strata": None, "draw": (self.draw[0], sure, self.draw[1], spans), "spans": None}
        cs, cr = _certain(self.certain_sampled, len(self.human)), _certain(self.certain_rest, len(self.machine_rest))
        strata = None if self.stratum_sampled is None else (np.asarray(self.stratum_sampled)[~cs],
                                                            np.asarray(self.stratum_rest)[~cr])
        return {"y": self.human[~cs], "yhat": self.machine_sampled[~cs], "yhat_unlabeled": self.machine_rest[~cr],
                "known": np.concatenate([self.machine_sampled[cs], self.machine_rest[cr]]), "strata": strata,
                "draw": None, "spans": None if self.span is None else
                (np.concatenate([self.span[0][~cs], self.span[2][~cr]]),
                 np.concatenate([self.span[1][~cs], self.span[3][~cr]]), self.span[4])}


def _certain(mask, size: int) -> np.ndarray:
    return np.zeros(size, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)


def differences(values: dict[str, Values], measure: str, level: float = 0.95, lam: float | None = None,
                estimand: str = "benchmark", bounds=METRIC_RANGE,
                n_min: dict[tuple[str, str], int] | None = None) -> list[Difference]:
    """Every pair of systems (a before b in the given order), a minus b, with Holm-adjusted p-values.

    The pair's per-query difference is a per-query value (paired by query), so `estimate` and `p_value` apply as
    they are, with the range of a difference (`bounds` low - high to high - low) and the queries certain for both
    as its certainty stratum. Holm's step-down adjustment (Holm
    1979) controls the family-wise error over the pairs; the intervals are per pair (not simultaneous): with k
    pairs, about (1 - level) * k of them miss at the nominal level. `n_min`: (a, b) -> Cochran's rule for all N
    queries, as `estimate` takes it. `more_queries` is planned at each pair's Holm step.
    """
    pair_bounds = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
    out = []
    for a, b in combinations(values, 2):
        va, vb = values[a], values[b]
        parts = va.minus(vb).split()
        if va.key is not None and va.key == vb.key:
            e = _same(parts, level, estimand)
            out.append(Difference(a, b, measure, e, None if e.rule == "exact" else 1.0))
            continue
        e, p = _estimate(parts["y"], parts["yhat"], parts["yhat_unlabeled"], level, lam, True, estimand, pair_bounds,
                         False, (n_min or {}).get((a, b)), parts["known"], parts["strata"],
                         test=estimand == "benchmark", draw=parts["draw"], spans=parts["spans"])
        if estimand != "benchmark" and e.rule != "exact":
            p = p_value(**parts, lam=lam, estimand=estimand, bounds=pair_bounds)
        out.append(Difference(a, b, measure, e, None if e.rule == "exact" or e.ci is None else p))
    adjusted = holm([d.p for d in out])
    steps = holm_steps([d.p for d in out])
    return [Difference(d.a, d.b, d.measure, d.estimate, d.p, q, more_queries(d.estimate, level, step=k))
            for d, q, k in zip(out, adjusted, steps)]


def holm_steps(p_values: list[float | None]) -> list[int]:
    """Each pair's Holm divisor: the p-value ranked i-th smallest of m is tested at alpha / (m - i + 1) (Holm 1979);
    a pair without a p-value gets m (Bonferroni's, the most a step can ask)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    out = [max(m, 1)] * len(p_values)
    for rank, (_, i) in enumerate(present):
        out[i] = m - rank
    return out


def _same(parts: dict, level: float, estimand: str) -> Estimate:
    """Two systems that rank alike: difference 0, known exactly."""
    n = len(parts["y"])
    big_n = n + len(parts["yhat_unlabeled"]) + len(parts["known"] if parts["known"] is not None else ())
    return Estimate(0.0, 0.0, None, 0.0, None, n, big_n, note=SAME, estimand=estimand, rule="exact", sd=0.0)


def _check(y: np.ndarray, yhat: np.ndarray, level: float, estimand: str = "benchmark") -> None:
    if len(y) != len(yhat):
        raise HieraError(f"{len(y)} human values but {len(yhat)} machine values of the sampled queries: they pair up")
    if not 0 < level < 1:
        raise HieraError(f"the confidence level must be between 0 and 1 (e.g. 0.95), got {level}")
    if estimand not in ESTIMANDS:
        raise HieraError(f"estimand must be one of {ESTIMANDS}, got {estimand!r}")


def _lam(used: float | None, y, yhat, unl) -> float | None:
    """The lam ppi_py tuned (recomputed the way ppi_mean_ci does, for the report), or the one given."""
    if used is not None:
        return float(used)
    lam = tuned_lams(y[:, None], yhat[:, None], unl[:, None])[0]
    return None if math.isnan(lam) else float(lam)


def _scalar(x) -> float:
    return float(np.asarray(x, dtype=float).ravel()[0])
