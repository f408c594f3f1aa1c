"""Coverage of the conclusions at every stage of labelling: a human sample labelled in its order, the estimates after
every `--every` decided queries, on MSRD (binary) and on TREC DL 2020 (grades 0-3), with a judge that gives label
probabilities and one that gives only labels.

    python -m bench.conclusions --staged --dataset msrd --samples 1000            # 400 MSRD queries, samples of 60
    python -m bench.conclusions --staged --dataset trecdl2020 --samples 1000      # 54 TREC DL 2020 queries, of 20

The benchmark (simulated systems over real judgments): MSRD's bundled judgments pool (`--queries` seeded queries with
at least 10 judged movies, one relevant) or TREC DL 2020's qrels (`--trec-qrels`, grades 0-3; read from the shared
data folder by path, never bundled). Each query's judged documents are the candidates; `--systems` systems rank them
by quality * gain + standard normal noise (qualities spread from 0.2 to 2). The sparse qrels are the top 3 of the two
best systems, the holes the rest of every system's top 10; a share `--full` of the queries is judged in full (no
holes: the certainty stratum). The full-judgment value of a system is its metric with every hole given its true grade.

The judges: for each hole a confidence c ~ U(0.55, 0.95), the judge's label the true grade with probability c, else
another grade at random, so its distribution {label: c, the others (1 - c) spread} is right for its label given the
truth (a likelihood, not a posterior: a rare grade it names is right less often than c, so it is not calibrated in the
plan's sense). "probabilities" hands the product that distribution (expected machine values); "labels" only the label
and c (the machine values of the hard labels; the plan's draws spread the rest,
hiera_dspy.conclude.strata.label_distribution). bench/conclusions_plan.py adds "calibrated", "overconfident" and
"correlated" (`judge_records`).

The human sample: `--sample-size` queries, random or stratified (hiera_dspy.benchmark.draws, strata of the judge's
uncertainty), labelled in sample order with the true grades; a query without holes needs no decision. After every
`--every` decided queries with holes (and once the sample is complete) every system's and pair's estimate is the
product's (hiera_dspy.conclude: the certainty stratum known, the domain estimator over the decided queries with
holes, the t interval with the betting interval below the plan's n_min). Per stage the table gives the lowest and
mean coverage of the full-judgment value over systems and over pairs (both measures), the mean interval width of the
systems, and the same for the t interval alone (no betting interval beside it below n_min: what the betting
interval buys, and what it costs in width). Monte-Carlo standard error of a coverage near 0.95 at 1,000 samples: 0.007.
"""

from __future__ import annotations

import gzip
import random
import sys
import time
from itertools import combinations

import numpy as np

from hiera_dspy.benchmark.draws import active_weights, draw_active, draw_stratified
from hiera_dspy.conclude import sequence
from hiera_dspy.conclude.certainty import certain
from hiera_dspy.conclude.finite import columns, scaled
from hiera_dspy.conclude.holes import machine_values_of, predicted_n_mins, simulated_values
from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.conclude.ranges import valid_floor as floor_of
from hiera_dspy.conclude.ranges import value_ranges
from hiera_dspy.conclude.sample_size import active_gain, pair_span
from hiera_dspy.conclude.strata import query_uncertainty, relevance_probability, strata_of
from hiera_dspy.data.msrd_sample import BUNDLED
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import get_scheme

DEPTH, POOL = 10, 3
RANGES = "holes"  # each query's residual range for the sequence: "holes" (its holes') or "metric" ([0, 1])
BEFORE = {"c": 0.75, "prior": 0.25}  # the sequence of 2026-12-06: plain z's (no aligned ranges), these bets
DATASETS = {"msrd": "msrd", "trecdl2020": "trec"}


def read_grades(dataset: str, trec_qrels: str) -> dict[tuple[str, str], int]:
    """(qid, docid) -> grade of MSRD's bundled pool or TREC DL 2020's qrels file."""
    grades = {}
    if dataset == "msrd":
        with gzip.open(BUNDLED / "judgments-pool.tsv.gz", "rt", encoding="utf-8") as fh:
            next(fh)
            for line in fh:
                qid, _, doc, grade = line.rstrip("\n").split("\t")
                grades[(qid, doc)] = int(grade)
    else:
        if not trec_qrels:
            raise SystemExit("--dataset trecdl2020 needs --trec-qrels FILE: TREC DL 2020's qrels (not shipped)")
        with open(trec_qrels, encoding="utf-8") as fh:
            for line in fh:
                qid, _, doc, grade = line.split()
                grades[(qid, doc)] = int(grade)
    return grades


def build(dataset: str, grades: dict, n_queries: int, systems: int, full: float, seed: int) -> dict:
    """The simulated benchmark (see the module): queries, runs, sparse qrels, the holes' true grades."""
    rng = np.random.default_rng(seed)
    scheme = get_scheme(DATASETS[dataset])
    judged: dict[str, list[tuple[str, int]]] = {}
    for (q, d), g in grades.items():
        judged.setdefault(q, []).append((d, g))
    fit = sorted(q for q, dg in judged.items() if len(dg) >= DEPTH and max(g for _, g in dg) >= 1)
    queries = sorted(random.Random(seed).sample(fit, min(n_queries, len(fit))))
    quality = np.linspace(2.0, 0.2, systems)
    runs: dict[str, list[RunLine]] = {f"s{k}": [] for k in range(systems)}
    originals, holes = {}, {}
    whole = set(rng.choice(queries, round(full * len(queries)), replace=False).tolist())
    for q in queries:
        docs = judged[q]
        tops = []
        for k, name in enumerate(runs):
            score = quality[k] * np.array([scheme.gain(g) for _, g in docs]) + rng.normal(0, 1, len(docs))
            order = np.argsort(-score)[:DEPTH]
            runs[name] += [RunLine(q, docs[i][0], r + 1, float(-r), name, 0) for r, i in enumerate(order)]
            tops.append([docs[i] for i in order])
        pooled = {d: g for top in (tops if q in whole else tops[:2]) for d, g in (top if q in whole else top[:POOL])}
        originals |= {(q, d): g for d, g in pooled.items()}
        holes |= {(q, d): g for top in tops for d, g in top if d not in pooled}
    return {"queries": queries, "runs": runs, "originals": originals, "holes": holes, "scheme": scheme}


POSTERIOR = ("calibrated", "overconfident", "correlated")  # judges that state P(grade | their label, the query)


def judge_records(b: dict, kind: str, seed: int) -> list[dict]:
    """The judge's records of the holes (see the module). Its label is the true grade with chance c ~ U(0.55, 0.95),
    else another grade at random; "probabilities" states {label: c, the others (1 - c) spread} (right for its label,
    not Bayes-calibrated: a rare grade it names is right less often than c), "labels" only the label and c.
    "calibrated" states the posterior of the grade given its label, c and the query's grades (the share of each grade
    among the query's holes): calibrated, its holes independent; "overconfident" the same with a quarter of the mass
    off its top grade; "correlated" the posterior with the grades' shares over every hole of the benchmark instead of
    the query's: calibrated over the benchmark, but on a query with more (or fewer) relevant holes than most it is
    wrong the same way on every hole (its errors on a query go together)."""
    rng = np.random.default_rng(seed)
    labels = b["scheme"].labels
    k_labels = len(labels)
    base: dict[str, np.ndarray] = {}
    for (q, _), g in b["holes"].items():
        base.setdefault(q, np.zeros(k_labels))[g] += 1
    overall = sum(base.values())
    out = []
    for (q, d), g in b["holes"].items():
        c = float(rng.uniform(0.55, 0.95))
        label = g if rng.random() < c else int(rng.choice([k for k in range(k_labels) if k != g]))
        dist = np.full(k_labels, (1 - c) / (k_labels - 1))
        dist[label] = c
        if kind in POSTERIOR:
            prior = overall if kind == "correlated" else base[q]
            dist = dist * prior / (dist * prior).sum()
        if kind == "overconfident":
            top = int(np.argmax(dist))
            dist = dist / 4
            dist[top] = 0.0
            dist[top] = 1 - dist.sum()
        rec = {"id": f"{q}:{d}", "query_id": q, "item_id": d, "machine_label": labels[int(np.argmax(dist))],
               "confidence": float(dist.max()), "label": labels[int(np.argmax(dist))], "source": "machine"}
        if kind != "labels":
            rec["distribution"] = {lab: float(p) for lab, p in zip(labels, dist)}
        out.append(rec)
    return out


def plan_spans(b: dict) -> dict:
    """What the product's plan reads of the queries' ranges (hiera_dspy.jobs.planning.plan_run): measure -> system ->
    each query's lowest and highest value (hiera_dspy.conclude.ranges)."""
    scheme, queries = b["scheme"], b["queries"]
    span = {name: value_ranges(lines, queries, list(b["holes"]), b["originals"], scheme, DEPTH)
            for name, lines in b["runs"].items()}
    return {m: {name: span[name][m] for name in b["runs"]} for m in named_measures(scheme, DEPTH)}


def plan_inputs(b: dict, records: list[dict], draws: int = 20) -> tuple[dict, list[dict], dict]:
    """What the product's plan reads (hiera_dspy.jobs.planning.plan_run): measure -> system -> the machine's
    per-query values, `draws` label sets simulated from the judge's probabilities, and measure -> system -> whether
    a hole can change each query."""
    scheme, queries = b["scheme"], b["queries"]
    machine_of, _ = machine_values_of(b["originals"], records, scheme, DEPTH, "expected")
    x = {name: machine_of(lines, queries) for name, lines in b["runs"].items()}
    sure = {name: certain(lines, queries, list(b["holes"]), b["originals"], scheme, DEPTH)
            for name, lines in b["runs"].items()}
    measures = named_measures(scheme, DEPTH)
    sims = simulated_values(b["runs"], b["originals"], records, scheme, DEPTH, draws)
    return ({m: {nm: x[nm][m] for nm in b["runs"]} for m in measures}, sims,
            {m: {nm: ~sure[nm][m] for nm in b["runs"]} for m in measures})


def columns_of(b: dict, records: list[dict]) -> dict:
    """Per measure: names, machine and human values (queries x columns), certainty masks, the plan's n_min; the
    columns are every system, then every pair."""
    scheme, queries = b["scheme"], b["queries"]
    measures = named_measures(scheme, DEPTH)
    machine, sims, holes = plan_inputs(b, records)
    truth = {**b["originals"], **b["holes"]}
    names = list(b["runs"])
    y = {name: per_query(lines, truth, queries, measures) for name, lines in b["runs"].items()}
    n_min = predicted_n_mins(machine, sims, holes)
    spans = plan_spans(b)
    out = {}
    for m in measures:
        cols, X, Y, C, N, LO, HI = [], [], [], [], [], [], []
        for nm in names:
            cols.append(nm)
            X.append(machine[m][nm]), Y.append(y[nm][m]), C.append(~holes[m][nm]), N.append(n_min[(m, nm, None)])
            LO.append(spans[m][nm][0]), HI.append(spans[m][nm][1])
        for a, c in combinations(names, 2):
            cols.append(f"{a}-{c}")
            X.append(machine[m][a] - machine[m][c]), Y.append(y[a][m] - y[c][m])
            C.append(~holes[m][a] & ~holes[m][c]), N.append(n_min[(m, a, c)])
            lo, hi = pair_span(spans, m, a, c)
            LO.append(lo), HI.append(hi)
        out[m] = {"names": cols, "x": np.column_stack(X), "y": np.column_stack(Y), "certain": np.column_stack(C),
                  "n_min": np.array(N), "systems": len(names), "lo": np.column_stack(LO), "hi": np.column_stack(HI)}
    return out


def samples_of(b: dict, records: list[dict], design: str, size: int, count: int, seed: int, strata: int = 4):
    """`count` samples (query indices in sample order) and each query's stratum (None for random and active)."""
    queries = b["queries"]
    if design == "random":
        rng = random.Random(seed)
        return [[queries.index(q) for q in rng.sample(queries, size)] for _ in range(count)], None
    u = query_uncertainty(queries, ((r["query_id"], relevance_probability(r, b["scheme"])) for r in records))
    if design == "active":  # the product's draw (hiera_dspy.benchmark.draws), its weights
        w = active_weights(u)
        index = {q: i for i, q in enumerate(queries)}
        return [[index[q] for q in draw_active(queries, size, seed + s, w)[0]] for s in range(count)], None
    layer = np.zeros(len(queries), dtype=int)
    for h, group in enumerate(strata_of(u, strata)):
        layer[group] = h
    index = {q: i for i, q in enumerate(queries)}
    return [[index[q] for q in draw_stratified(queries, size, seed + s, u, strata)[0]] for s in range(count)], layer


def intervals(c: dict, j: int, decided: list[list[int]], layer, level: float = 0.95, bounded: bool = True,
              horizon: int | None = None):
    """The product's interval of column `j` (hiera_dspy.conclude: the certainty stratum known, the domain estimator
    over the decided queries with holes, strata when `layer` is given) for each sample's `decided` queries with holes
    (all of one size, at least 2): `scaled` Columns, one column per sample; `bounded` False: the t interval alone
    (no betting interval beside it below n_min); `horizon` (a sample's planned size): the report's confidence
    sequence over each query's range (`c["lo"]`, `c["hi"]`), its bets tuned for that size, as
    hiera_dspy.conclude.holes gives it; None: the t interval with the betting interval beside it below n_min."""
    big_n = c["x"].shape[0]
    hole_q = ~c["certain"][:, j]
    n_h = int(hole_q.sum())
    known_sum = c["x"][~hole_q, j].sum()
    ys = np.column_stack([c["y"][dec, j] for dec in decided])
    xs = np.column_stack([c["x"][dec, j] for dec in decided])
    others = [np.setdiff1d(np.flatnonzero(hole_q), dec) for dec in decided]
    rest = np.column_stack([c["x"][o, j] for o in others])
    strata = None
    if layer is not None:
        strata = (np.column_stack([layer[dec] for dec in decided]), np.column_stack([layer[o] for o in others]))
    if not bounded:
        return scaled(columns(ys, xs, rest, level, None, None, strata=strata), n_h / big_n, known_sum / big_n)
    bounds = (0.0, 1.0) if j < c["systems"] else (-1.0, 1.0)
    spans = None
    if horizon is not None:
        rows = [np.concatenate([dec, o]).astype(int) for dec, o in zip(decided, others)]
        spans = (np.column_stack([c["lo"][r, j] for r in rows]), np.column_stack([c["hi"][r, j] for r in rows]),
                 horizon)
    return scaled(columns(ys, xs, rest, level, None, bounds, np.full(len(decided), c["n_min"][j]), strata=strata,
                          spans=spans), n_h / big_n, known_sum / big_n)


def sequence_estimates(c: dict, prefix: list[int], weights, horizon: int, level: float = 0.95, zab=None) -> dict:
    """One sample's estimates of every column of `c` once the queries `prefix` (indices, in draw order, every query
    drawn so far) are decided, by Des Raj's weighting of the draw (`weights`: the active draw's, or all equal for a
    random one; hiera_dspy.conclude.sequence): the confidence sequence ("seq_lo", "seq_hi"; bets tuned for the
    sample's `horizon`; "old_lo", "old_hi" the sequence of 2026-12-06: the plain z's and the bets of `BEFORE`),
    Des Raj's point estimate ("point", from the plain z's) and the switch under this draw ("lo", "hi": the Student-t
    interval of Des Raj's z's, beside the sequence below the plan's n_min, as the product's rule; "t_lo", "t_hi" the
    t interval alone). A query no hole can change for a column has residual 0 and range [0, 0] there. `zab`: the
    increments of a longer prefix of the same draw (the first rows are this prefix's: they are predictable)."""
    from hiera_dspy.conclude.finite import _with_betting

    x, y, cert = c["x"], c["y"], c["certain"]
    big_n, d = x.shape
    if RANGES == "holes":  # each query's range from its holes (hiera_dspy.conclude.ranges)
        lo, hi = np.where(cert, 0.0, c["lo"] - x), np.where(cert, 0.0, c["hi"] - x)
    else:  # the metric's
        low = np.where(np.arange(d) < c["systems"], 0.0, -1.0)
        lo, hi = np.where(cert, 0.0, low - x), np.where(cert, 0.0, 1.0 - x)
    resid = np.where(cert[prefix], 0.0, y[prefix] - x[prefix])
    if zab is None:
        zab = (*sequence.increments(resid, lo, hi, prefix, weights),
               *sequence.increments(resid, lo, hi, prefix, weights, aligned=False))
    z, a, b, plain, p_a, p_b = (v[:len(prefix)] for v in zab)
    left = np.ones(big_n, dtype=bool)
    left[prefix] = False
    seen = resid.sum(axis=0)
    possible = (seen + lo[left].sum(axis=0), seen + hi[left].sum(axis=0))
    seq_lo, seq_hi = sequence.interval(z, a, b, level, horizon, possible)
    old_lo, old_hi = sequence.interval(plain, p_a, p_b, level, horizon, possible, **BEFORE)
    point, half = sequence.des_raj_t(plain, level)
    point = np.clip(point, *possible)
    trusted = (~cert[prefix]).sum(axis=0) >= c["n_min"]
    s_lo, s_hi, _ = _with_betting(point, half, seq_lo, seq_hi, trusted)
    base = x.mean(axis=0)
    out = {"point": point, "seq_lo": seq_lo, "seq_hi": seq_hi, "lo": s_lo, "hi": s_hi, "t_lo": point - half,
           "t_hi": point + half, "old_lo": old_lo, "old_hi": old_hi}
    return {**{k: base + np.clip(v, *possible) / big_n for k, v in out.items()}, "zab": zab}


def oracle_width(points: np.ndarray, truth: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Per column, the narrowest symmetric interval around the estimate that covers `level` of the Monte-Carlo draws
    (rows of `points`, NaN where a sample has no estimate): twice the `level` quantile of |estimate - truth|."""
    with np.errstate(invalid="ignore"):
        return 2 * np.nanquantile(np.abs(points - truth[None, :]), level, axis=0)


def stage_coverage(cols: dict, samples: list[list[int]], layer, every: int, level: float = 0.95,
                   weights=None, horizon: int | None = None) -> list[dict]:
    """Per stage (every `every` decided queries with holes, then the complete sample): coverage and widths of the
    product's switch (t interval, the betting interval beside it below n_min), the t interval alone, and the
    confidence sequence (hiera_dspy.conclude.sequence, bets tuned for `horizon` draws, default the sample's size),
    with the oracle width of each design's point estimate. `weights`: an active draw's (hiera_dspy.benchmark.draws),
    whose estimates are Des Raj's (the switch then the t interval of Des Raj's z's beside the sequence)."""
    any_hole = ~np.all(np.column_stack([c["certain"] for c in cols.values()]), axis=1)
    typical = int(np.median([int(any_hole[s].sum()) for s in samples]))
    stages = [*range(every, typical, every), None]  # None: the whole sample decided; a sample with fewer skipped
    horizon = horizon or len(samples[0])
    out = []
    whole: dict = {}  # (measure, sample) -> the increments of the whole sample
    for k in stages:
        got: dict[str, dict] = {}
        for m, c in cols.items():
            truth = c["y"].mean(axis=0)
            big_n, d = c["x"].shape
            shape = (len(samples), d)
            arr = {key: np.full(shape, np.nan) for key in ("point", "lo", "hi", "t_lo", "t_hi", "seq_lo", "seq_hi",
                                                          "seq_point", "n", "old_lo", "old_hi", "floor")}
            w = np.ones(big_n) if weights is None else weights
            for i, s in enumerate(samples):
                holes_seen = np.cumsum(any_hole[s])
                if k is not None and holes_seen[-1] < k:
                    continue
                upto = len(s) if k is None else int(np.searchsorted(holes_seen, k) + 1)
                if (m, i) not in whole:
                    whole[(m, i)] = sequence_estimates(c, list(s), w, horizon, level, zab=None)["zab"]
                e = sequence_estimates(c, list(s[:upto]), w, horizon, level, whole[(m, i)])
                arr["seq_lo"][i], arr["seq_hi"][i] = e["seq_lo"], e["seq_hi"]
                arr["old_lo"][i], arr["old_hi"][i] = e["old_lo"], e["old_hi"]
                if weights is None:  # the floor's argument is a random draw's
                    arr["floor"][i] = valid_floor(c, (~c["certain"][s[:upto]]).sum(axis=0), level)
                if weights is not None:
                    for key in ("point", "lo", "hi", "t_lo", "t_hi"):
                        arr[key][i] = e[key]
                    arr["seq_point"][i] = e["point"]
            if weights is None:  # the product's estimates of an equal-probability sample
                _switch(c, samples, layer, k, any_hole, level, arr)
                arr["seq_point"] = arr["point"]
                if layer is None:  # a random sample's report: the sequence (hiera_dspy.conclude.finite, spans)
                    arr["rep_lo"], arr["rep_hi"] = arr["seq_lo"], arr["seq_hi"]
                else:  # a stratified one's: the switch of before (its draw order is not a random one's)
                    arr["rep_lo"], arr["rep_hi"] = arr["lo"], arr["hi"]
            else:  # an active sample's report: the sequence (hiera_dspy.conclude.active)
                arr["rep_lo"], arr["rep_hi"] = arr["seq_lo"], arr["seq_hi"]
            got[m] = {"arr": arr, "truth": truth, "systems": c["systems"]}
        out.append(_stage_row(got, k))
    return out


def valid_floor(c: dict, decided, level: float = 0.95) -> np.ndarray:
    """Per column, `hiera_dspy.conclude.ranges.valid_floor` for `decided` (per column) decided queries with holes."""
    x, cert = c["x"], c["certain"]
    out = np.full(x.shape[1], np.nan)
    for j in range(x.shape[1]):
        hole = ~cert[:, j]
        out[j] = floor_of(x[hole, j] - c["lo"][hole, j], c["hi"][hole, j] - x[hole, j], int(decided[j]), x.shape[0],
                          level)
    return out


def _switch(c: dict, samples, layer, k, any_hole, level: float, arr: dict) -> None:
    """The product's switch and t interval alone for every column of `c` and every sample (grouped by the number
    of decided queries with holes: the domain estimator needs at least 2), into `arr`."""
    truth = c["y"].mean(axis=0)
    for j in range(c["x"].shape[1]):
        hole_q = ~c["certain"][:, j]
        groups: dict[int, list] = {}
        for i, s in enumerate(samples):
            ordered = [q for q in s if any_hole[q]]
            if k is not None and len(ordered) < k:
                continue
            decided = [q for q in ordered[:k] if hole_q[q]]
            groups.setdefault(len(decided), []).append((i, decided))
        n_h = int(hole_q.sum())
        for n, members in groups.items():
            rows = [i for i, _ in members]
            arr["n"][rows, j] = n
            if n == n_h:  # every query a hole can change is decided: exact
                for key in ("point", "lo", "hi", "t_lo", "t_hi"):
                    arr[key][rows, j] = truth[j]
                continue
            if n < 2:
                continue
            est = intervals(c, j, [dec for _, dec in members], layer, level)
            arr["point"][rows, j], arr["lo"][rows, j], arr["hi"][rows, j] = est.ppi, est.lo, est.hi
            t = intervals(c, j, [dec for _, dec in members], layer, level, bounded=False)
            arr["t_lo"][rows, j], arr["t_hi"][rows, j] = t.lo, t.hi


def _stage_row(got: dict, k) -> dict:
    """One stage's figures over the measures: lowest and mean coverage over the systems and over the pairs, the
    systems' mean width, of the switch, the t interval alone and the sequence, and the oracle width."""
    def cover(m, lo, hi):
        a, t = got[m]["arr"], got[m]["truth"]
        counted = np.isfinite(a[lo]) & np.isfinite(a[hi])
        hit = (a[lo] - 1e-9 <= t) & (t <= a[hi] + 1e-9)
        return np.where(counted.sum(axis=0) > 0, (hit & counted).sum(axis=0) / np.maximum(counted.sum(axis=0), 1),
                        np.nan)

    def width(lo, hi):
        return float(np.nanmean([np.nanmean((g["arr"][hi] - g["arr"][lo])[:, :g["systems"]]) for g in got.values()]))

    row: dict = {"decided": "all" if k is None else k}
    for name, (lo, hi) in {"": ("lo", "hi"), "t_": ("t_lo", "t_hi"), "seq_": ("seq_lo", "seq_hi"),
                           "rep_": ("rep_lo", "rep_hi"), "old_": ("old_lo", "old_hi")}.items():
        cov = {m: cover(m, lo, hi) for m in got}
        sys_cov = np.concatenate([cov[m][:got[m]["systems"]] for m in got])
        pair_cov = np.concatenate([cov[m][got[m]["systems"]:] for m in got])
        row |= {f"{name}systems_min": float(np.nanmin(sys_cov)), f"{name}systems_mean": float(np.nanmean(sys_cov)),
                f"{name}pairs_min": float(np.nanmin(pair_cov)), f"{name}pairs_mean": float(np.nanmean(pair_cov)),
                f"{name}width": width(lo, hi)}
    row["t_min"] = min(row["t_systems_min"], row["t_pairs_min"])
    row["floor"] = float(np.nanmean([np.nanmean(g["arr"]["floor"][:, :g["systems"]]) for g in got.values()]))
    row["oracle"] = float(np.nanmean([np.nanmean(oracle_width(g["arr"]["point"], g["truth"])[:g["systems"]])
                                      for g in got.values()]))
    return row


def benchmark(args) -> tuple[dict, str]:
    """The simulated benchmark of `args.dataset` (`build`) and its description."""
    b = build(args.dataset, read_grades(args.dataset, args.trec_qrels), args.queries, args.systems, args.full,
              args.seed)
    return b, (f"Dataset {args.dataset}: {len(b['queries'])} queries, {args.systems} systems, {len(b['holes'])} "
               f"holes, {args.full:.0%} of the queries judged in full")


def run(args) -> list[str]:
    """The Markdown table of every cell (judge x design x stage) of `args.dataset`."""
    b, said = benchmark(args)
    head = (f"{said}; samples of {args.sample_size} labelled in order, {args.samples} samples a cell; coverage of a "
            "nominal 95% interval (lowest over the systems and the pairs, both measures), and the systems' mean "
            "width, of: the switch until 2026-12-06 (t interval, betting beside it below n_min), the sequence of "
            "2026-12-06 (plain z's, c = 3/4, prior 1/4), the report now (a random or active sample: the sequence "
            "on aligned ranges; a stratified one: the switch), the t interval alone; oracle: the narrowest symmetric "
            "interval around the design's estimate covering 95% of its draws; floor: the width no valid interval "
            "goes below on a random sample whose residuals are all 0 (`valid_floor`).")
    columns_row = ("| judge | design | decided | switch until 2026-12-06: min | width | sequence of 2026-12-06: min | "
                   "width | report now: min | width | t alone: min | width | oracle | report / oracle | floor |")
    lines = [head, "", columns_row, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for judge in args.judges.split(","):
        records = judge_records(b, judge, args.seed + 1)
        cols = columns_of(b, records)
        for design in args.designs.split(","):
            start = time.time()
            samples, layer = samples_of(b, records, design, args.sample_size, args.samples, args.seed + 2)
            weights = None
            if design == "active":
                u = query_uncertainty(b["queries"], ((r["query_id"], relevance_probability(r, b["scheme"]))
                                                     for r in records))
                weights = np.asarray(active_weights(u))
            for row in stage_coverage(cols, samples, layer, args.every, weights=weights):
                def cell(key: str, r=row) -> str:
                    return f"{min(r[key + 'systems_min'], r[key + 'pairs_min']):.3f} | {r[key + 'width']:.3f}"

                switch = "- | -" if design == "active" else cell("")
                floor = "-" if np.isnan(row["floor"]) else f"{row['floor']:.3f}"
                lines.append(f"| {judge} | {design} | {row['decided']} | {switch} | {cell('old_')} | {cell('rep_')} | "
                             f"{row['t_min']:.3f} | {row['t_width']:.3f} | {row['oracle']:.3f} | "
                             f"{row['rep_width'] / row['oracle']:.2f} | {floor} |")
            print(f"{judge} {design}: {time.time() - start:.0f} s", file=sys.stderr)
            print("\n".join(lines), file=sys.stderr)
    return lines


def active_headroom(cols: dict, weights, floor: float = sequence.FLOOR) -> dict:
    """How much an active draw with `weights` (N,) could narrow the estimate, over every system's residual y - x
    (both measures): the median over the columns of the plan's `active_gain` (1 - sqrt(V_active / V_random), one
    draw with replacement, Cochran 1977, 9A.6) on the true residuals; over all N queries ("all", a sampled query
    without holes counts) and over the queries with holes alone ("holes": the same number of decided queries).
    Beside it the same for the ideal weights sqrt(mean over the columns of r_i^2), which no judge knows, and
    Spearman's correlation of `weights` with the mean |r_i| over the columns on the queries with holes."""
    from scipy.stats import spearmanr

    resid = np.column_stack([np.where(c["certain"], 0.0, c["y"] - c["x"])[:, :c["systems"]] for c in cols.values()])
    holes = ~np.all(np.column_stack([c["certain"] for c in cols.values()]), axis=1)
    ideal = np.sqrt((resid ** 2).mean(axis=1))
    weights = np.asarray(weights, dtype=float)

    def gain(w, rows) -> float:
        return float(np.median([active_gain(np.zeros(int(rows.sum())), [resid[rows, j]], w[rows], floor)
                                for j in range(resid.shape[1])]))

    every = np.ones(len(holes), dtype=bool)
    w_h, r_h = weights[holes], np.abs(resid).mean(axis=1)[holes]
    rho = float(spearmanr(w_h, r_h).statistic) if np.ptp(w_h) > 0 and np.ptp(r_h) > 0 else float("nan")
    return {"spearman": rho, "all": gain(weights, every), "holes": gain(weights, holes),
            "ideal_all": gain(ideal, every), "ideal_holes": gain(ideal, holes)}


def active_check(args) -> list[str]:
    """The Markdown table of `active_headroom` per judge, for the product's active weights at its floor and at 0.1."""
    b, said = benchmark(args)
    lines = [f"{said}. Predicted narrowing of the estimate's spread by an active draw (1 - sqrt(V_active / "
             "V_random), median over the systems and both measures, on the true residuals) against a random draw "
             "of as many queries (all) or of as many queries with holes (holes); ideal: weights sqrt(mean r^2) "
             "from the truth.", "",
             "| judge | floor | Spearman(weight, mean abs residual) | all | holes | ideal: all | ideal: holes |",
             "|---|---|---|---|---|---|---|"]
    for judge in args.judges.split(","):
        records = judge_records(b, judge, args.seed + 1)
        cols = columns_of(b, records)
        u = query_uncertainty(b["queries"], ((r["query_id"], relevance_probability(r, b["scheme"]))
                                             for r in records))
        for floor in (sequence.FLOOR, 0.1):
            h = active_headroom(cols, active_weights(u), floor)
            lines.append(f"| {judge} | {floor} | {h['spearman']:.3f} | {h['all']:.1%} | {h['holes']:.1%} | "
                         f"{h['ideal_all']:.1%} | {h['ideal_holes']:.1%} |")
    return lines

