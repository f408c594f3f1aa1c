"""A confidence interval for the mean of bounded values sampled without replacement, valid at every sample size: the
hedged capital process of Waudby-Smith and Ramdas.

Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting" (JRSS B 86(1), 2024,
arXiv:2010.09686), section 4 (the hedged capital process and its predictable plug-in bets), made exact for
sampling without replacement as in their "Confidence sequences for sampling without replacement" (NeurIPS 2020,
arXiv:2006.04347): values x_1..x_n in [0, 1] drawn in a random order from a population of N whose mean is m. After
t - 1 draws the mean of what is left is m_t = (N m - sum of the first t - 1) / (N - t + 1), the conditional mean of
the t-th draw, so for every predictable bet lam_t in [0, 1 / m_t) the capital K+_t(m) = prod (1 + lam_i (x_i - m_i))
is a nonnegative martingale at the true m (and K-_t with 1 - lam_i (x_i - m_i), lam_i < 1 / (1 - m_i)). Their
average is one too, so by Ville's inequality no time t has max(K+_t / 2, K-_t / 2) >= 1 / alpha with probability
above alpha: every m whose capital never reaches that is in the interval, at every t at once. K+ falls and K- rises
with m (each factor does), so the set is an interval and its ends are found by bisection.

The bets are the paper's predictable plug-in: lam_t = sqrt(2 log(2 / alpha) / (sigma^2_{t-1} n)), truncated at
3/4 of what keeps the capital positive (c = 3/4, the larger of the paper's two choices; any c < 1 is valid), sigma^2 the running variance with a prior of 1/4 (its equation 26
with n for the fixed-size interval; `anytime=True` gives the confidence sequence's t log(1 + t), valid
simultaneously over every stopping point and wider). The interval is continuous in the data (it has no zero-width
case: a sample without spread still leaves the unsampled values their range) and needs the values' range, which a
metric has ([0, 1], a difference [-1, 1]). The p-value of m is 1 / max(K+ / 2, K- / 2) over the sample (capped at
1): below alpha exactly where m is outside the interval.

Pure: arrays in, arrays out; every column of an (n, d) array at once, rows in the order they were drawn.

Example:
    >>> lo, hi = interval([[0.5], [0.5], [0.5]] * 10, 300, 0.0, 1.0)
    >>> bool(lo[0] < 0.5 < hi[0]) and bool(hi[0] - lo[0] > 0.1)
    True
"""

from __future__ import annotations

import math

import numpy as np

C = 0.75  # the bets' truncation: at most 3/4 of what keeps the capital positive (the paper's c)
STEPS = 30  # bisection steps: the interval's ends to 2^-30 of the range


def _scaled(x, low, high) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    width = np.where(high > low, high - low, 1.0)
    return np.clip((x - low) / width, 0.0, 1.0)


def _bets(x: np.ndarray, level: float, anytime: bool) -> np.ndarray:
    """The predictable plug-in bets lam_t (n, d): from the running mean and variance of the first t - 1 values."""
    n = x.shape[0]
    t = np.arange(1, n + 1, dtype=float)[:, None]
    mean = (0.5 + np.cumsum(x, axis=0)) / (t + 1)
    var = (0.25 + np.cumsum((x - mean) ** 2, axis=0)) / (t + 1)
    before = np.vstack([np.full((1, x.shape[1]), 0.25), var[:-1]])
    scale = t * np.log1p(t) if anytime else np.full_like(t, float(n))
    return np.sqrt(2 * math.log(2 / (1 - level)) / (before * scale))


def _prefix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the sum of the values drawn before each t, N - t + 1's t) for `_log_capital`."""
    t = np.arange(1, x.shape[0] + 1, dtype=float)[:, None]
    return np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)[:-1]]), t


def _log_capital(x: np.ndarray, big_n: int, m: np.ndarray, bets: np.ndarray, side: int, prefix=None) -> np.ndarray:
    """The largest log capital over t of betting that the mean is above (side +1) or below (-1) each column's m."""
    before, t = _prefix(x) if prefix is None else prefix
    left = (big_n * m[None, :] - before) / (big_n - t + 1)  # the mean of the values not yet drawn
    with np.errstate(divide="ignore", invalid="ignore"):
        if side > 0:
            lam = np.minimum(bets, np.where(left > 0, C / left, np.inf))
            factor = 1 + lam * (x - left)
        else:
            lam = np.minimum(bets, np.where(left < 1, C / (1 - left), np.inf))
            factor = 1 - lam * (x - left)
        logs = np.log(np.maximum(factor, 0.0))
    return np.max(np.cumsum(logs, axis=0), axis=0)


def interval(x, big_n: int, low, high, level: float = 0.95, anytime: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The betting interval (see the module) of the mean over all `big_n` of every column of `x` (n, d), rows in
    draw order, each column's values in [`low`, `high`] (scalars or per column). Needs 1 <= n <= N."""
    x = np.asarray(x, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    n, d = x.shape
    low, high = (np.broadcast_to(np.asarray(b, dtype=float), (d,)) for b in (low, high))
    z = _scaled(x, low, high)
    bets = _bets(z, level, anytime)
    total = z.sum(axis=0)
    floor, ceiling = total / big_n, (total + big_n - n) / big_n  # the means the sample leaves possible
    bar = math.log(2 / (1 - level))  # K / 2 >= 1 / alpha
    prefix = _prefix(z)
    ends = []
    for side in (+1, -1):  # K+ rejects small m (falls with m); K- large m (rises with m)
        inside = np.clip(z.mean(axis=0), floor, ceiling)
        edge = floor.copy() if side > 0 else ceiling.copy()
        rejected = _log_capital(z, big_n, edge, bets, side, prefix) >= bar
        a, b = np.where(rejected, edge, inside), inside.copy()  # a rejected (or the edge), b kept
        for _ in range(STEPS):
            mid = (a + b) / 2
            rej = _log_capital(z, big_n, mid, bets, side, prefix) >= bar
            a, b = np.where(rej, mid, a), np.where(rej, b, mid)
        ends.append(np.where(rejected, a, edge))
    width = np.where(high > low, high - low, 0.0)
    return low + ends[0] * width, low + ends[1] * width


def p_value(x, big_n: int, low, high, null, level: float = 0.95, anytime: bool = False) -> np.ndarray:
    """Per column, the betting p-value of "the mean over all N equals `null`" (the bets tuned for `level`):
    1 / max(K+ / 2, K- / 2) at `null` over the sample, at most 1; 0 where the sample makes `null` impossible."""
    x = np.asarray(x, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    n, d = x.shape
    low, high = (np.broadcast_to(np.asarray(b, dtype=float), (d,)) for b in (low, high))
    z = _scaled(x, low, high)
    m = _scaled(np.broadcast_to(np.asarray(null, dtype=float), (d,))[None, :], low, high)[0]
    total = z.sum(axis=0)
    possible = (m >= total / big_n - 1e-12) & (m <= (total + big_n - n) / big_n + 1e-12)
    bets = _bets(z, level, anytime)
    most = np.maximum(_log_capital(z, big_n, m, bets, +1), _log_capital(z, big_n, m, bets, -1)) - math.log(2)
    return np.where(possible, np.minimum(1.0, np.exp(-most)), 0.0)
