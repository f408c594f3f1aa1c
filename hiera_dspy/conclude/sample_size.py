"""How many queries a person must label, before anyone labels: per system and per pair of systems, from the machine's
values on all N queries and the judge's label probabilities.

For each system (and each pairwise difference) on each measure:

- `n_min`: the sampled queries the normal approximation needs (Cochran's rule as refined by Sugden, Smith and Jones
  2000, n > 28 + 25 g^2; never below 29). The interval is a sampled mean of the human-minus-machine residual (the
  difference estimator, `hiera_dspy.conclude.finite`), so g is that residual's skewness over all N queries, as the
  judge's probabilities predict it (`predicted_n_min`: the root mean square of its skewness over the simulated label
  sets). `n_min_machine` keeps the same rule on the machine's own values over all N, which reads the wrong variable:
  a skewed metric predicted well has a symmetric residual (docs/conclusions.md measures both);
- the residual standard deviation the interval will have: the human values are simulated from the judge's own
  probabilities (each hole relevant with the judge's probability, several label sets), and the human-minus-machine
  residual is taken over all N (slope 1: the estimator's default, `hiera_dspy.conclude.finite`);
- `n_width`: the fewest sampled queries whose interval is at most `width` wide (its full width, hi - lo): the
  interval the report will give (`interval_widths`: of the n sampled, the n H / N of the H queries a hole can change
  are decided; the confidence sequence over each query's own range, its bets tuned for a sample of n, as
  `hiera_dspy.conclude.holes` gives it), on the simulated label sets, scaled to the benchmark's mean. Until
  2026-12-06 it was the finite-population t interval (Cochran 1977 section 4.4) with the betting interval beside it
  below n_min, the report's rule until then: it asked for up to twice the queries the report needs
  (docs/conclusions.md); without the queries' ranges (`spans` None) it still is. A t formula over all N
  queries, the rule before 2026-12-05, asked for a fifth of the queries the betting interval needs below n_min on
  TREC DL 2020 (docs/conclusions.md); `n_width_sample` the same at a decided sample's residual spread over the
  queries with holes (read before as a spread over every query, which asked N / H times too many);
- `stratified_gain`: how much narrower `--sample stratified` is predicted to be; the plan recommends it from
  `STRATIFY` (10%);
- for a pair, `n_power`: the fewest sampled queries that tell the two apart at `level` with probability `power`
  (80%) if the difference is the machine's, tested at the pair's Holm step (the pairs ranked by |difference| /
  residual sd, the clearest at Bonferroni's alpha / m): with the queries' ranges, as the report tells a pair apart,
  its confidence sequence at level 1 - alpha / step excluding 0 on `power` of the simulated label sets
  (`n_for_sequence_power`); without them, the t test's |difference| >= (t_{1-alpha/(2 step)} + t_{power}) *
  standard error, at least `n_min` (the rule until 2026-12-06); None when the machine sees no difference (no n can
  be named), and "cannot be told apart" when even n = N - 1 would not do;
- with a decided human sample, what it gives now: its interval, and how many more sampled queries (`more_queries`,
  from the sample's own residual spread and estimate) would tell a pair apart.

The simulated human values assume the judge's probabilities are calibrated; the calibration check on the decided
holes (`hiera_dspy.conclude.calibration`) inflates the residual sd where they are not. Every n is found by bisection
(`first_n`). docs/conclusions.md measures the predicted n against the n at which the benchmark reached the width.
Pure: arrays in, rows out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np

POWER = 0.8
METRIC_RANGE = (0.0, 1.0)  # nDCG@k and P@k
STRATIFY = 0.10  # the predicted narrowing from which the plan recommends --sample stratified


def standard_error(sd: float, n: int, big_n: int) -> float:
    """The finite-population standard error of a mean of n of N values with residual standard deviation `sd`."""
    return math.sqrt(max(1 - n / big_n, 0.0) / n) * sd


def first_n(ok: Callable[[int], bool], low: int, high: int) -> int:
    """The least n in [low, high) with `ok(n)`, `ok` false then true as n grows (bisection: log2 of the range
    calls, not one a query); `high` when none is."""
    if low >= high or not ok(high - 1):
        return high
    lo, hi = low, high - 1  # ok(hi) holds
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def n_for_width(sd_at: Callable[[int], tuple[float, int]], big_n: int, width: float, level: float = 0.95) -> int:
    """The fewest sampled queries (2..N) whose interval t_{df} * 2 * standard error is at most `width`; `sd_at(n)`
    gives (sd, df) at n. N (every query: the exact value) when no smaller sample does."""
    from scipy.stats import t

    def ok(n: int) -> bool:
        sd, df = sd_at(n)
        return 2 * t.ppf(1 - (1 - level) / 2, df) * standard_error(sd, n, big_n) <= width

    return first_n(ok, 2, big_n)


def n_for_power(delta: float, sd_at: Callable[[int], tuple[float, int]], big_n: int, level: float = 0.95,
                power: float = POWER, start: int = 2, step: int = 1) -> int | None:
    """The fewest sampled queries (from `start`) at which a two-sided t test at `level` detects a difference of
    `delta` with probability `power`, tested at the pair's Holm step (alpha / `step`; the first step of m pairs is
    Bonferroni's alpha / m): |delta| >= (t_{1 - alpha/(2 step), df} + t_{power, df}) * standard error. None when
    `delta` is 0; N when no sample short of every query does."""
    from scipy.stats import t

    if abs(delta) < 1e-12:
        return None
    alpha = (1 - level) / max(step, 1)

    def ok(n: int) -> bool:
        sd, df = sd_at(n)
        return abs(delta) >= (t.ppf(1 - alpha / 2, df) + t.ppf(power, df)) * standard_error(sd, n, big_n)

    return first_n(ok, max(2, start), big_n)


def sampled_intervals(machine: np.ndarray, simulated: Sequence[np.ndarray], big_n: int, n_min: int,
                      bounds: tuple[float, float] | None, seed: int = 0,
                      span: tuple[np.ndarray, np.ndarray] | None = None
                      ) -> Callable[[int, float, float], tuple[np.ndarray, np.ndarray]]:
    """(n, scale, level) -> (lo, hi), per label set `simulated` from the judge's probabilities, of the domain's
    interval the report will give once n of the `big_n` queries are sampled: `machine` and each simulated set over
    the H queries a hole can change (the domain; the others are known), n H / N of them decided, each set in its own
    random order, the human-minus-machine residual's spread about its mean times `scale` (the calibration check's
    inflation, or a decided sample's spread over the simulated one). The ends are the domain's mean's: the
    benchmark's is base + H / N times them (`hiera_dspy.conclude.finite.scaled`).
    With `span` (each domain query's lowest and highest human value, `hiera_dspy.conclude.ranges`) the interval is
    the report's: the confidence sequence over each query's own range, its bets tuned for a sample of n
    (`hiera_dspy.conclude.finite.columns` with spans; a scaled human value is kept within its query's range).
    Without it, the t interval with the betting interval beside it below `n_min`, clipped to `bounds` (the rule
    before 2026-12-06, for callers that have no ranges). Every domain query decided: both ends the
    human mean, exact.
    Memoised: a plan asks for several widths, a benchmark for many scales."""
    from hiera_dspy.conclude.finite import columns

    x = np.asarray(machine, dtype=float)
    domain = len(x)
    rng = np.random.default_rng(seed)
    order = np.column_stack([rng.permutation(domain) for _ in simulated])
    resid = np.take_along_axis(np.column_stack([np.asarray(y, dtype=float) - x for y in simulated]), order, 0)
    xs, centre = x[order], resid.mean(axis=0)
    ranges = None if span is None or bounds is None else tuple(np.asarray(v, dtype=float)[order] for v in span)
    share, memo = domain / big_n, {}

    def ends(n: int, scale: float = 1.0, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        n_h = max(round(n * share), 2)
        if n_h >= domain:
            exact = xs.mean(axis=0) + centre  # every query a hole can change decided: the human mean, exact
            return exact, exact
        key = (n_h, n if ranges is not None else None, round(scale, 3), round(level, 6))
        if key not in memo:
            ys = xs[:n_h] + centre + (resid[:n_h] - centre) * scale
            spans = None
            if ranges is not None:
                ys = np.clip(ys, ranges[0][:n_h], ranges[1][:n_h])
                spans = (ranges[0], ranges[1], n)
            c = columns(ys, xs[:n_h], xs[n_h:], level, None, bounds, np.full(xs.shape[1], n_min), spans=spans)
            memo[key] = (c.lo, c.hi)
        return memo[key]

    return ends


def interval_widths(machine: np.ndarray, simulated: Sequence[np.ndarray], big_n: int, n_min: int,
                    bounds: tuple[float, float] | None, level: float = 0.95, seed: int = 0,
                    span: tuple[np.ndarray, np.ndarray] | None = None) -> Callable[[int, float], float]:
    """(n, scale) -> the mean width of the interval the report will give once n of the `big_n` queries are sampled,
    on the label sets `simulated`, scaled to the benchmark's mean (`sampled_intervals`: the confidence sequence over
    each query's range with `span`, else the t interval with the betting interval beside it below `n_min`)."""
    return widths_of(sampled_intervals(machine, simulated, big_n, n_min, bounds, seed, span), len(machine) / big_n,
                     level)


def widths_of(ends: Callable[[int, float, float], tuple[np.ndarray, np.ndarray]], share: float,
              level: float = 0.95) -> Callable[[int, float], float]:
    """(n, scale) -> the mean width at `level` of `sampled_intervals`' `ends`, scaled to the benchmark's mean (the
    domain's share of the queries, `share`)."""
    def width(n: int, scale: float = 1.0) -> float:
        lo, hi = ends(n, scale, level)
        return share * float(np.mean(hi - lo))

    return width


def n_for_sequence_power(ends: Callable[[int, float, float], tuple[np.ndarray, np.ndarray]], share: float,
                         base: float, big_n: int, level: float = 0.95, power: float = POWER, start: int = 2,
                         step: int = 1, scale: float = 1.0) -> int:
    """The fewest sampled queries (from `start`) at which the report's interval of a pair's difference
    (`sampled_intervals`' `ends`, the benchmark's mean base + share * each end) at its Holm step (level
    1 - alpha / `step`) excludes 0 on at least `power` of the simulated label sets: the machine's difference told
    apart as the report tells it; N when no sample short of every query does."""
    step_level = 1.0 - (1.0 - level) / max(step, 1)

    def ok(n: int) -> bool:
        lo, hi = (base + share * e for e in ends(n, scale, step_level))
        return float(np.mean((lo > 0) | (hi < 0))) >= power

    return first_n(ok, max(2, start), big_n)


def n_for_interval(width_at: Callable[[int], float], big_n: int, width: float) -> int:
    """The fewest sampled queries (2..N) whose interval `width_at(n)` is at most `width` (bisection; N: none)."""
    return first_n(lambda n: width_at(n) <= width, 2, big_n)


def first_sample(n_min: int, holes: int | None, big_n: int) -> int:
    """The sampled queries (of `big_n`) expected to hold `n_min` of the `holes` queries a hole can change (None: all
    of them): n_min * N / holes, at most N. Only those count towards n_min; the others are known exactly."""
    return min(big_n, math.ceil(n_min * big_n / max(holes or big_n, 1)))


def more_queries(e, level: float = 0.95, power: float = POWER, step: int = 1) -> int | None:
    """How many more sampled queries would tell a pair apart (an `ppi.Estimate` of a difference) at its Holm step
    (`step`, `holm_steps`): 0 when its interval already excludes 0; None when it is unknown or exactly 0; else
    `n_for_power` at the estimate and the sample's own residual spread over the queries with holes (a domain of
    `holes` of the N queries: standard error holes / N * sqrt((1 - n / holes) / n) * sd), and never below the n_min
    from which the t interval stands alone (below it the betting interval decides), minus the decided sample (at
    least 1). A planning figure: it assumes the difference stays where it is."""
    if e.ci is None or e.ppi is None or e.sd is None:
        return None
    lo, hi = e.ci
    if lo > 0 or hi < 0:
        return 0
    holes = e.holes or e.N
    share = holes / e.N
    needed = n_for_power(e.ppi / share, lambda n: (e.sd, n - 1), holes, level, power, step=step)
    if needed is None:
        return None
    if e.rule == "betting" and e.n_min:
        needed = max(needed, min(e.n_min, holes))
    return max(1, needed - e.n)


@dataclass(frozen=True)
class Line:
    """The plan of one system or pair on one measure (see the module); `a`, `b` name a pair (`b` None for a
    system)."""
    measure: str
    a: str
    b: str | None
    machine: float
    n_min: int
    sd: float
    n_width: int
    n_power: int | None = None
    n_min_machine: int | None = None
    holm_step: int | None = None
    holes: int | None = None
    sd_holes: float | None = None
    n_width_sample: int | None = None
    stratified_gain: float | None = None
    active_gain: float | None = None

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return asdict(self)


def residual_sd(machine: np.ndarray, simulated: Sequence[np.ndarray]) -> float:
    """The standard deviation of simulated human minus machine values over all N (the root of the mean variance
    over the simulations; divisor N - 1)."""
    x = np.asarray(machine, dtype=float)
    return math.sqrt(float(np.mean([np.var(np.asarray(y, dtype=float) - x, ddof=1) for y in simulated])))


def predicted_n_min(machine: np.ndarray, simulated: Sequence[np.ndarray]) -> int:
    """Cochran's rule (n > 28 + 25 g^2, never below 29) with g the skewness over all N of the simulated human minus
    machine values, root mean square over the simulations: the mean of the rule over them, rounded up."""
    from hiera_dspy.conclude.finite import min_queries_columns

    x = np.asarray(machine, dtype=float)
    resid = np.column_stack([np.asarray(y, dtype=float) - x for y in simulated])
    return max(math.ceil(float(np.mean(min_queries_columns(resid)))), 29)


def stratified_gain(machine: np.ndarray, simulated: Sequence[np.ndarray], strata: np.ndarray) -> float | None:
    """How much narrower a proportionally stratified sample's interval is predicted to be than a random one's, over
    the label sets `simulated` from the judge's probabilities: 1 - sqrt(sum_h W_h S_h^2 / S^2), S_h the residual's
    standard deviation within stratum h (`strata`: each query's), S over all, each the root of the mean variance over
    the sets (Cochran 1977, section 5.6, the finite-population terms left out). None with fewer than 2 queries.
    A calibrated judge's expected values leave every stratum's mean residual near 0, and so little to gain."""
    x = np.asarray(machine, dtype=float)
    strata = np.asarray(strata)
    if len(x) < 2:
        return None
    resid = np.column_stack([np.asarray(y, dtype=float) - x for y in simulated])
    total = float(np.mean(resid.var(axis=0, ddof=1)))
    if total <= 0:
        return 0.0
    within = sum(np.mean(strata == h) * float(np.mean(resid[strata == h].var(axis=0, ddof=1)))
                 for h in np.unique(strata) if (strata == h).sum() >= 2)
    return 1.0 - math.sqrt(min(within / total, 1.0))


def active_gain(machine: np.ndarray, simulated: Sequence[np.ndarray], weights: np.ndarray,
                floor: float | None = None) -> float | None:
    """How much narrower the Student-t interval of an active sample (`--sample active`: each draw's probability
    `floor` even and the rest in proportion to `weights`, Des Raj's estimator) is predicted to be than a random
    sample's, over the label sets `simulated`: 1 - sqrt(V_active / V_random) with the variances of one draw with
    replacement, sum_i E[r_i^2] / p_i - T^2 against N sum_i E[r_i^2] - T^2 (r the human-minus-machine residual,
    T its total; Cochran 1977, section 9A.6, probabilities proportional to size; sampling without replacement
    lowers both). None with fewer than 2 queries. It predicts the t interval's gain; below n_min the report's
    interval is the confidence sequence, whose width follows the residual's range more than its spread."""
    from hiera_dspy.conclude.sequence import FLOOR, probabilities

    x = np.asarray(machine, dtype=float)
    if len(x) < 2:
        return None
    resid = np.column_stack([np.asarray(y, dtype=float) - x for y in simulated])
    square, total = np.mean(resid ** 2, axis=1), float(np.mean(resid.sum(axis=0) ** 2))
    p = probabilities(weights, np.ones(len(x), dtype=bool), FLOOR if floor is None else floor)
    random = len(x) * float(square.sum()) - total
    if random <= 0:
        return 0.0
    active = float((square / p).sum()) - total
    return 1.0 - math.sqrt(max(active, 0.0) / random)


def active_design_gain(lines: Sequence[Line]) -> float | None:
    """The median over the lines of the predicted narrowing by `--sample active` (None when not predicted)."""
    gains = [line.active_gain for line in lines if line.active_gain is not None]
    return float(np.median(gains)) if gains else None


def recommended_design(lines: Sequence[Line]) -> tuple[str, float | None]:
    """("stratified" or "random", the median predicted narrowing over the lines): stratified when that median is
    at least STRATIFY."""
    gains = [line.stratified_gain for line in lines if line.stratified_gain is not None]
    if not gains:
        return "random", None
    median = float(np.median(gains))
    return ("stratified" if median >= STRATIFY else "random"), median


def plan_line(measure: str, a: str, b: str | None, machine: np.ndarray, simulated: Sequence[np.ndarray],
              width: float, level: float = 0.95, power: float = POWER, step: int = 1, inflation: float = 1.0,
              holes: np.ndarray | None = None, bounds: tuple[float, float] | None = None,
              sample_sd: float | None = None, strata: np.ndarray | None = None, sample_n_min: int | None = None,
              weights: np.ndarray | None = None, span: tuple[np.ndarray, np.ndarray] | None = None) -> Line:
    """The plan of one per-query quantity (a system's values, or a pair's differences) over all N queries; a pair's
    power at its Holm `step`; the simulated residual sd times `inflation` (the calibration check's,
    `hiera_dspy.conclude.calibration`); n_min over the queries a hole can change (`holes`, a mask; None: all), the
    domain the estimate samples. `n_width`: the fewest sampled queries whose interval (`interval_widths`: the
    report's own, the betting interval below n_min included, values in `bounds`) is at most `width`, the residual's
    spread times `inflation`; `n_width_sample` the same at a decided sample's residual spread `sample_sd` (over the
    queries with holes, an estimate's `sd`) and its n_min (`sample_n_min`, an estimate's: the sample's own residuals
    raise it where they are more skewed than the simulated ones, and the betting interval then lasts longer);
    `stratified_gain` with `strata` (each query's stratum); `active_gain` with `weights` (each query's, as
    `--sample active` draws them); `span` (each query's lowest and highest human value over all N): the widths are
    the confidence sequence's, as the report gives them (`interval_widths`)."""
    from hiera_dspy.conclude.finite import min_queries_columns

    big_n = len(machine)
    w = np.ones(big_n, dtype=bool) if holes is None else np.asarray(holes, dtype=bool)
    x_h, sims_h = np.asarray(machine, dtype=float)[w], [np.asarray(y, dtype=float)[w] for y in simulated]
    span_h = None if span is None else (np.asarray(span[0], dtype=float)[w], np.asarray(span[1], dtype=float)[w])
    n_min = predicted_n_min(x_h, sims_h)
    n_min_machine = max(int(min_queries_columns(np.asarray(machine, dtype=float)[:, None])[0]), 29)
    sd = residual_sd(machine, simulated) * inflation
    sd_holes = residual_sd(x_h, sims_h) if w.sum() >= 2 else 0.0

    def sd_at(n: int) -> tuple[float, int]:
        return sd, n - 1

    share = float(w.sum()) / big_n
    sequence = span_h is not None and bounds is not None  # the report's interval: n_min plays no part in it
    ends = sampled_intervals(x_h, sims_h, big_n, n_min, bounds, span=span_h) if w.sum() >= 2 else None
    n_power = None
    if b is not None and sequence and ends is not None:
        if abs(float(np.mean(machine))) >= 1e-12:  # as the report tells a pair apart: its sequence excludes 0
            base = float(np.asarray(machine, dtype=float)[~w].sum()) / big_n
            n_power = n_for_sequence_power(ends, share, base, big_n, level, power, step=step, scale=inflation)
    elif b is not None:
        n_power = n_for_power(float(np.mean(machine)), sd_at, big_n, level, power, step=step)
        n_power = None if n_power is None else max(n_power, min(n_min, big_n))
    if ends is None:  # nothing to sample: the value is known
        n_width = n_sample = 2
    else:
        widths = widths_of(ends, share, level)
        n_width = n_for_interval(lambda n: widths(n, inflation), big_n, width)
        n_sample = None
        if sample_sd is not None:
            scale = sample_sd / sd_holes if sd_holes > 0 else 1.0
            if not sequence and sample_n_min is not None and sample_n_min > n_min:
                widths = interval_widths(x_h, sims_h, big_n, sample_n_min, bounds, level)
            n_sample = n_for_interval(lambda n: widths(n, scale), big_n, width)
    gain = None if strata is None else stratified_gain(x_h, sims_h, np.asarray(strata)[w])
    gain_active = None if weights is None else active_gain(machine, simulated, np.asarray(weights, dtype=float))
    return Line(measure, a, b, float(np.mean(machine)), n_min, sd, n_width, n_power, n_min_machine,
                step if b is not None else None, int(w.sum()), sd_holes, n_sample, gain, gain_active)


def plan(machine: dict[str, dict[str, np.ndarray]], simulated: Sequence[dict[str, dict[str, np.ndarray]]],
         width: float = 0.05, level: float = 0.95, power: float = POWER, inflation: float = 1.0,
         holes: dict[str, dict[str, np.ndarray]] | None = None, bounds: tuple[float, float] | None = METRIC_RANGE,
         sample_sd: dict[tuple, float] | None = None, strata: np.ndarray | None = None,
         sample_n_min: dict[tuple, int] | None = None, weights: np.ndarray | None = None,
         spans: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] | None = None) -> list[Line]:
    """Every system, then every pair, per measure: `machine` is measure -> system -> values over all N queries;
    `simulated` a list of the same built from label sets drawn from the judge's probabilities. Each pair's power is
    planned at its Holm step: the pairs ranked by |machine difference| / residual sd, the clearest tested first at
    alpha / m (Bonferroni's), the k-th at alpha / (m - k + 1) (Holm 1979). `inflation` scales every residual sd;
    `holes` (measure -> system -> whether a hole can change each query) restricts each n_min to those queries (a
    pair's: where either system's can change); `bounds` is a metric's range (a pair's: low - high to high - low);
    `sample_sd` ((measure, a, b) -> a decided sample's residual sd, b None for a system; `sample_n_min` its
    estimate's n_min) gives `n_width_sample`;
    `strata` (each query's stratum, as `--sample stratified` draws them) the predicted `stratified_gain`;
    `weights` (each query's, as `--sample active` draws them) the predicted `active_gain`; `spans` (measure ->
    system -> each query's lowest and highest human value, `hiera_dspy.conclude.ranges.value_ranges`; a pair's:
    low of a minus high of b to high of a minus low of b) the report's interval for every width (`interval_widths`).
    """
    out = []
    sample_sd, sample_n_min = sample_sd or {}, sample_n_min or {}
    pair_bounds = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
    for m, systems in machine.items():
        names = list(systems)
        for s in names:
            out.append(plan_line(m, s, None, systems[s], [sim[m][s] for sim in simulated], width, level, power,
                                 inflation=inflation, holes=None if holes is None else holes[m][s], bounds=bounds,
                                 sample_sd=sample_sd.get((m, s, None)), strata=strata,
                                 sample_n_min=sample_n_min.get((m, s, None)), weights=weights,
                                 span=None if spans is None else spans[m][s]))
        pairs = list(combinations(names, 2))
        diffs = {(s, t): systems[s] - systems[t] for s, t in pairs}
        sims = {(s, t): [sim[m][s] - sim[m][t] for sim in simulated] for s, t in pairs}
        clear = {p: abs(float(np.mean(diffs[p]))) / max(residual_sd(diffs[p], sims[p]), 1e-12) for p in pairs}
        steps = {p: len(pairs) - i for i, p in enumerate(sorted(pairs, key=lambda p: -clear[p]))}
        for p in pairs:
            mask = None if holes is None else np.asarray(holes[m][p[0]]) | np.asarray(holes[m][p[1]])
            out.append(plan_line(m, p[0], p[1], diffs[p], sims[p], width, level, power, steps[p], inflation, mask,
                                 pair_bounds, sample_sd.get((m, p[0], p[1])), strata,
                                 sample_n_min.get((m, p[0], p[1])), weights, pair_span(spans, m, *p)))
    return out


def pair_span(spans: dict | None, measure: str, a: str, b: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The range of the per-query difference a - b from the two systems' ranges (None without ranges)."""
    if spans is None:
        return None
    (lo_a, hi_a), (lo_b, hi_b) = spans[measure][a], spans[measure][b]
    return np.asarray(lo_a) - np.asarray(hi_b), np.asarray(hi_a) - np.asarray(lo_b)


def draw_labels(dists: dict, rng: np.random.Generator) -> dict:
    """One label set drawn from label distributions: key -> {label: probability} in, key -> {drawn label: 1.0}
    out (a label outside a distribution never drawn)."""
    out = {}
    for key, dist in dists.items():
        labels = list(dist)
        probs = np.array([max(float(dist[label]), 0.0) for label in labels])
        out[key] = {labels[int(rng.choice(len(labels), p=probs / probs.sum()))]: 1.0}
    return out
