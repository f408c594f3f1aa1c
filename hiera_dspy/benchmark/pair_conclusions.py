"""What a holes run with `--sample-unit pair` does for its conclusions: drawing the single-hole sample after judging,
and at every export sample.jsonl (the holes in decision order), the summary's estimates and the report's section.

The statistics are `hiera_dspy.conclude.pair_sample` (pure); the stored sample `hiera_dspy.review.pair_sample`.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from hiera_dspy.conclude import calibration, pair_report
from hiera_dspy.conclude import pair_sample as ps
from hiera_dspy.conclude.expected import one_hot
from hiera_dspy.conclude.holes import CORRECTION, machine_dists, population
from hiera_dspy.errors import HieraError, RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.review.exports import records_of, write_jsonl
from hiera_dspy.review.pair_sample import PairSample, PairSampleLog
from hiera_dspy.store.pairs_file import read_pairs_file
from hiera_dspy.store.run_settings import RunSettings


def population_of(runs: dict, originals: dict, records: list[dict], scheme: LabelScheme, depth: int,
                  machine_values: str = "expected") -> ps.Population:
    """The holes of the run's records with their weights in every system's metrics (`pair_sample.population`);
    `machine_values` "labels": the judge's hard labels in place of its probabilities."""
    dists, _ = machine_dists(originals, records, scheme)
    if machine_values == "labels":
        dists = {k: v for k, v in dists.items() if k in originals} | {
            (r["query_id"], r["item_id"]): one_hot(scheme.labels.index(r["machine_label"]), scheme)
            for r in records if r.get("machine_label")}
    holes = [(r["query_id"], r["item_id"]) for r in records]
    return ps.population(runs, dists, holes, population(runs), scheme, depth)


def draw_pair_sample(store, settings: RunSettings, runs: dict, originals: dict, scheme: LabelScheme, depth: int,
                     requested: str | None, seed: int, method: str | None, machine_values: str = "expected") -> None:
    """The pair sample of the run of `settings`: kept if stored, else drawn now from the judged holes (call it after
    judging); says which on stderr. RequestError for a request that differs from the stored sample or cannot be
    met."""
    run_id = settings.run_id
    method_given = method
    method = method or "random"
    if method not in ps.DESIGNS:
        raise RequestError(f"--sample {method} with --sample-unit pair: give one of {', '.join(ps.DESIGNS)}")
    log = PairSampleLog(store.path)
    try:
        stored = log.get(run_id)
        if stored is not None:
            check_same(stored, run_id, requested, seed, method_given)
            verb, sample = "kept (never redrawn)", stored
        elif requested is None:
            return
        else:
            records = [r for r in records_of(store, settings) if (r["query_id"], r["item_id"]) not in originals]
            n = judgments(requested, len(records))  # the population's holes are the records, one each
            pop = population_of(runs, originals, records, scheme, depth, machine_values)
            p = ps.design_probabilities(pop, method)
            ids = [r["id"] for r in records]
            draws = ps.draw(p, n, seed)
            sample = log.save(run_id, PairSample([ids[h] for h in draws], seed, method, str(requested).strip(),
                                                 dict(zip(ids, p.tolist()))))
            verb = "drawn"
    except HieraError as exc:
        raise RequestError(str(exc)) from None
    finally:
        log.close()
    print(f"human sample of run {run_id} {verb}: {len(sample.order)} holes to judge (--sample-unit pair, "
          f"{sample.method}, seed {sample.seed}); judge them: python -m eval.review --run {run_id}", file=sys.stderr)


def conclusions(sample: PairSample, runs: dict, originals: dict, records: list[dict], scheme: LabelScheme,
                depth: int, level: float = 0.95, machine_values: str = "expected") -> dict:
    """The conclusions dict (as `hiera_dspy.conclude.holes.conclusions` gives for a query sample) of a pair sample
    and the run's records (a person's decisions have source "human")."""
    pop = population_of(runs, originals, records, scheme, depth, machine_values)
    index = {r["id"]: i for i, r in enumerate(records)}
    threshold = scheme.labels.index(scheme.threshold)
    human = np.full((len(records), len(pop.measures)), np.nan)
    for i, r in enumerate(records):
        if r.get("source") == "human" and r.get("label") in scheme.labels:
            g = scheme.labels.index(r["label"])
            human[i] = [scheme.gain(g) if pop.variable[m] == "gain" else float(g >= threshold) for m in pop.measures]
    p = np.array([sample.probabilities.get(r["id"], 0.0) for r in records])
    if np.any(p <= 0):
        raise HieraError(f"{int(np.sum(p <= 0))} holes of the run have no probability in its pair sample: the run's "
                         "holes changed since the sample was drawn; start another run")
    draws = [index[d] for d in sample.draws if d in index]
    decided = ~np.isnan(human[:, 0])
    used = draws[:ps.decided_prefix(draws, decided)]
    horizon = len(sample.order)
    c = ps.conclusions(pop, p, used, human, level, horizon)
    ranking = {m: sorted(runs, key=lambda n: -c["estimates"][n][m]["ppi"]) for m in pop.measures}
    order = sample.order
    decided_ids = {records[h]["id"] for h in used}
    state = {"unit": "pair", "method": sample.method, "seed": sample.seed, "requested": sample.requested,
             "judgments": horizon, "decided": len(decided_ids), "remaining": horizon - len(decided_ids),
             "draws": len(sample.draws), "draws_used": len(used), "holes": len(pop.keys),
             "decided_outside_order": int(sum(1 for i in order if i in index and decided[index[i]]
                                              and i not in decided_ids))}
    return {"level": level, "correction": CORRECTION, "queries": pop.queries, "measures": pop.measures,
            "human_sample": state, "estimates": c["estimates"], "differences": c["differences"], "ranking": ranking,
            "machine_values": machine_values, "soft_holes": sum(1 for r in records if r.get("distribution")),
            "calibration": calibration.check(records, sorted({r["query_id"] for r in records
                                                               if r["id"] in decided_ids}), scheme)}


def conclude(summary: dict, sample: PairSample, runs: dict, originals: dict, records: list[dict],
             scheme: LabelScheme, depth: int, level: float, out: Path,
             machine_values: str = "expected") -> tuple[list[Path], str]:
    """Add a pair sample's conclusions to `summary` and write OUT/sample.jsonl (the holes in decision order); returns
    (written paths, the report's section)."""
    c = conclusions(sample, runs, originals, records, scheme, depth, level, machine_values)
    for row in summary["runs"]:
        row["estimates"] = c["estimates"][row["run"]]
    summary |= {"differences": c["differences"], "human_sample": c["human_sample"],
                "conclusions": {k: c[k] for k in ("level", "correction", "queries", "measures", "ranking",
                                                "machine_values", "soft_holes")} | {"unit": "pair"}}
    pairs = read_pairs_file(out)
    decided = {r["id"] for r in records if r.get("source") == "human"}
    draws: dict[str, int] = {}
    for d in sample.draws:
        draws[d] = draws.get(d, 0) + 1
    rows = [{"id": p, "query_id": pairs[p]["query_id"], "item_id": pairs[p]["item_id"], "query": pairs[p]["query"],
             "item_title": pairs[p]["item_title"], "item_text": pairs[p]["item_text"], "decided": p in decided,
             "probability": sample.probabilities.get(p), "draws": draws[p]} for p in sample.order if p in pairs]
    return [write_jsonl(out / "sample.jsonl", rows)], "\n" + pair_report.section(c)


def judgments(requested: str, holes: int) -> int:
    """How many judgments `--human-sample N|P%` asks for out of `holes` (a percentage rounds up); HieraError when
    more than the holes."""
    raw = str(requested).strip()
    try:
        value = float(raw[:-1]) if raw.endswith("%") else int(raw)
    except ValueError:
        raise HieraError(f"--human-sample {requested!r}: give a number of judgments (200) or a percentage of the "
                         "holes (10%)") from None
    n = max(1, math.ceil(value * holes / 100 - 1e-9)) if raw.endswith("%") else int(value)
    if n < 1 or n > holes:
        raise HieraError(f"--human-sample {requested} with --sample-unit pair: the run has {holes} holes; ask for "
                         f"between 1 and {holes} judgments (or a percentage)")
    return n

def check_same(stored: PairSample, run_id: str, requested: str | None, seed: int, method: str | None) -> None:
    """HieraError if a rerun asks for another pair sample than the stored one (never redrawn)."""
    asked: dict[str, tuple] = {"--sample": (method, stored.method)}
    if requested is not None:
        asked |= {"--human-sample": (str(requested).strip(), stored.requested), "--sample-seed": (seed, stored.seed)}
    differ = [k for k, (a, b) in asked.items() if a is not None and a != b]
    if differ:
        raise HieraError(f"run {run_id} already has a pair sample ({stored.requested} judgments, {stored.method}, "
                         f"seed {stored.seed}) and a sample is never redrawn; this request differs in "
                         f"{', '.join(differ)}. Rerun with the same options (or none), or start another run")
