"""Judge a labelled split and score it (what `python -m eval.run` does). The program replicas an engine rebuilds from
the request (`Replica`), the dataset loaded again (`SourceLoader`) and the cost forecast (`forecast_cost`) are what
every job sets up: `hiera_dspy.jobs.preparing`."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.data.known_evidence import handed_over, read_evidence
from hiera_dspy.engines import judge as run_engine
from hiera_dspy.jobs.preparing import (
    SourceLoader,
    begin_run,
    build_program,
    forecast_cost,
    judging_job,
    load_data,
    open_store,
    output_folder,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.jobs.requests import JudgeRequest
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.records import Judgment
from hiera_dspy.review.known_report import known_summary
from hiera_dspy.runs.outputs import write_outputs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows, wall_clock


@dataclass
class Judged:
    """A judged split: its run id, metrics (scikit-learn's over the whole split, errors and cost beside), the rows
    (streamed from the store when iterated), the one-line summary with embed-lr's reference, and the output folder.
    On a dry run only `estimate` is set."""

    run_id: str
    metrics: dict | None = None
    rows: Sequence[Judgment] = ()
    summary: str = ""
    out: Path | None = None
    store: Path | None = None
    method: str = ""
    estimate: dict | None = None


def judge(request: JudgeRequest) -> Judged:
    """Judge one split with one method or compiled judge into the run store (resuming what is there), write
    OUT/metrics.json, predictions.jsonl and config.json, and return the metrics; with `judging.dry_run`, the estimate."""
    started = time.time()  # the true time a pair: the whole job's wall time over the pairs it judged
    j = request.judging
    if request.out:
        output_folder(request.out)
    store = open_store(j.run.store)
    dataset = load_data(request.data)
    pairs = dataset.split(request.split, j.limit)
    program, lms, knowledge = build_program(j, dataset)
    split = request.split or dataset.default_split
    if not j.judge:  # a fresh program that learns from data (a cascade's tau: part of the run's identity)
        prepare_fresh(program, dataset, split)
    known = request.known
    evidence = read_evidence(known.path, known.on_overlap, dataset, pairs, known.kind)
    handed = handed_over(program, evidence, pairs)  # before any pair: the judge reads its queries' known judgments once
    use = None if handed is None else handed.use
    spec = RunSpec.judging(program, dataset=request.data.dataset, split=split, lms=lms, knowledge=knowledge.name,
                           judge=j.judge,
                           extra=evidence.identity(use["reads"], use.get("demos")) if evidence and use else None)
    # the limit is not part of the id: a larger limit later resumes the same run and judges only the new pairs; the
    # scheme is kept beside the identity (config.json too), so the run's labels read back without --labels
    identity = {**spec.identity(), "limit": j.limit, "scheme": dataset.scheme.to_dict()}
    run_id = j.run.run_id or spec.run_id
    if j.dry_run:  # nothing is sent and no run starts; a pilot of this run in the store gives the delegation rate
        return Judged(run_id, estimate=forecast_cost(program, pairs, lms, j.dry_run, knowledge.name, store.rows(run_id)))
    begin_run(store, run_id, identity, j.run.wait, may_differ=("limit", "scheme"))
    count = len(pairs) if isinstance(pairs, list) else "all the"  # a large JSONL split is read lazily
    print(f"run {run_id}: {count} pairs of {request.data.dataset} [{split}] with {program.method} "
          f"(LMs {spec.lms}, knowledge {knowledge.name})", file=sys.stderr)
    rows = run_engine(j.engine, judging_job(j, program, pairs, store, run_id, lms, split, SourceLoader(request.data),
                                            evidence, handed))
    from hiera_dspy.metrics.reference import ReferenceScorer, agreement_cis, summarize  # scipy: judge's alone

    labels, cut = list(dataset.scheme.labels), dataset.scheme.binary_from
    queries = {p.id: p.query_id for p in pairs} if isinstance(pairs, list) else None  # a lazy split: by pair only
    metrics = (metrics_from_rows(rows, labels, cut) | wall_clock(rows, started)
               | agreement_cis(rows, labels, cut, queries))
    metrics["run_id"] = run_id
    metrics["skipped_rows"] = skipped_rows(dataset)
    if use is not None:
        metrics["known"] = use
        print(known_summary(use), file=sys.stderr)
    summary, metrics["reference"] = summarize(rows, labels, ReferenceScorer(dataset), pairs, program.method, cut)
    out = output_folder(request.out or runs_dir() / run_id)
    write_outputs(out, {**identity, "skipped_rows": metrics["skipped_rows"]}, metrics, rows)
    return Judged(run_id, metrics, rows, summary, out, store.path, program.method)
