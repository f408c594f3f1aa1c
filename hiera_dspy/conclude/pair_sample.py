"""Conclusions from a human sample of single holes (`--sample-unit pair`): each system's metric and each pairwise
difference as the machine's value plus inverse-probability-weighted human corrections, with intervals valid after
every judgment.

**The estimand.** A system's mean metric over the benchmark's queries with every hole given a person's label. P@k is
linear in the holes' relevance; nDCG@k = DCG / IDCG is a ratio whose normaliser depends on the labels too, so it is
linearised around the machine's expected gains (the delta method, Särndal, Swensson and Wretman, *Model Assisted
Survey Sampling*, 1992, section 5.5): d nDCG / d g_i = disc_s(i) / IDCG - DCG * idisc(i) / IDCG^2, disc_s(i) the
discount of hole i's rank in system s's top k (0 outside it) and idisc(i) the discount of its place in the ideal
ranking of the machine's expected gains. The estimand is then

    theta_s = M_s + sum_i w_s(i) (y_i - yhat_i),

M_s the machine's value (`hiera_dspy.conclude.expected`), w_s(i) the hole's linear weight over the number of queries,
y_i its human gain (relevance for P@k) and yhat_i the machine's expected one. For P@k it is exact; for nDCG@k exact
to first order, the rest the second-order change of the ideal ranking (measured in bench/conclusions_pair.py).

**The design** (`design_probabilities`): holes are drawn i.i.d. with replacement with probabilities p_i (Hansen and
Hurwitz, "On the theory of sampling from finite populations", AMS 1943), so any prefix of the draws is itself a
sample of the design: a person may stop after any judgment. `random`: p uniform; `weighted`: p in proportion to
the hole's weight in the estimated metrics (half the sum over systems of |w_s(i)|, half its largest share of one
system's, each measure counted alike: the rank-dependent inclusion of statAP, Aslam, Pavlu and Yilmaz, SIGIR 2006,
made defensive for every system), a tenth spread evenly so every hole can be drawn; `active`: half of that, half in proportion to weight times the judge's standard deviation of the hole's value
(Zrnic and Candès, "Active statistical inference", ICML 2024).

**The estimator.** Each draw j of hole h gives Z_j = w(h) (y_h - yhat_h) / p_h, i.i.d. with mean the correction
(Hansen-Hurwitz; the difference or GREG estimator with the machine as the auxiliary variable, PPI's form for
unequal probabilities). A hole drawn twice is judged once. The estimate is M + mean(Z) over the draws before the
first undecided hole (the decided prefix). The confidence sequence of `hiera_dspy.conclude.sequence` (Waudby-Smith
and Ramdas's betting) holds at every step at once on the aligned draws Z' = sum_i o_i + (w (y - yhat) - o) / p
(offsets o known before drawing, `sequence.aligned_offsets`: every hole's range of Z' the same, so the range the
bets must respect is the widest hole's, not the hull of all; the mean is unchanged). At the sample size fixed before labelling (`--human-sample N`
judgments, or the plan's) the fixed-n Student-t interval of the mean of Z (scipy) is reported, the sequence beside
it. Both are clipped to what the undecided holes allow, so neither is zero-width while a hole that matters is
undecided.

Pure: arrays and records in, JSON-ready dicts out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

from hiera_dspy.conclude import sequence
from hiera_dspy.conclude.expected import Dist, gains
from hiera_dspy.conclude.ppi import holm_steps
from hiera_dspy.conclude.retrieval import measure_key, top_k
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import LabelScheme

DESIGNS = ("random", "weighted", "active")
EVEN = 0.1  # the share of `weighted`'s probability spread evenly over the holes
ACTIVE = 0.5  # the share of `active`'s probability that follows the judge's uncertainty
PRIOR_HOLES = 5.0  # the judge's own probabilities, counted as this many decided holes of each class
SETS = 40  # label sets drawn from the judge for nDCG's linearisation remainder
PRIOR_STEPS = 1.0
SPREAD_FLOOR = 0.1  # the fixed-n interval's prior: no hole's sd below this share of its range (a sure judge too)  # the fixed-n interval's variance: the plan's, counted as this many draws beside the sample's


@dataclass
class Population:
    """The holes (`keys`: (qid, docid), in run order) and what the estimators need of them: per measure the
    systems' machine values (S,), each hole's linear weight in each system's mean (H, S), whether the measure reads
    the hole's gain or its relevance, the machine's expected value of that (H,), its range (lo, hi), and the judge's
    standard deviation of it (H,)."""
    keys: list[tuple[str, str]]
    systems: list[str]
    machine: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]
    variable: dict[str, str]
    expected: dict[str, np.ndarray]
    ranges: dict[str, tuple[float, float]]
    spread: dict[str, np.ndarray]
    queries: int
    probs: np.ndarray  # (H, K) the judge's label probabilities
    grades: np.ndarray  # (K,) the labels' gains
    parts: list  # per judged query: (gains, hole index or -1, (docs, S) discounts of each system's top k)
    ndcg: str  # the nDCG measure's key

    @property
    def measures(self) -> list[str]:
        """The measures' keys, nDCG@k first."""
        return list(self.weights)


def _moments(dist: Dist | None, scheme: LabelScheme) -> tuple[float, float, float, float]:
    """(expected gain, its sd, probability relevant, its sd) of a label distribution (None: an unjudged document)."""
    if dist is None:
        return 0.0, 0.0, 0.0, 0.0
    g, rel = gains(dist, scheme)
    probs = np.array([max(float(dist.get(label, 0.0)), 0.0) for label in scheme.labels])
    probs /= probs.sum()
    values = np.array([scheme.gain(i) for i in range(len(probs))])
    var = float(probs @ (values - g) ** 2)
    return g, math.sqrt(max(var, 0.0)), rel, math.sqrt(max(rel * (1 - rel), 0.0))


def population(runs: dict[str, list], dists: dict[tuple[str, str], Dist], holes: Sequence[tuple[str, str]],
               queries: Sequence[str], scheme: LabelScheme, depth: int) -> Population:
    """The holes' linear weights in every system's nDCG@depth and P@depth (see the module), from the runs, the
    machine's label distributions (the originals one-hot, a hole's judge distribution; a hole without one is
    unjudged), the holes and the benchmark's queries."""
    keys = list(holes)
    index = {k: i for i, k in enumerate(keys)}
    systems = list(runs)
    n_h, n_s, n_q = len(keys), len(systems), max(len(queries), 1)
    moments = np.array([_moments(dists.get(k), scheme) for k in keys]).reshape(n_h, 4)
    judged: dict[str, dict[str, float]] = {}
    relevant: dict[str, dict[str, float]] = {}
    for (q, d), dist in dists.items():
        g, rel = gains(dist, scheme)
        judged.setdefault(q, {})[d] = g
        relevant.setdefault(q, {})[d] = rel
    disc = 1.0 / np.log2(np.arange(depth) + 2.0)
    nd, pk = measure_key("ndcg", depth), measure_key("p", depth)
    w = {nd: np.zeros((n_h, n_s)), pk: np.zeros((n_h, n_s))}
    machine = {nd: np.zeros(n_s), pk: np.zeros(n_s)}
    ideal: dict[str, tuple[float, dict[str, float]]] = {}
    for q, got in judged.items():
        order = sorted(got.items(), key=lambda x: -x[1])[:depth]
        ideal[q] = (sum(g * disc[r] for r, (_, g) in enumerate(order)),
                    {d: float(disc[r]) for r, (d, _) in enumerate(order)})
    tops = {name: top_k(runs[name], depth) for name in systems}
    parts = []
    for q, got in judged.items():
        docs = list(got)
        where = {d: i for i, d in enumerate(docs)}
        a = np.zeros((len(docs), n_s))
        for s, name in enumerate(systems):
            for r, d in enumerate(tops[name].get(q, [])[:depth]):
                if d in where:
                    a[where[d], s] = disc[r]
        parts.append((np.array([got[d] for d in docs]), np.array([index.get((q, d), -1) for d in docs]), a))
    probs = np.array([_probs(dists.get(k), scheme) for k in keys]).reshape(n_h, len(scheme.labels))
    for s, name in enumerate(systems):
        for q, docs in tops[name].items():
            shown = judged.get(q)
            if not shown:
                continue
            rel_sum = 0.0
            for r, d in enumerate(docs[:depth]):
                h = index.get((q, d))
                rel_sum += relevant[q].get(d, 0.0)
                if h is not None:
                    w[pk][h, s] += 1.0 / depth
            machine[pk][s] += rel_sum / depth
            best, idisc = ideal[q]
            if best <= 0:
                continue
            dcg = sum(shown.get(d, 0.0) * disc[r] for r, d in enumerate(docs[:depth]))
            machine[nd][s] += dcg / best
            for r, d in enumerate(docs[:depth]):
                if (h := index.get((q, d))) is not None:
                    w[nd][h, s] += disc[r] / best
            for d, i_disc in idisc.items():
                if (h := index.get((q, d))) is not None:
                    w[nd][h, s] -= dcg * i_disc / best ** 2
    top = scheme.gain(len(scheme.labels) - 1)
    return Population(keys, systems, {m: v / n_q for m, v in machine.items()},
                      {m: v / n_q for m, v in w.items()}, {nd: "gain", pk: "relevance"},
                      {nd: moments[:, 0], pk: moments[:, 2]}, {nd: (scheme.gain(0), top), pk: (0.0, 1.0)},
                      {nd: moments[:, 1], pk: moments[:, 3]}, len(queries), probs,
                      np.array([scheme.gain(i) for i in range(len(scheme.labels))], dtype=float), parts, nd)


def _probs(dist: Dist | None, scheme: LabelScheme) -> list[float]:
    """A hole's label probabilities in the scheme's order (None: certainly the lowest label, unjudged)."""
    if dist is None:
        return [1.0] + [0.0] * (len(scheme.labels) - 1)
    p = np.array([max(float(dist.get(label, 0.0)), 0.0) for label in scheme.labels])
    return (p / p.sum()).tolist()


def ndcg_values(pop: Population, hole_gains: np.ndarray) -> np.ndarray:
    """Every system's mean nDCG (sets, S) with the holes' gains `hole_gains` (sets, H): the exact, nonlinear value."""
    k = len(pop.parts[0][2]) if pop.parts else 0
    sets = hole_gains.shape[0]
    out = np.zeros((sets, len(pop.systems)))
    depth_disc = None
    for base, hole, a in pop.parts:
        g = np.broadcast_to(base, (sets, len(base))).copy()
        mask = hole >= 0
        g[:, mask] = hole_gains[:, hole[mask]]
        if depth_disc is None or len(depth_disc) < g.shape[1]:
            depth_disc = 1.0 / np.log2(np.arange(max(g.shape[1], 1)) + 2.0)
        cut = min(g.shape[1], _depth(pop))
        best = (-np.sort(-g, axis=1))[:, :cut] @ depth_disc[:cut]
        with np.errstate(divide="ignore", invalid="ignore"):
            out += np.where(best[:, None] > 0, (g @ a) / best[:, None], 0.0)
    del k
    return out / max(pop.queries, 1)


def _depth(pop: Population) -> int:
    return int(pop.ndcg.split("@")[1]) if pop.ndcg else 10


def recalibrated(pop: Population, human: np.ndarray, decided: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The holes' label probabilities (H, K) recalibrated on the decided holes: within each class of the judge's
    most likely label, the judge's probabilities times the ratio of the decided holes' grade shares (weighted by
    1 / p, Hansen-Hurwitz; the class's mean judge probabilities counted as `PRIOR_HOLES` holes) to the judge's mean,
    renormalised. A judge whose probabilities are right is left as it is; one that is wrong the same way across a
    class is corrected by what the person decided."""
    probs = pop.probs
    k = probs.shape[1]
    klass = probs.argmax(axis=1)
    grade = np.abs(human[:, None] - pop.grades[None, :]).argmin(axis=1)
    out = probs.copy()
    for c in range(k):
        members = klass == c
        if not members.any():
            continue
        mean = probs[members].mean(axis=0)
        seen = members & decided
        counts = PRIOR_HOLES * mean
        if seen.any():
            w = 1.0 / p[seen]
            counts = counts + np.bincount(grade[seen], weights=w / w.sum() * seen.sum(), minlength=k)
        share = counts / counts.sum()
        ratio = np.where(mean > 0, share / np.maximum(mean, 1e-12), 0.0)
        adj = probs[members] * ratio[None, :]
        out[members] = adj / np.maximum(adj.sum(axis=1, keepdims=True), 1e-12)
    return out


def _by_query(pop: Population, probs: np.ndarray, grade: np.ndarray, decided: np.ndarray,
              p: np.ndarray) -> np.ndarray:
    """`recalibrated`'s second level: within each query, the probabilities times the ratio of its decided holes'
    grade shares (weighted by 1 / p; the query's mean probabilities counted as `PRIOR_HOLES` holes) to its mean: a
    judge's errors on one query go together, and the nDCG remainder of a query follows its own grades."""
    k = probs.shape[1]
    out = probs.copy()
    query = np.array([q for q, _ in pop.keys])
    for q in np.unique(query[decided]) if decided.any() else []:
        members = query == q
        mean = probs[members].mean(axis=0)
        seen = members & decided
        w = 1.0 / p[seen]
        counts = PRIOR_HOLES * mean + np.bincount(grade[seen], weights=w / w.sum() * seen.sum(), minlength=k)
        ratio = np.where(mean > 0, counts / counts.sum() / np.maximum(mean, 1e-12), 0.0)
        adj = probs[members] * ratio[None, :]
        out[members] = adj / np.maximum(adj.sum(axis=1, keepdims=True), 1e-12)
    return out


def remainder(pop: Population, human: np.ndarray, decided: np.ndarray, mat: np.ndarray, p: np.ndarray,
              sets: int = SETS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """nDCG's linearisation remainder (exact value less the linear one) per column: (its mean, a half-width) over
    `sets` label sets with the decided holes at their human gain and the rest drawn from the judge's probabilities
    recalibrated on the decided holes, by class (`recalibrated`) and then by query (`_by_query`): the second-order
    part of the estimand, which the human draws do not see. The half-width holds 95% of the remainder's spread plus
    how far the query level moved its mean from the class level's (the recalibration's own uncertainty)."""
    grade = np.abs(human[:, None] - pop.grades[None, :]).argmin(axis=1)
    by_class = recalibrated(pop, human, decided, p)
    by_query = _by_query(pop, by_class, grade, decided, p)
    u = np.random.default_rng(seed).random((sets, len(pop.keys)))
    rems = []
    for probs in (by_query, by_class):
        cum = np.cumsum(probs, axis=1)
        labels = np.minimum((u[:, :, None] > cum[None, :, :]).sum(axis=2), pop.probs.shape[1] - 1)
        g = pop.grades[labels]
        g[:, decided] = human[decided]
        exact = ndcg_values(pop, g)
        linear = pop.machine[pop.ndcg][None, :] + (g - pop.expected[pop.ndcg][None, :]) @ pop.weights[pop.ndcg]
        rems.append((exact - linear) @ mat)
    rem, coarse = rems
    mid = rem.mean(axis=0)
    return mid, np.quantile(np.abs(rem - mid), 0.95, axis=0) + np.abs(mid - coarse.mean(axis=0))


def hole_weight(pop: Population) -> np.ndarray:
    """Each hole's weight in the estimated metrics: per measure, half the sum over systems of |w_s(i)| as a share of
    all holes' and half the largest over systems of its share of that system's |w_s| (so a hole only one system
    ranks high is not drawn rarely: its correction's range over p stays bounded for every system), the measures'
    weights averaged."""
    out = np.zeros(len(pop.keys))
    even = np.full(len(pop.keys), 1.0 / max(len(pop.keys), 1))
    for m in pop.measures:
        a = np.abs(pop.weights[m])
        total = a.sum(axis=1)
        per = (a / np.where(a.sum(axis=0) > 0, a.sum(axis=0), 1.0)[None, :]).max(axis=1) if a.size else total
        for v in (total, per):
            out += (v / v.sum() if v.sum() > 0 else even) / 2
    return out / max(len(pop.measures), 1)


def design_probabilities(pop: Population, design: str) -> np.ndarray:
    """Each hole's probability of being drawn at each draw (sums to 1; every one positive): see the module."""
    n = len(pop.keys)
    even = np.full(n, 1.0 / n)
    if design == "random":
        return even
    weight = hole_weight(pop)
    weighted = (1 - EVEN) * weight + EVEN * even
    if design == "weighted":
        return weighted
    if design != "active":
        raise RequestError(f"--sample {design!r}: give one of {', '.join(DESIGNS)}")
    sure = np.zeros(n)
    for m in pop.measures:
        lo, hi = pop.ranges[m]
        a = np.abs(pop.weights[m]).sum(axis=1) * pop.spread[m] / max(hi - lo, 1e-12)
        sure += a / a.sum() if a.sum() > 0 else even
    sure /= max(len(pop.measures), 1)
    return ACTIVE * sure + (1 - ACTIVE) * weighted


def draw(probabilities: np.ndarray, judgments: int, seed: int) -> list[int]:
    """Hole indices drawn i.i.d. with `probabilities` (numpy's generator, seeded) until `judgments` distinct holes
    are drawn (at most all): the draw sequence, repeats kept (each counts in the estimate; a person judges once)."""
    p = np.asarray(probabilities, dtype=float)
    want = min(int(judgments), int(np.count_nonzero(p > 0)))
    rng = np.random.default_rng(seed)
    out: list[int] = []
    seen: set[int] = set()
    while len(seen) < want:
        chunk = rng.choice(len(p), size=max(64, 2 * (want - len(seen))), p=p / p.sum())
        for h in chunk.tolist():
            if len(seen) >= want and h not in seen:
                break
            out.append(h)
            seen.add(h)
        else:
            continue
        break
    return out


def decided_prefix(draws: Sequence[int], decided: np.ndarray) -> int:
    """How many draws the estimate uses: those before the first draw of an undecided hole."""
    for j, h in enumerate(draws):
        if not decided[h]:
            return j
    return len(draws)


def columns(pop: Population) -> tuple[list[tuple[str, str | None]], np.ndarray]:
    """(the columns: (system, None) each system, then (a, b) each pair a before b; the (S, C) matrix that maps the
    systems' weights to the columns')."""
    s = len(pop.systems)
    pairs = list(combinations(range(s), 2))
    mat = np.zeros((s, s + len(pairs)))
    mat[np.arange(s), np.arange(s)] = 1.0
    for c, (a, b) in enumerate(pairs):
        mat[a, s + c], mat[b, s + c] = 1.0, -1.0
    return [(n, None) for n in pop.systems] + [(pop.systems[a], pop.systems[b]) for a, b in pairs], mat


@dataclass
class Intervals:
    """Per column of one measure: machine value, point estimate, the confidence sequence, the fixed-n t interval
    (None before the planned size), the reported interval, its p-value of 0 (pairs), the sd of Z, and how many more
    judgments would tell a pair apart."""
    machine: np.ndarray
    point: np.ndarray
    seq: tuple[np.ndarray, np.ndarray]
    fixed: tuple[np.ndarray, np.ndarray] | None
    ci: tuple[np.ndarray, np.ndarray]
    p: np.ndarray
    sd: np.ndarray
    possible: tuple[np.ndarray, np.ndarray]


def z_ranges(w: np.ndarray, expected: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Per hole and column, the lowest and highest correction w (y - yhat) its label allows."""
    a, b = w * (lo - expected)[:, None], w * (hi - expected)[:, None]
    return np.minimum(a, b), np.maximum(a, b)


def predicted_sd(w: np.ndarray, spread: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The sd of Z a column is expected to have under the judge's own distributions (holes independent, the machine's
    expected value its mean): sqrt(sum_i w_i^2 v_i / p_i), the plan's figure."""
    return np.sqrt(((w ** 2) * (spread ** 2)[:, None] / p[:, None]).sum(axis=0))


def intervals(pop: Population, m: str, mat: np.ndarray, p: np.ndarray, draws: Sequence[int], human: np.ndarray,
              level: float = 0.95, horizon: int | None = None) -> Intervals:
    """The estimates of every column of measure `m` from the decided prefix `draws` (hole indices, in draw order;
    every one decided) and `human` (H,) each hole's human value (gain or relevance; NaN undecided). `horizon` the
    planned number of judgments: the sequence's bets are tuned for it, and once the distinct decided holes reach it
    the fixed-n interval is reported."""
    from scipy.stats import t as student

    w = pop.weights[m] @ mat
    yhat = pop.expected[m]
    lo, hi = pop.ranges[m]
    low, high = z_ranges(w, yhat, lo, hi)
    idx = np.asarray(draws, dtype=int)
    done = np.zeros(len(yhat), dtype=bool)
    done[idx] = True
    resid = np.where(done, np.nan_to_num(human - yhat), 0.0)
    exact = (w * resid[:, None]).sum(axis=0)
    possible = (exact + low[~done].sum(axis=0), exact + high[~done].sum(axis=0))
    machine = pop.machine[m] @ mat
    prior_sd = predicted_sd(w, np.maximum(pop.spread[m], SPREAD_FLOOR * (hi - lo)), p)
    n = len(idx)
    if n == 0:
        shift, room = _second_order(pop, m, human, done, mat, p)
        mid = np.clip(np.zeros_like(machine), *possible) + shift
        bounds = (machine + possible[0] + shift - room, machine + possible[1] + shift + room)
        return Intervals(machine, machine + mid, bounds, None, bounds, np.ones_like(machine), prior_sd,
                         possible)
    z = w[idx] * resid[idx][:, None] / p[idx][:, None]
    offset, low_z, high_z = sequence.aligned_offsets(low, high, p[:, None], np.ones(len(p), dtype=bool))
    base = offset.sum(axis=0)
    z_al = base[None, :] + (w[idx] * resid[idx][:, None] - offset[idx]) / p[idx][:, None]
    a, b = np.broadcast_to(base + low_z, z.shape), np.broadcast_to(base + high_z, z.shape)
    s_lo, s_hi = sequence.interval(z_al, a, b, level, horizon, possible)
    point = np.clip(z.mean(axis=0), *possible)
    var = z.var(axis=0, ddof=1) if n > 1 else np.zeros(z.shape[1])
    sd = np.sqrt((max(n - 1, 0) * var + PRIOR_STEPS * prior_sd ** 2) / (max(n - 1, 0) + PRIOR_STEPS))
    df = max(n - 1, 1)
    half = student.ppf(1 - (1 - level) / 2, df) * sd / math.sqrt(n)
    fixed = None
    seq_p = sequence.p_value(z_al, a, b, 0.0, level, horizon) if mat.shape[1] else np.ones(0)
    ci_lo, ci_hi, pval = s_lo, s_hi, seq_p
    if horizon is not None and int(np.count_nonzero(done)) >= horizon:
        f_lo, f_hi = np.maximum(point - half, possible[0]), np.minimum(point + half, possible[1])
        fixed = (machine + f_lo, machine + f_hi)
        ci_lo, ci_hi = f_lo, f_hi
        with np.errstate(divide="ignore", invalid="ignore"):
            tstat = np.where(sd > 0, np.abs(z.mean(axis=0)) / (sd / math.sqrt(n)), np.inf)
        pval = 2 * student.sf(tstat, df)
    shift, room = _second_order(pop, m, human, done, mat, p)
    if fixed is not None:
        fixed = (fixed[0] + shift - room, fixed[1] + shift + room)
    return Intervals(machine, machine + point + shift, (machine + s_lo + shift - room, machine + s_hi + shift + room),
                     fixed, (machine + ci_lo + shift - room, machine + ci_hi + shift + room), pval, sd, possible)


def _second_order(pop: Population, m: str, human: np.ndarray, done: np.ndarray, mat: np.ndarray, p: np.ndarray):
    """(shift, half-width) of the estimate for nDCG's linearisation remainder (`remainder`); zeros for P@k."""
    if m != pop.ndcg or not pop.parts:
        return 0.0, 0.0
    return remainder(pop, np.nan_to_num(human), done, mat, p)


def more_judgments(diff: float, sd: float, n: int, level: float, step: int, power: float = 0.8) -> int | None:
    """Judgments beyond `n` after which the pair's t interval at its Holm step (alpha / step) would exclude 0 with
    `power`, if the difference is what it is estimated now: ((z_{alpha/2step} + z_power) sd / |diff|)^2 - n."""
    if abs(diff) < 1e-12 or not np.isfinite(sd):
        return None
    need = (_z_sum(level, max(step, 1), power) * sd / abs(diff)) ** 2
    return max(0, math.ceil(need - n))


@lru_cache(maxsize=4096)
def _z_sum(level: float, step: int, power: float) -> float:
    """z_{alpha / 2 step} + z_power (scipy), cached: every pair of a report asks it."""
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / step / 2) + norm.ppf(power))


def conclusions(pop: Population, p: np.ndarray, draws: Sequence[int], human: np.ndarray, level: float = 0.95,
                horizon: int | None = None) -> dict:
    """{"estimates": run -> measure -> fields, "differences": [...]} in the summary's shape (`ppi`, `ci` the
    reported estimate and interval; `sequence`, `fixed_n` the two intervals; `n` the distinct decided holes, `draws`
    the draws used, `N` the holes, `unit` "pair"). `human` (H, measures) per measure's variable."""
    names, mat = columns(pop)
    s = len(pop.systems)
    used = list(draws)
    n_judged = len(set(used))
    estimates: dict[str, dict] = {name: {} for name in pop.systems}
    differences = []
    for k, m in enumerate(pop.measures):
        r = intervals(pop, m, mat, p, used, human[:, k], level, horizon)
        rule = "fixed-n" if r.fixed is not None else "sequence"
        rows = []
        for c, (a, b) in enumerate(names):
            row: dict = {"machine": float(r.machine[c]), "ppi": float(r.point[c]),
                   "ci": [float(r.ci[0][c]), float(r.ci[1][c])],
                   "sequence": [float(r.seq[0][c]), float(r.seq[1][c])],
                   "fixed_n": None if r.fixed is None else [float(r.fixed[0][c]), float(r.fixed[1][c])],
                   "human_only": None, "human_only_ci": None, "n": n_judged, "draws": len(used),
                   "N": len(pop.keys), "unit": "pair", "rule": rule, "sd": float(r.sd[c]), "lam": None,
                   "n_min": None, "estimand": "benchmark", "holes": len(pop.keys),
                   "note": None if used else "no judgment decided yet: the interval is the range the holes allow"}
            rows.append(row)
            if b is None:
                estimates[a][m] = row
        pair_p: list[float | None] = [float(r.p[c]) for c in range(s, len(names))]
        steps = holm_steps(pair_p)
        adjusted = _holm([float(x) for x in pair_p if x is not None])
        for c, (a, b) in enumerate(names[s:]):
            row = rows[s + c]
            told = adjusted[c] < 1 - level
            differences.append({"a": a, "b": b, "measure": m, "ppi": row["ppi"], "ci": row["ci"], "p": adjusted[c],
                                "p_unadjusted": pair_p[c], **{k2: row[k2] for k2 in (
                                    "machine", "human_only", "human_only_ci", "n", "N", "n_min", "note", "rule",
                                    "estimand", "sd", "holes", "sequence", "fixed_n", "draws", "unit")},
                                "more_queries": None,
                                "more_judgments": 0 if told else more_judgments(float(row["ppi"]), float(row["sd"]), len(used), level,
                                                                                steps[c])})
    return {"estimates": estimates, "differences": differences}


def _holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the given order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out
