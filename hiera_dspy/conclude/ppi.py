"""Prediction-powered inference over per-query metric values: a system's mean metric and the difference of two
systems, from machine labels on every query and human labels on a random sample of queries.

PPI (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382, 2023,
arXiv:2301.09633) corrects the mean of the machine's values by the mean human-minus-machine difference on the sample;
PPI++ (Angelopoulos, Duchi and Zrnic, arXiv:2311.01453) scales the machine's part by a tuned `lam` so the interval is
never wider than the human sample's alone (asymptotically). Oosterhuis et al. ("Reliable confidence intervals for
information retrieval evaluation using generative AI", KDD 2024, arXiv:2407.02464) apply it to per-query IR metrics:
a query is the unit, its metric under machine labels is `Yhat`, under human labels `Y`. A difference of two systems'
per-query values is itself a per-query value, so pairwise differences (paired) use the same estimators.

Every estimator is `ppi_py`'s (`ppi_mean_pointestimate`, `ppi_mean_ci`, `ppi_mean_pval`, `classical_mean_ci`); this
module only arranges arrays, handles the cases they leave undefined (fewer than two sampled queries, no variance)
and adjusts p-values over pairs (Holm, `statsmodels`). Pure functions: arrays in, numbers out, no I/O.

Small samples. ppi_py's intervals are normal (z) intervals with the plug-in (divide-by-n) variance, valid as the
number of sampled queries n grows; a TREC track samples 5-40 queries, and per-query values such as P@10 are discrete
and skewed. Two classical corrections are applied, the way survey sampling treats the same estimator (PPI is the
difference estimator, PPI++ the regression estimator of Cochran, "Sampling Techniques", 3rd ed., Wiley 1977, sections
7.1-7.3): the variance of the human-minus-machine term is estimated without bias (divisor n - 1, or n - 2 when lam
is fitted on the same sample, Cochran's regression-estimator variance) and the quantile is Student's t with those
degrees of freedom (scipy) instead of the normal one. Both are applied by widening ppi_py's interval about its
centre by the ratio of the two quantiles times the variance factor (`t_factor`), so ppi_py computes every interval. The
intervals target the mean over the population the queries stand for (queries as a random sample, as IR
significance tests treat them), with no finite-population correction: for the mean over exactly the benchmark's
queries they are conservative by a factor sqrt(1 - n / N). How many sampled queries the normal approximation needs
at all is `min_queries`: Cochran's rule as refined by Sugden, Smith and Jones ("Cochran's rule for simple random
sampling", JRSS B 62, 2000): n > 28 + 25 g^2, g the skewness of the values whose mean is estimated (here the
human-minus-lam-machine values of the sampled queries). A percentile or BCa bootstrap (ppi_py's `ppboot`, scipy)
and a studentized bootstrap of the rectifier were measured and cover less often than the t interval at these sample
sizes (docs/conclusions.md).

Example:
    >>> e = estimate(y=[0.5, 0.7, 0.2], yhat=[0.4, 0.7, 0.1], yhat_unlabeled=[0.3, 0.6, 0.5, 0.2])  # doctest: +SKIP
    >>> e.ppi, e.ci                                                                                 # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np

FEW = "fewer than 2 sampled queries are decided: a confidence interval needs the spread of the human labels over " \
      "at least 2 queries (one query shows no spread, and ppi_py would return a zero-width interval)"


@dataclass(frozen=True)
class Estimate:
    """One mean (a system's metric, or a difference of two systems) from machine and human per-query values.

    `machine`: the machine labels' mean over every query; `ppi`, `ci`: the PPI++ point estimate and interval;
    `human_only`, `human_only_ci`: the sampled queries' human mean and Student-t interval; `n`: sampled
    (decided) queries; `N`: every query; `lam`: the PPI++ power-tuning weight used; `n_min`: the sampled queries
    the normal approximation needs (`min_queries`; None below 3); `note`: why a field is None.
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

    def to_dict(self) -> dict:
        """JSON-ready fields (tuples as lists)."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def estimate(y, yhat, yhat_unlabeled, level: float = 0.95, lam: float | None = None, w=None,
             w_unlabeled=None, tell_lam: bool = True) -> Estimate:
    """PPI++ estimate and CI of a mean, beside the machine-only and human-only ones.

    Args:
        y: human per-query values of the sampled queries.
        yhat: machine per-query values of the same sampled queries, in the same order.
        yhat_unlabeled: machine per-query values of every other query.
        level: confidence level of the intervals (0.95: alpha = 0.05).
        lam: PPI++ power tuning; None estimates the optimal value from the data (ppi_py's default), 1 is plain PPI,
            0 the human sample alone.
        w, w_unlabeled: sample weights of the sampled and the other queries (inverse-probability weights of active
            sampling; None: all ones).
        tell_lam: recompute the tuned lam for `Estimate.lam` (one more ppi_py step; off in resampling loops).

    Returns:
        An `Estimate`; with fewer than two sampled queries `ci` and `human_only_ci` are None and `note` says why. The
        intervals are Student-t (see the module's "Small samples"); lam is tuned only from 3 sampled queries on (with
        2, plain PPI).
    """
    with np.errstate(invalid="ignore", divide="ignore"):  # no variance: ppi_py's tuning is 0/0, handled below
        return _estimate(y, yhat, yhat_unlabeled, level, lam, w, w_unlabeled, tell_lam)


def _estimate(y, yhat, yhat_unlabeled, level, lam, w, w_unlabeled, tell_lam) -> Estimate:
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    y, yhat, unl = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, yhat_unlabeled))
    _check(y, yhat, level)
    n, big_n = len(y), len(y) + len(unl)
    machine = float(np.concatenate([yhat, unl]).mean()) if big_n else None
    if n == 0:
        return Estimate(machine, None, None, None, None, 0, big_n, note="no sampled query is decided yet")
    alpha = 1.0 - level
    kw = {"w": _weights(w), "w_unlabeled": _weights(w_unlabeled)}
    used = lam if n >= 3 else 1.0  # tuning needs a spread and a degree of freedom left; else plain PPI
    point = _scalar(ppi_mean_pointestimate(y, yhat, unl, lam=used, **kw))
    if math.isnan(point):  # no variance anywhere (e.g. two identical systems): tuning is 0/0, plain PPI is exact
        used = 1.0
        point = _scalar(ppi_mean_pointestimate(y, yhat, unl, lam=used, **kw))
    human = float(np.average(y, weights=kw["w"]))
    if n < 2:
        return Estimate(machine, point, None, human, None, n, big_n, lam=used, note=FEW)
    lo, hi = widen(*ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=used, **kw), alpha, n, fitted=used is None)
    hlo, hhi = widen(*classical_mean_ci(y, w=kw["w"], alpha=alpha), alpha, n, fitted=False)
    told = _lam(used, y, yhat, unl, kw) if tell_lam or used is not None else None
    return Estimate(machine, point, (_scalar(lo), _scalar(hi)), human, (_scalar(hlo), _scalar(hhi)), n, big_n,
                    lam=told if tell_lam else used, n_min=None if told is None else min_queries(y - told * yhat))


def t_factor(alpha: float, n: int, fitted: bool) -> float:
    """How much wider the Student-t interval with the unbiased variance is than a normal interval with the plug-in
    variance (ppi_py's) at the same level: t_{alpha/2, df} * sqrt(n / df) / z_{alpha/2}, df = n - 1, or n - 2 when lam
    is fitted on the same sample (Cochran 1977, section 7.3: the regression estimator's variance divides by n - 2).
    Needs df >= 1."""
    from scipy.stats import norm, t

    df = n - (2 if fitted else 1)
    if df < 1:
        raise ValueError(f"a t interval needs a degree of freedom: {n} sampled queries, lam {'fitted' if fitted else 'fixed'}")
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


@dataclass(frozen=True)
class Columns:
    """Many means at once (one per column): PPI++ point estimates and interval ends, human-only interval ends, the
    lam of each column and the sampled queries its normal approximation needs (`min_queries`)."""
    ppi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    human_lo: np.ndarray
    human_hi: np.ndarray
    lam: np.ndarray | None = None
    n_min: np.ndarray | None = None


def estimate_columns(y, yhat, yhat_unlabeled, level: float = 0.95, lam: float | None = None) -> Columns:
    """`estimate` for every column of (n, d) arrays (for resampling loops): PPI++ with one tuned lam per column
    (ppi_py's tuning with `optim_mode="element"`, the same numbers as d separate calls), Student-t intervals as in
    `estimate`, and the human-only interval as ppi_py's lam = 0 interval at the t level (the Student-t interval of the
    human values). A column without variance, where tuning is 0/0, gets plain PPI (lam = 1). `lam` fixes it for every
    column instead. Needs n >= 2 (with 2, plain PPI)."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    n = y.shape[0]
    if n < 2:
        raise ValueError(FEW)
    alpha = 1.0 - level
    fitted = lam is None and n >= 3
    with np.errstate(invalid="ignore", divide="ignore"):
        lams = _lams(y, yhat, unl) if fitted else np.full(y.shape[1], 1.0 if lam is None else float(lam))
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


def min_queries_columns(values: np.ndarray) -> np.ndarray:
    """`min_queries` of every column of an (n, d) array at once (0 below 3 rows)."""
    from scipy.stats import skew

    if values.shape[0] < 3:
        return np.zeros(values.shape[1], dtype=int)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(np.ptp(values, axis=0) > 1e-12, skew(values, axis=0, bias=False), 0.0)
    return (np.floor(28 + 25 * np.nan_to_num(g) ** 2) + 1).astype(int)


def _lams(y: np.ndarray, yhat: np.ndarray, unl: np.ndarray) -> np.ndarray:
    """The per-column lam ppi_py's `ppi_mean_ci(lam=None, lam_optim_mode="element")` tunes (clipped to [0, 1]);
    NaN where a column has no variance."""
    from ppi_py import ppi_mean_pointestimate
    from ppi_py.ppi import _calc_lam_glm

    theta = ppi_mean_pointestimate(y, yhat, unl, lam=1)
    lam = _calc_lam_glm(y - theta, yhat - theta, unl - theta, np.eye(y.shape[1]), coord=None, clip=True,
                        optim_mode="element")
    return np.asarray(lam, dtype=float).ravel().copy()


def p_value(y, yhat, yhat_unlabeled, null: float = 0.0, lam: float | None = None, w=None,
            w_unlabeled=None) -> float | None:
    """Two-sided PPI++ p-value of "the mean equals `null`": ppi_py's `ppi_mean_pval` (a z test with the plug-in
    variance) turned into the Student-t test that matches `estimate`'s interval (`t_p_value`); lam is tuned as there
    (clipped to [0, 1]; plain PPI below 3 queries). None below 2 queries."""
    y, yhat, unl = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, yhat_unlabeled))
    if len(y) < 2:
        return None
    kw = {"w": _weights(w), "w_unlabeled": _weights(w_unlabeled)}
    with np.errstate(invalid="ignore", divide="ignore"):
        if lam is None and len(y) >= 3:
            lam = _lam(None, y, yhat, unl, kw)
            fitted = lam is not None and not math.isnan(lam)
            return _p_value(y, yhat, unl, null, lam if fitted else 1.0, kw, fitted)
        return _p_value(y, yhat, unl, null, 1.0 if lam is None else lam, kw, False)


def t_p_value(p_z: float, n: int, fitted: bool) -> float:
    """The two-sided Student-t p-value of the statistic whose normal p-value with the plug-in variance is `p_z`
    (the test that `widen`'s interval inverts): |t| = |z| * sqrt(df / n), df as in `t_factor`."""
    from scipy.stats import norm, t

    df = n - (2 if fitted else 1)
    return float(2 * t.sf(norm.isf(p_z / 2) * math.sqrt(df / n), df))


def _p_value(y, yhat, unl, null, lam, kw, fitted) -> float:
    from ppi_py import ppi_mean_pval

    p = _scalar(ppi_mean_pval(y, yhat, unl, null=null, lam=lam, **kw))
    if math.isnan(p):
        p, fitted = _scalar(ppi_mean_pval(y, yhat, unl, null=null, lam=1.0, **kw)), False
    if not math.isnan(p):
        return t_p_value(p, len(y), fitted)
    from ppi_py import ppi_mean_pointestimate  # no spread at all: the mean is known exactly (two systems alike)

    return 1.0 if abs(_scalar(ppi_mean_pointestimate(y, yhat, unl, lam=1.0, **kw)) - null) < 1e-12 else 0.0


@dataclass(frozen=True)
class Difference:
    """System `a` minus system `b` on one measure: the estimate, its two-sided p-value (unadjusted and adjusted
    over every pair), and roughly how many more sampled queries would separate the two."""
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
                "more_queries": self.more_queries, "n_min": e.n_min, "note": e.note}


@dataclass(frozen=True)
class Values:
    """One system's per-query values on one measure: `human` for the sampled queries (in sample order),
    `machine_sampled` for the same queries, `machine_rest` for every other query (same query order in every
    system)."""
    human: np.ndarray
    machine_sampled: np.ndarray
    machine_rest: np.ndarray


def differences(values: dict[str, Values], measure: str, level: float = 0.95, lam: float | None = None,
                w=None, w_unlabeled=None) -> list[Difference]:
    """Every pair of systems (a before b in the given order), a minus b, with Holm-adjusted p-values.

    The pair's per-query difference is a per-query value (paired by query), so `estimate` and `p_value` apply as
    they are. Holm's step-down adjustment (Holm 1979) controls the family-wise error over the pairs; the intervals
    are per pair (not simultaneous).
    """
    out = []
    for a, b in combinations(values, 2):
        va, vb = values[a], values[b]
        args = (va.human - vb.human, va.machine_sampled - vb.machine_sampled, va.machine_rest - vb.machine_rest)
        e = estimate(*args, level=level, lam=lam, w=w, w_unlabeled=w_unlabeled)
        out.append(Difference(a, b, measure, e, p_value(*args, lam=lam, w=w, w_unlabeled=w_unlabeled)))
    adjusted = holm([d.p for d in out])
    return [Difference(d.a, d.b, d.measure, d.estimate, d.p, q, more_queries(d.estimate)) for d, q in
            zip(out, adjusted)]


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (statsmodels' `multipletests(method="holm")`); None stays None and is not counted."""
    from statsmodels.stats.multitest import multipletests

    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if present:
        adjusted = multipletests([p_values[i] for i in present], method="holm")[1]
        for i, q in zip(present, adjusted):
            out[i] = float(q)
    return out


def more_queries(e: Estimate) -> int | None:
    """Roughly how many more sampled queries would make the interval exclude zero: 0 if it already does, None if
    the estimate is zero or unknown, else n * (half-width / |estimate|)^2 - n, assuming the half-width shrinks as
    1 / sqrt(n) (the human-minus-machine term dominates) and the estimate stays where it is. A planning figure,
    not a guarantee; it may exceed the queries there are (then no sample of this benchmark would separate them)."""
    if e.ci is None or e.ppi is None:
        return None
    lo, hi = e.ci
    if lo > 0 or hi < 0:
        return 0
    if abs(e.ppi) < 1e-12:
        return None
    half = (hi - lo) / 2
    return max(1, math.ceil(e.n * (half / abs(e.ppi)) ** 2) - e.n)


def _check(y: np.ndarray, yhat: np.ndarray, level: float) -> None:
    if len(y) != len(yhat):
        raise ValueError(f"{len(y)} human values but {len(yhat)} machine values of the sampled queries: they pair up")
    if not 0 < level < 1:
        raise ValueError(f"the confidence level must be between 0 and 1 (e.g. 0.95), got {level}")


def _weights(w) -> np.ndarray | None:
    return None if w is None else np.asarray(w, dtype=float).ravel()


def _lam(used: float | None, y, yhat, unl, kw) -> float | None:
    """The lam ppi_py tuned (recomputed the way ppi_mean_ci does, for the report), or the one given."""
    if used is not None:
        return float(used)
    try:
        from ppi_py import ppi_mean_pointestimate
        from ppi_py.ppi import _calc_lam_glm
        from ppi_py.utils import construct_weight_vector, reshape_to_2d
    except ImportError:  # a private helper of ppi_py moved: the estimate stands, only the report of lam is lost
        return None

    y2, yh2, u2 = reshape_to_2d(y), reshape_to_2d(yhat), reshape_to_2d(unl)
    w = construct_weight_vector(len(y), kw["w"], vectorized=True)
    wu = construct_weight_vector(len(unl), kw["w_unlabeled"], vectorized=True)
    theta = ppi_mean_pointestimate(y2, yh2, u2, lam=1, w=w, w_unlabeled=wu)
    lam = _calc_lam_glm(w * (y2 - theta), w * (yh2 - theta), wu * (u2 - theta), np.eye(1), coord=None, clip=True)
    return _scalar(lam)


def _scalar(x) -> float:
    return float(np.asarray(x, dtype=float).ravel()[0])
