"""What a holes labelling run does for its conclusions: the --human-sample options, drawing the sample into the run, and at
every export sample.jsonl, the summary's estimates and the report's section (docs/conclusions.md).

The statistics are `hiera_dspy.conclude` (pure); the sample and its table `hiera_dspy.labelling.sample`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hiera_dspy.conclude.holes import MACHINE_VALUES, conclusions, holes_by_query
from hiera_dspy.conclude.report import section
from hiera_dspy.conclude.strata import query_uncertainty, relevance_probability
from hiera_dspy.errors import HieraError
from hiera_dspy.labelling.draws import DEFAULT_STRATA, check_stratified
from hiera_dspy.labelling.sample import METHODS, SampleLog, count, ensure, parse_size
from hiera_dspy.labels import LabelScheme


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    """--human-sample, --sample-seed, --sample, --strata, --ci and --machine-values."""
    g = p.add_argument_group("conclusions (prediction-powered inference; docs/conclusions.md)")
    g.add_argument("--human-sample", metavar="N|P%", type=sample_size,
                   help="draw a sample of N queries (or P%% of them; see --sample) whose every hole a person "
                        "labels; drawn once and kept in the run")
    g.add_argument("--sample-seed", type=int, default=0, help="seed of the human sample (default 0; recorded)")
    g.add_argument("--sample", default=None, choices=list(METHODS),
                   help="how the sample is drawn: random (default; uniformly) or stratified (proportionally over "
                        "--strata strata of the judge's uncertainty per query, drawn after judging); recorded")
    g.add_argument("--strata", type=int, default=None,
                   help=f"number of strata of --sample stratified (default {DEFAULT_STRATA}; recorded)")
    g.add_argument("--ci", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--machine-values", default="expected", choices=list(MACHINE_VALUES),
                   help="the machine's per-query metric: expected under the judge's label probabilities (default; "
                        "a hole without them counts its label) or from its hard labels")


def sample_size(text: str) -> str:
    """argparse type of --human-sample: the text itself when `parse_size` takes it (N >= 1 queries, or P% in
    (0, 100]); else an argparse error (exit status 2)."""
    try:
        parse_size(text)
    except HieraError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--human-sample {text!r}: ")) from None
    return text


def check_sample_size(args, queries: list[str]) -> None:
    """Refuse a bad --human-sample, --strata or --ci before anything is judged."""
    if not 0 < args.ci < 1:
        raise SystemExit(f"error: --ci {args.ci}: give a confidence level between 0 and 1, e.g. 0.95")
    if args.strata is not None and (args.strata < 1 or args.sample != "stratified"):
        raise SystemExit(f"error: --strata {args.strata}: give --sample stratified and at least 1 stratum "
                         f"(default {DEFAULT_STRATA})")
    if args.human_sample is None:
        return
    try:
        n = count(parse_size(args.human_sample), len(queries))
        if args.sample == "stratified":
            check_stratified(n, args.strata or DEFAULT_STRATA)
    except HieraError as exc:
        raise SystemExit(f"error: {exc}") from None


def draw_sample(args, store, run_id: str, queries: list[str], scheme: LabelScheme) -> None:
    """The run's sample: kept if stored, else drawn now (with --human-sample; a stratified draw from the judgments of
    the run's holes, so call it after judging); says which on stderr."""
    from hiera_dspy.labelling.exports import records_of

    def uncertainty():
        return query_uncertainty(queries, ((r["query_id"], relevance_probability(r, scheme))
                                           for r in records_of(store, run_id)))

    log = SampleLog(store.path)
    try:
        before = log.get(run_id)
        sample = ensure(log, run_id, queries, args.human_sample, args.sample_seed, args.sample, args.strata,
                        uncertainty)
    except HieraError as exc:
        raise SystemExit(f"error: {exc}") from None
    finally:
        log.close()
    if sample is not None:
        verb = "kept (never redrawn)" if before else "drawn"
        how = (f"stratified over {sample.strata} strata of the judge's uncertainty, {sample.allocation} per stratum"
               if sample.method == "stratified" else sample.method)
        print(f"human sample of run {run_id} {verb}: {len(sample.queries)} queries ({sample.requested}, {how}, seed "
              f"{sample.seed}); label them: python -m eval.review --run {run_id}", file=sys.stderr)


def conclude(summary: dict, store, run_id: str, runs: dict, originals: dict, records: list[dict],
             scheme: LabelScheme, depth: int, level: float, out: Path,
             machine_values: str = "expected") -> tuple[list[Path], str]:
    """Add the conclusions to `summary` (per run "estimates", "differences", "human_sample", "conclusions"), write
    OUT/sample.jsonl when the run has a sample; returns (written paths, the report's Markdown section)."""
    from hiera_dspy.labelling.exports import read_pairs_file, write_jsonl

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
                                                "soft_holes")}}
    written = []
    if sample is not None:
        pairs = read_pairs_file(out)
        by_query, decided = holes_by_query(records), {r["id"] for r in records if r.get("source") == "human"}
        rows = [{"id": p, "query_id": pairs[p]["query_id"], "item_id": pairs[p]["item_id"], "query": pairs[p]["query"],
                 "item_title": pairs[p]["item_title"], "item_text": pairs[p]["item_text"], "decided": p in decided}
                for q in sample.queries for p in by_query.get(q, []) if p in pairs]
        written.append(write_jsonl(out / "sample.jsonl", rows))
    return written, "\n" + section(c)

