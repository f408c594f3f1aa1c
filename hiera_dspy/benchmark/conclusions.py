"""What a holes labelling run does for its conclusions: checking the --human-sample request, drawing the sample into
the run, and at every export sample.jsonl, the summary's estimates and the report's section (docs/conclusions.md).

The statistics are `hiera_dspy.conclude` (pure); the sample `hiera_dspy.benchmark.sample`, its table
`hiera_dspy.review.sample_log`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hiera_dspy.benchmark.draws import DEFAULT_STRATA, check_stratified
from hiera_dspy.benchmark.pair_conclusions import conclude as pair_conclude
from hiera_dspy.benchmark.pair_conclusions import draw_pair_sample
from hiera_dspy.benchmark.sample import count, ensure, parse_size
from hiera_dspy.conclude.forest import draw
from hiera_dspy.conclude.holes import conclusions, holes_by_query, population
from hiera_dspy.conclude.report import section
from hiera_dspy.conclude.strata import query_uncertainty, relevance_probability
from hiera_dspy.errors import HieraError, RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.review.exports import records_of, write_jsonl
from hiera_dspy.review.pair_sample import read_pair_sample
from hiera_dspy.review.sample_log import SampleLog
from hiera_dspy.store.pairs_file import read_pairs_file
from hiera_dspy.store.run_settings import RunSettings

UNITS = ("query", "pair")  # what a person's sample is made of: whole queries, or single holes
PAIR_DESIGNS = ("random", "weighted", "active")
FOREST = ("\n![Every system's estimate with its interval, the human sample's alone and the machine-only value; the "
          "ranking before filling and by the estimate](forest.png)\n")


def check_sample_size(queries: list[str], human_sample: str | None, sample: str | None, strata: int | None,
                      ci: float, unit: str = "query") -> None:
    """Refuse a bad --human-sample, --sample/--strata, --sample-unit or --ci before anything is judged (a
    `RequestError`)."""
    if not 0 < ci < 1:
        raise RequestError(f"--ci {ci}: give a confidence level between 0 and 1, e.g. 0.95")
    if unit not in UNITS:
        raise RequestError(f"--sample-unit {unit!r}: give one of {', '.join(UNITS)}")
    if unit == "pair":
        if strata is not None or (sample or "random") not in PAIR_DESIGNS:
            raise RequestError(f"--sample-unit pair draws single holes: --sample {' | '.join(PAIR_DESIGNS)}, no "
                               "--strata")
        return
    if sample == "weighted":
        raise RequestError("--sample weighted draws single holes: give --sample-unit pair too")
    if strata is not None and (strata < 1 or sample != "stratified"):
        raise RequestError(f"--strata {strata}: give --sample stratified and at least 1 stratum "
                           f"(default {DEFAULT_STRATA})")
    if human_sample is None:
        return
    try:
        n = count(parse_size(human_sample), len(queries))
        if sample == "stratified":
            check_stratified(n, strata or DEFAULT_STRATA)
    except HieraError as exc:
        raise RequestError(str(exc)) from None


def draw_human_sample(store, settings: RunSettings, runs: dict, originals: dict, scheme: LabelScheme, depth: int,
                      unit: str, size: str | None, seed: int, method: str | None, strata: int | None,
                      machine_values: str = "expected") -> None:
    """The human sample of the holes run of `settings` (the systems' `runs`, the benchmark's `originals` qrels): kept
    if stored, else drawn now from the judged holes, so call it after judging; single holes (`unit` pair,
    `pair_conclusions.draw_pair_sample`) or whole queries (`draw_sample`). Says which on stderr."""
    if unit == "pair":
        draw_pair_sample(store, settings, runs, originals, scheme, depth, size, seed, method, machine_values)
    else:
        draw_sample(store, settings, population(runs), scheme, size, seed, method, strata)


def draw_sample(store, settings: RunSettings, queries: list[str], scheme: LabelScheme, human_sample: str | None,
                seed: int, sample: str | None, strata: int | None) -> None:
    """The sample of the run of `settings`: kept if stored, else drawn now (with `human_sample`, --human-sample; a
    stratified draw from the judgments of the run's holes, so call it after judging); says which on stderr."""
    run_id = settings.run_id

    def uncertainty():
        return query_uncertainty(queries, ((r["query_id"], relevance_probability(r, scheme))
                                           for r in records_of(store, settings)))

    log = SampleLog(store.path)
    try:
        before = log.get(run_id)
        drawn = ensure(log, run_id, queries, human_sample, seed, sample, strata, uncertainty)
    except HieraError as exc:
        raise RequestError(str(exc)) from None
    finally:
        log.close()
    if drawn is not None:
        verb = "kept (never redrawn)" if before else "drawn"
        how = (f"stratified over {drawn.strata} strata of the judge's uncertainty, {drawn.allocation} per stratum"
               if drawn.method == "stratified" else drawn.method)
        print(f"human sample of run {run_id} {verb}: {len(drawn.queries)} queries ({drawn.requested}, {how}, seed "
              f"{drawn.seed}); label them: python -m eval.review --run {run_id}", file=sys.stderr)


def conclude(summary: dict, store, run_id: str, runs: dict, originals: dict, records: list[dict],
             scheme: LabelScheme, depth: int, level: float, out: Path,
             machine_values: str = "expected") -> tuple[list[Path], str]:
    """Add the conclusions to `summary` (per run "estimates", "differences", "human_sample", "conclusions"), write
    OUT/forest.png (`hiera_dspy.conclude.forest`) and OUT/sample.jsonl when the run has a sample; returns (written
    paths, the report's Markdown section, which links the plot)."""
    pairs_drawn = read_pair_sample(store.path, run_id)
    if pairs_drawn is not None:  # --sample-unit pair: single holes (hiera_dspy.benchmark.pair_conclusions)
        return pair_conclude(summary, pairs_drawn, runs, originals, records, scheme, depth, level, out,
                             machine_values)
    log = SampleLog(store.path)
    try:
        sample = log.get(run_id)
    finally:
        log.close()
    c = conclusions(runs, originals, records, sample, scheme, depth, level, machine_values)
    for row in summary["runs"]:
        row["estimates"] = c["estimates"][row["run"]]
    summary |= {"differences": c["differences"], "human_sample": c["human_sample"],
                "conclusions": {k: c[k] for k in ("level", "correction", "queries", "measures", "ranking", "machine_values",
                                                "soft_holes")} | {"unit": "query"}}
    before = {row["run"]: {m: row.get(f"{m}_before") for m in c["measures"]} for row in summary["runs"]}
    written = [draw(c, before, out / "forest.png")]
    if sample is not None:
        pairs = read_pairs_file(out)
        by_query, decided = holes_by_query(records), {r["id"] for r in records if r.get("source") == "human"}
        rows = [{"id": p, "query_id": pairs[p]["query_id"], "item_id": pairs[p]["item_id"], "query": pairs[p]["query"],
                 "item_title": pairs[p]["item_title"], "item_text": pairs[p]["item_text"], "decided": p in decided}
                for q in sample.queries for p in by_query.get(q, []) if p in pairs]
        written.append(write_jsonl(out / "sample.jsonl", rows))
    return written, "\n" + section(c) + FOREST

