"""Both units of the human sample at equal judgments: whole queries (every hole of a sampled query) against single
holes (`--sample-unit pair`, hiera_dspy.conclude.pair_sample), on the simulated benchmark of
bench/conclusions_staged.py (MSRD binary, TREC DL 2020 grades 0-3).

    python -m bench.conclusions --staged --units query,pair --dataset trecdl2020 --trec-qrels QRELS --samples 20
    python -m bench.conclusions --staged --units query,pair --dataset msrd --samples 20

Per seed: the query unit draws a random order of the queries (hiera_dspy.benchmark.draws) and decides them whole; after
J judgments the decided queries are the longest prefix whose holes number at most J, and the report's interval is
the confidence sequence over the queries' ranges (bets tuned for the sample that reaches the largest J,
bench/conclusions_staged.sequence_estimates). The pair unit draws holes i.i.d. under each design (random, weighted,
active) until the largest J distinct holes, and decides them in order; after J judgments the estimate is the
product's (hiera_dspy.conclude.pair_sample.intervals: the sequence with its bets tuned for the largest J, the
fixed-n t interval reported at that J). The "t" column is the fixed-n interval a person who planned J judgments
would be given at J. The reference is each system's metric (and each pair's difference) with every hole given its
true grade. Per stage: coverage (lowest over columns, and mean) of systems and pairs, both measures; the systems'
mean nDCG@k width of the reported interval, of the t interval, and the oracle width (the 95% quantile of the
point estimate's error over seeds, twice); the query unit's valid floor (hiera_dspy.conclude.ranges.valid_floor);
zero-width intervals; the plan's judgments for the fixed-n width reached (hiera_dspy.conclude.pair_plan, from the
judge's probabilities before labelling) over the judgments that reached it (median over systems and measures); seconds
per step (estimating every column of both measures, both intervals).
"""

from __future__ import annotations

import random
import time

import numpy as np

from bench.conclusions_staged import DEPTH, build, columns_of, judge_records, read_grades, sequence_estimates
from bench.conclusions_staged import valid_floor as floor_of_columns
from hiera_dspy.conclude import pair_plan
from hiera_dspy.conclude import pair_sample as ps
from hiera_dspy.conclude.holes import machine_dists
from hiera_dspy.conclude.per_query import named_measures, per_query


def truths(b: dict) -> dict:
    """measure -> (S + pairs,) the reference: every hole its true grade."""
    truth_q = {**b["originals"], **b["holes"]}
    measures = named_measures(b["scheme"], DEPTH)
    per = {name: per_query(lines, truth_q, b["queries"], measures) for name, lines in b["runs"].items()}
    names = list(b["runs"])
    out = {}
    for m in measures:
        v = np.array([per[n][m].mean() for n in names])
        out[m] = np.concatenate([v, [v[a] - v[c] for a in range(len(v)) for c in range(a + 1, len(v))]])
    return out


def human_values(b: dict, pop: ps.Population) -> np.ndarray:
    """(H, measures) each hole's true value of each measure's variable (gain, relevance)."""
    scheme = b["scheme"]
    threshold = scheme.labels.index(scheme.threshold)
    grade = np.array([b["holes"][k] for k in pop.keys])
    cols = [np.array([scheme.gain(int(g)) for g in grade]) if pop.variable[m] == "gain"
            else (grade >= threshold).astype(float) for m in pop.measures]
    return np.column_stack(cols)


def prefix_of(draws: list[int], judgments: int) -> list[int]:
    """The draws before the first draw of the (judgments + 1)-th distinct hole."""
    seen: set[int] = set()
    for j, h in enumerate(draws):
        if h not in seen and len(seen) == judgments:
            return draws[:j]
        seen.add(h)
    return draws


def pair_unit(b: dict, records: list[dict], design: str, stages: list[int], seeds: int, level: float) -> list[dict]:
    """Per stage the pair unit's figures under `design` (see the module)."""
    dists, _ = machine_dists(b["originals"], records, b["scheme"])
    pop = ps.population(b["runs"], dists, list(b["holes"]), b["queries"], b["scheme"], DEPTH)
    _, mat = ps.columns(pop)
    p = ps.design_probabilities(pop, design)
    human = human_values(b, pop)
    truth = truths(b)
    s = len(pop.systems)
    got: dict = {k: {m: {"lo": [], "hi": [], "t_lo": [], "t_hi": [], "point": []} for m in pop.measures}
                 for k in stages}
    seconds = []
    for seed in range(seeds):
        started = time.perf_counter()
        draws = ps.draw(p, max(stages), seed)
        seconds.append(time.perf_counter() - started)
        for k in stages:
            used = prefix_of(draws, k)
            started = time.perf_counter()
            for j, m in enumerate(pop.measures):
                reported = ps.intervals(pop, m, mat, p, used, human[:, j], level, max(stages))
                fixed = ps.intervals(pop, m, mat, p, used, human[:, j], level, k).ci
                g = got[k][m]
                g["lo"].append(reported.ci[0]), g["hi"].append(reported.ci[1])
                g["t_lo"].append(fixed[0]), g["t_hi"].append(fixed[1]), g["point"].append(reported.point)
            seconds.append(time.perf_counter() - started)
    rows = [_row(got[k], truth, s, k, float(np.median(seconds)), None) for k in stages]
    for row, k in zip(rows, stages):
        row["plan"] = plan_ratio(pop, p, mat, got[k], k, level)
    return rows


def plan_ratio(pop: ps.Population, p: np.ndarray, mat: np.ndarray, got: dict, judgments: int, level: float) -> float:
    """The plan's judgments for the width the fixed-n interval had after `judgments` (mean over seeds, per system and
    measure; hiera_dspy.conclude.pair_plan from the judge's probabilities alone) over `judgments`: the median over
    the systems and measures (1.00: the plan asked for exactly what labelling needed)."""
    s = len(pop.systems)
    ratios = []
    for m in pop.measures:
        width = np.mean(np.array(got[m]["t_hi"]) - np.array(got[m]["t_lo"]), axis=0)[:s]
        sd = ps.predicted_sd(pop.weights[m] @ mat[:, :s], pop.spread[m], p)
        need = pair_plan.draws_for_width(sd, width, level)
        ratios += [pair_plan.judgments_after(p, float(d)) / judgments for d in need]
    return float(np.median(ratios))


def query_unit(b: dict, records: list[dict], stages: list[int], seeds: int, level: float) -> list[dict]:
    """Per stage the query unit's figures (random whole queries; see the module)."""
    cols = columns_of(b, records)
    queries = b["queries"]
    holes_of = {q: 0 for q in queries}
    for q, _ in b["holes"]:
        holes_of[q] += 1
    measures = list(cols)
    truth = {m: cols[m]["y"].mean(axis=0) for m in measures}
    got: dict = {k: {m: {"lo": [], "hi": [], "t_lo": [], "t_hi": [], "point": [], "floor": []} for m in measures}
                 for k in stages}
    seconds = []
    for seed in range(seeds):
        order = [queries.index(q) for q in random.Random(seed).sample(queries, len(queries))]
        spent = np.cumsum([holes_of[queries[i]] for i in order])
        horizon = int(np.searchsorted(spent, max(stages), side="right"))
        for k in stages:
            upto = int(np.searchsorted(spent, k, side="right"))
            started = time.perf_counter()
            for m in measures:
                c = cols[m]
                g = got[k][m]
                if upto < 1:
                    g["lo"].append(np.full(c["x"].shape[1], np.nan)), g["hi"].append(np.full(c["x"].shape[1], np.nan))
                    continue
                e = sequence_estimates(c, order[:upto], np.ones(len(queries)), max(horizon, upto), level)
                g["lo"].append(e["seq_lo"]), g["hi"].append(e["seq_hi"])
                g["t_lo"].append(e["t_lo"]), g["t_hi"].append(e["t_hi"]), g["point"].append(e["point"])
                g["floor"].append(floor_of_columns(c, (~c["certain"][order[:upto]]).sum(axis=0), level))
            seconds.append(time.perf_counter() - started)
    systems = cols[measures[0]]["systems"]
    return [_row(got[k], truth, systems, k, float(np.median(seconds)), "floor") for k in stages]


def _row(got: dict, truth: dict, s: int, k: int, seconds: float, floor: str | None) -> dict:
    cover_s, cover_p, zero = [], [], 0
    for m, g in got.items():
        lo, hi = np.array(g["lo"]), np.array(g["hi"])
        hit = (lo - 1e-9 <= truth[m]) & (truth[m] <= hi + 1e-9)
        ok = np.isfinite(lo)
        cov = np.where(ok.sum(axis=0) > 0, (hit & ok).sum(axis=0) / np.maximum(ok.sum(axis=0), 1), np.nan)
        cover_s.append(cov[:s]), cover_p.append(cov[s:])
        zero += int(np.sum(ok & (hi - lo <= 1e-12)))
    m = next(iter(got))  # nDCG@k
    g = got[m]

    def width(lo, hi):
        return float(np.nanmean((np.array(g[hi]) - np.array(g[lo]))[:, :s])) if g[lo] else float("nan")

    pts = np.array(g["point"]) if g["point"] else np.full((1, len(truth[m])), np.nan)
    oracle = float(np.nanmean(2 * np.nanquantile(np.abs(pts - truth[m][None, :]), 0.95, axis=0)[:s]))
    sys_c, pair_c = np.concatenate(cover_s), np.concatenate(cover_p)
    return {"judgments": k, "systems_min": float(np.nanmin(sys_c)), "systems_mean": float(np.nanmean(sys_c)),
            "pairs_min": float(np.nanmin(pair_c)) if pair_c.size else float("nan"),
            "pairs_mean": float(np.nanmean(pair_c)) if pair_c.size else float("nan"),
            "width": width("lo", "hi"), "t_width": width("t_lo", "t_hi"), "oracle": oracle,
            "floor": float(np.nanmean(np.array(g["floor"])[:, :s])) if floor and g.get("floor") else float("nan"),
            "zero": zero, "seconds": seconds}


def run(args) -> str:
    """The table of both units (see the module), in Markdown."""
    grades = read_grades(args.dataset, args.trec_qrels)
    b = build(args.dataset, grades, args.queries, args.systems, args.full, args.seed)
    records = judge_records(b, args.judge, args.seed)
    stages = [int(x) for x in args.judgments.split(",")]
    designs = [d for d in args.designs.split(",") if d in ps.DESIGNS]
    lines = [f"{args.dataset}: {len(b['queries'])} queries, {len(b['runs'])} systems, {len(b['holes'])} holes "
             f"(judge {args.judge}, {args.samples} seeds, level {args.level}); nDCG@{DEPTH} widths, coverage over "
             "nDCG and P, systems and pairs", "",
             "| unit | design | judgments | systems cover (min / mean) | pairs cover (min / mean) | width | t width | "
             "width / oracle | valid floor | zero-width | plan n / needed | s a step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    plans = []
    if "query" in args.units:
        plans.append(("query", "random", query_unit(b, records, stages, args.samples, args.level)))
    if "pair" in args.units:
        plans += [("pair", d, pair_unit(b, records, d, stages, args.samples, args.level)) for d in designs]
    for unit, design, rows in plans:
        for r in rows:
            lines.append(f"| {unit} | {design} | {r['judgments']} | {r['systems_min']:.3f} / {r['systems_mean']:.3f} "
                         f"| {r['pairs_min']:.3f} / {r['pairs_mean']:.3f} | {r['width']:.3f} | {r['t_width']:.3f} | "
                         f"{r['width'] / r['oracle']:.2f} | {_num(r['floor'])} | {r['zero']} | {_num(r.get('plan', np.nan), '.2f')} "
                         f"| {r['seconds']:.2f} |")
    return "\n".join(lines) + "\n"


def _num(x: float, spec: str = ".3f") -> str:
    return "-" if not np.isfinite(x) else format(x, spec)
