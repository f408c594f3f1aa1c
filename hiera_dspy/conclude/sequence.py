"""A prediction-powered confidence sequence for the benchmark's own mean: valid after every decided query at once,
under a random or an active (unequal-probability) draw of the human sample, without replacement.

The estimand is the mean over the benchmark's N queries of a per-query value y (a system's metric, or the
difference of two systems'); the machine's value x is known on every query, so the mean is mean(x) + R / N with
R = sum over the N queries of the residual r = y - x, of which a person labels the queries drawn one at a time.

**The draw.** At step t the next query is drawn from the R_t queries not drawn yet with probability

    q_t(i) = (1 - floor) * w_i / sum_{j in R_t} w_j + floor / |R_t|,

`w` fixed before anyone labels (the judge's uncertainty about each query: Zrnic and Candes, "Active statistical
inference", ICML 2024, label with probability growing with the model's uncertainty, mixed with a floor so every
query can be drawn); w all equal is the simple random sample.

**The martingale.** Des Raj's estimator of the total ("Some estimators in sampling with varying probabilities
without replacement", JASA 51, 1956): z_t = S_{t-1} + r_{I_t} / q_t(I_t), S_{t-1} the sum of the residuals drawn
before t. Given the past, E[z_t] = S_{t-1} + sum_{i in R_t} r_i = R whatever the probabilities: every z_t has the
same conditional mean, the unknown total. With a known range of each query's residual, [lo_i, hi_i] (a metric's
[0, 1] less the machine's value, or narrower where few holes can change the query), z_t lies in a range known
before it is drawn: a_t = S_{t-1} + min_{i in R_t} lo_i / q_t(i), b_t likewise with the max. Under equal
probabilities z_t = S_{t-1} + |R_t| r_{I_t}, the without-replacement centring of Waudby-Smith and Ramdas
("Confidence sequences for sampling without replacement", NeurIPS 2020); unequal ones are the same construction
weighted by the inverse probability.

**Aligned ranges.** Any offsets o_i known before the draw keep the mean: z_t = S_{t-1} + sum_{i in R_t} o_i +
(r_I - o_I) / q_t(I) has conditional mean R too (a control variate, as PPI's machine value is one). The plain z
(o = 0) ranges over the hull of every query's [lo_i, hi_i] / q_t(i), and the machine's value sits near the bottom of
one query's range and near the top of another's, so the hull is up to twice the widest range. `aligned_offsets`
gives every query left the same range [A, B], B - A the widest (hi - lo) / q, keeping o = 0 (the machine's
prediction) wherever it fits. The confidence sequence below is run on these z's; on a random draw of TREC DL 2020's
and MSRD's simulated benchmark (`bench/conclusions_staged.py`) it is 8-23% narrower at 5-30 decided queries.

**The confidence sequence.** Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting"
(JRSS B 86(1), 2024), section 4 and 5: for a candidate total m the capitals K+_t(m) = prod (1 + lam_s (z_s - m))
and K-_t(m) = prod (1 - lam_s (z_s - m)) are nonnegative martingales at the true total when each bet lam_s is
predictable and keeps every factor positive (lam_s <= c / (m - a_s) for K+, c / (b_s - m) for K-; c = 0.9). By
Ville's inequality the set of m with K+_s(m) < 2 / alpha and K-_s(m) < 2 / alpha at every s <= t holds the truth at
every t at once with probability >= 1 - alpha: the report may be read after any decided query, and a person may stop
whenever the interval is narrow enough. Each side is monotone in m, so its end is found by bisection. The bets are
the predictable plug-in lam_s = sqrt(2 log(2 / alpha) / (sigma^2_{s-1} h)) / (b_s - a_s), sigma^2 the running
variance of the z's scaled by their ranges with a prior of 0.05 counted as one step (the scaled z's of
a judge's residuals vary far less than the 1/4 of a z at the ends of its range), h the horizon: the sample's planned size when known
(the bets tuned for the end of the sample, the paper's fixed-n choice, still a confidence sequence for every t up to
it since the bets do not look ahead), else s log(1 + s) (the paper's anytime choice).

The point estimate is Des Raj's mean of the plain z's (`aligned=False`; unbiased under any probabilities, and less
variable than the aligned ones, whose offsets leave the machine's value where it does not fit); under equal
probabilities the caller may keep the sample's difference estimator, which is unbiased too and less variable.

Pure: arrays in, arrays out; every column of an (n, d) array at once.

Example:
    >>> import numpy as np
    >>> r = np.array([[0.1], [-0.1], [0.0], [0.05]] * 5)             # 20 residuals, drawn in this order
    >>> z, a, b = increments(r[:8], np.full((20, 1), -1.0), np.full((20, 1), 1.0), np.arange(8), np.ones(20))
    >>> lo, hi = interval(z, a, b)
    >>> bool(lo[0] <= r.sum() <= hi[0])
    True
"""

from __future__ import annotations

import math

import numpy as np

C = 0.9  # the bets' truncation: at most 9/10 of what keeps every factor positive (the paper's c)
STEPS = 30  # bisection steps: the ends to 2^-30 of the possible range
PRIOR = 0.05  # the bets' prior variance of a range-scaled z (counted as one step)
FLOOR = 0.5  # the share of every draw's probability spread evenly over the queries left (active draws)


def probabilities(weights, left, floor: float = FLOOR) -> np.ndarray:
    """The probability of drawing each query next (0 for those drawn already): `floor` of it spread evenly over the
    queries `left` (a bool mask), the rest in proportion to `weights` (evenly where the weights left sum to 0)."""
    w = np.where(left, np.clip(np.asarray(weights, dtype=float), 0.0, None), 0.0)
    k = int(np.count_nonzero(left))
    if k == 0:
        raise ValueError("no query is left to draw")
    even = np.where(left, 1.0 / k, 0.0)
    total = w.sum()
    return even if total <= 0 else (1 - floor) * w / total + floor * even


def increments(resid, lo, hi, order, weights, floor: float = FLOOR,
               aligned: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Des Raj's z_t and their predictable ranges [a_t, b_t] (each (t, d)) for the residuals `resid` (t, d) of the
    queries drawn, in draw order `order` (their indices among the N), `lo`, `hi` (N, d) each query's residual range,
    `weights` (N,) the draw's weights and `floor` its even share (see the module; equal weights: a random draw).
    `aligned` (the default): each step's z centred on the offsets of `aligned_offsets`, so that every query's range
    is the same and the z's range is the narrowest the draw allows; False: the plain z_t = S_{t-1} + r / q."""
    resid = np.asarray(resid, dtype=float)
    resid = resid[:, None] if resid.ndim == 1 else resid
    lo, hi = (np.asarray(v, dtype=float) for v in (lo, hi))
    lo, hi = (v[:, None] if v.ndim == 1 else v for v in (lo, hi))
    big_n, t = lo.shape[0], len(order)
    left = np.ones(big_n, dtype=bool)
    before = np.zeros(resid.shape[1])
    z, a, b = (np.empty((t, resid.shape[1])) for _ in range(3))
    for s, i in enumerate(order):
        q = np.where(left, probabilities(weights, left, floor), 1.0)[:, None]
        if aligned:
            offset, low, high = aligned_offsets(lo, hi, q, left)
        else:
            offset = np.zeros_like(lo)
            low = np.min(np.where(left[:, None], lo / q, np.inf), axis=0)
            high = np.max(np.where(left[:, None], hi / q, -np.inf), axis=0)
        base = before + offset.sum(axis=0)
        z[s] = base + (resid[s] - offset[i]) / q[i, 0]
        a[s], b[s] = base + low, base + high
        before = before + resid[s]
        left[i] = False
    return z, a, b


def aligned_offsets(lo, hi, q, left) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets o (N, d), A, B (d,)) that give every query left the same range of (r - o) / q, [A, B], as narrow as
    the draw allows: B - A = D, the largest (hi - lo) / q over the queries left. Any known offsets keep Des Raj's z
    unbiased, z = S_{t-1} + sum of o over the queries left + (r_I - o_I) / q_I (its mean given the past is still the
    total), so they are chosen before the draw to narrow z's range: with the plain z (o = 0) the range is the hull of
    every query's [lo / q, hi / q], up to twice D when the machine's value sits near the bottom of one query's range
    and the top of another's. Here A = -theta D and B = (1 - theta) D, theta the median over the queries left of
    where the machine's value sits in its range (-lo / (hi - lo)), and o the machine's own value (0) wherever it fits,
    else the nearest that does: o in [hi - B q, lo - A q], an interval of length D q - (hi - lo) >= 0 (so a query
    with a narrow range keeps the machine's prediction, the widest is centred at theta)."""
    mask = left[:, None]
    span = np.where(mask, (hi - lo) / q, 0.0)
    d = span.max(axis=0)
    open_ = mask & (hi > lo)
    where = np.where(open_, -lo / np.where(hi > lo, hi - lo, 1.0), np.nan)
    counted = open_.any(axis=0)
    theta = np.full(lo.shape[1], 0.5)
    if counted.any():
        theta[counted] = _column_medians(where[:, counted])
    low, high = -theta * d, (1 - theta) * d
    offset = np.where(mask, np.clip(0.0, hi - high * q, lo - low * q), 0.0)
    return offset, low, high


def _bets(z, a, b, level: float, horizon, prior: float = PRIOR) -> np.ndarray:
    """The predictable plug-in bets (t, d), in units of 1 / (b - a): from the running mean and variance of the
    range-scaled z's before each step."""
    t = z.shape[0]
    width = np.where(b > a, b - a, 1.0)
    s = np.arange(1, t + 1, dtype=float)[:, None]
    mean = np.cumsum(z, axis=0) / s  # the running mean of the z's (all estimate the same total)
    prev = np.vstack([z[:1] * 0 + 0.5, (mean[:-1] - a[1:]) / width[1:]])  # the past mean, where it sits in [a, b]
    dev = ((z - a) / width - prev) ** 2
    var = (prior + np.cumsum(dev, axis=0)) / (s + 1)
    before = np.vstack([np.full((1, z.shape[1]), prior), var[:-1]])
    scale = s * np.log1p(s) if horizon is None else np.maximum(np.asarray(horizon, dtype=float), 1.0)
    return np.sqrt(2 * math.log(2 / (1 - level)) / (before * scale)) / width


def _capital(z, a, b, m, bets, side: int, c: float = C) -> np.ndarray:
    """The largest log capital over the steps of betting that the total is above (side +1) or below (-1) each
    column's candidate `m` (d,)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if side > 0:
            cap = np.where(m[None, :] > a, c / (m[None, :] - a), np.inf)
            factor = 1 + np.minimum(bets, cap) * (z - m[None, :])
        else:
            cap = np.where(b > m[None, :], c / (b - m[None, :]), np.inf)
            factor = 1 - np.minimum(bets, cap) * (z - m[None, :])
        logs = np.log(np.maximum(factor, 0.0))
    return np.max(np.cumsum(logs, axis=0), axis=0)


def interval(z, a, b, level: float = 0.95, horizon=None, possible=None, c: float = C,
             prior: float = PRIOR) -> tuple[np.ndarray, np.ndarray]:
    """The confidence sequence's interval for the total (see the module) after the steps of `z`, `a`, `b` (t, d);
    `horizon` the planned number of steps (per column or one; None: the anytime bets); `possible` (low, high) the
    totals the data leave possible (default the widest range any z was given). Never empty: where the two sides
    cross (a sample that contradicts the range, probability below alpha) the possible range is returned. `c` the
    bets' truncation, `prior` their prior variance (see the module)."""
    z, a, b = (np.asarray(v, dtype=float) for v in (z, a, b))
    z, a, b = (v[:, None] if v.ndim == 1 else v for v in (z, a, b))
    bets = _bets(z, a, b, level, horizon, prior)
    bar = math.log(2 / (1 - level))
    low, high = (a.min(axis=0), b.max(axis=0)) if possible is None else \
        (np.broadcast_to(np.asarray(v, dtype=float), (z.shape[1],)).copy() for v in possible)
    ends = []
    for side in (+1, -1):  # K+ rejects small totals, K- large ones
        keep = high.copy() if side > 0 else low.copy()  # a candidate the side keeps
        edge = low.copy() if side > 0 else high.copy()
        rejected = _capital(z, a, b, edge, bets, side, c) >= bar
        lose = edge.copy()
        for _ in range(STEPS):
            mid = (lose + keep) / 2
            rej = _capital(z, a, b, mid, bets, side, c) >= bar
            lose, keep = np.where(rej, mid, lose), np.where(rej, keep, mid)
        ends.append(np.where(rejected, keep, edge))
    lo, hi = ends
    crossed = lo > hi
    return np.where(crossed, low, lo), np.where(crossed, high, hi)


def p_value(z, a, b, null, level: float = 0.95, horizon=None) -> np.ndarray:
    """The anytime-valid p-value of "the total is `null`" (per column): 1 / the largest of K+ / 2 and K- / 2 over
    the steps, at most 1 (below 1 - `level` exactly where `null` is outside `interval`)."""
    z, a, b = (np.asarray(v, dtype=float) for v in (z, a, b))
    z, a, b = (v[:, None] if v.ndim == 1 else v for v in (z, a, b))
    m = np.broadcast_to(np.asarray(null, dtype=float), (z.shape[1],)).copy()
    bets = _bets(z, a, b, level, horizon)
    most = np.maximum(_capital(z, a, b, m, bets, +1), _capital(z, a, b, m, bets, -1)) - math.log(2)
    return np.minimum(1.0, np.exp(-most))


def mean_interval(resid, lo, hi, order, weights, machine_mean, level: float = 0.95, horizon=None,
                  floor: float = FLOOR) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Des Raj's estimate, lo, hi) of the mean over the N queries of y = x + r, per column: `machine_mean` the mean
    of x over the N, the rest as `increments`; the interval clipped to what the unlabelled queries' ranges allow."""
    z, a, b = increments(resid, lo, hi, order, weights, floor)
    plain, _, _ = increments(resid, lo, hi, order, weights, floor, aligned=False)
    lo_, hi_ = (np.asarray(v, dtype=float) for v in (lo, hi))
    lo_, hi_ = (v[:, None] if v.ndim == 1 else v for v in (lo_, hi_))
    left = np.ones(lo_.shape[0], dtype=bool)
    left[np.asarray(order, dtype=int)] = False
    seen = np.asarray(resid, dtype=float).reshape(len(order), -1).sum(axis=0)
    possible = (seen + lo_[left].sum(axis=0), seen + hi_[left].sum(axis=0))
    tlo, thi = interval(z, a, b, level, horizon, possible)
    big_n = lo_.shape[0]
    point = np.clip(plain.mean(axis=0), *possible)
    return machine_mean + point / big_n, machine_mean + tlo / big_n, machine_mean + thi / big_n


def des_raj_t(z, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(Des Raj's mean of the z's, the Student-t half-width of it) per column: the unbiased variance estimate
    sum (z_t - mean)^2 / (t (t - 1)) (Des Raj 1956), for the normal approximation at a fixed sample size; infinite
    half-width below 2 steps."""
    from scipy.stats import t as student

    z = np.asarray(z, dtype=float)
    z = z[:, None] if z.ndim == 1 else z
    n = z.shape[0]
    if n < 2:
        return z.mean(axis=0), np.full(z.shape[1], np.inf)
    se = z.std(axis=0, ddof=1) / math.sqrt(n)
    return z.mean(axis=0), student.ppf(1 - (1 - level) / 2, n - 1) * se


def _column_medians(values: np.ndarray) -> np.ndarray:
    """np.nanmedian(values, axis=0) of columns that each hold a number (a sort: numpy's NaN median of small arrays
    goes through masked arrays, the most of a plan's time)."""
    ordered = np.sort(values, axis=0)  # NaN last
    k = (~np.isnan(values)).sum(axis=0)
    low = np.take_along_axis(ordered, ((k - 1) // 2)[None, :], 0)[0]
    high = np.take_along_axis(ordered, (k // 2)[None, :], 0)[0]
    return (low + high) / 2
