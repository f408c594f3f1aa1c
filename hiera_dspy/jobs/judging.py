"""Judge a labelled split and score it (what `python -m eval.run` does), and the program replicas an engine rebuilds
from the request (`Replica`: a Ray actor's program, at its own endpoint)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hiera_dspy.data import Dataset
from hiera_dspy.data.known import Known
from hiera_dspy.data.known_evidence import Evidence, hand_over, read_by, read_evidence, targets_of
from hiera_dspy.engines import Job
from hiera_dspy.engines import judge as run_engine
from hiera_dspy.jobs.preparing import (
    begin_run,
    build_program,
    load_data,
    open_store,
    output_folder,
    progress_display,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.jobs.requests import DataSource, DryRun, JudgeRequest, Judging
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.review.known_report import known_summary
from hiera_dspy.runs.cost import forecast
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


@dataclass
class Replica:
    """A picklable recipe for one program replica: the judging request and how to load its dataset, built again at
    another endpoint (`api_base`) inside each Ray actor, so no LM, lock or model is shipped; the known judgments the
    job's judge read (a plain value) are handed to each replica's judge the same way."""

    judging: Judging
    dataset: Callable[[], Dataset]
    split: str
    known: Known | None = None  # the known judgments the job's judge read: each replica's judge reads them too
    targets: list[Pair] | None = None  # the sample of pairs to judge it read with them (`known_evidence.targets_of`)
    kind: str = "auto"  # what the known judgments are (`Evidence.kind`)

    def __call__(self, api_base: str | None):
        judging = replace(self.judging, lms=self.judging.lms.at(api_base))
        dataset = self.dataset()
        program, _, _ = build_program(judging, dataset)
        if not judging.judge:
            prepare_fresh(program, dataset, self.split)
        if self.known is not None:
            read_by(program, self.known, self.targets, self.kind)
        return program


def replica(judging: Judging, dataset: Callable[[], Dataset], split: str, evidence: Evidence | None, use: dict | None,
            pairs: Iterable[Pair]) -> Replica:
    """The recipe of `judging`'s replicas: their judge reads what the job's judge read (known judgments and the
    sample of the pairs to judge), so each cuts as it does."""
    known = read_by_judge(evidence, use)
    if known is None or evidence is None:
        return Replica(judging, dataset, split)
    return Replica(judging, dataset, split, known, targets_of(evidence, pairs), evidence.kind)


def read_by_judge(evidence: Evidence | None, use: dict | None) -> Known | None:
    """The known judgments a replica's judge must read: those the job's judge read, None when it reads none."""
    return evidence.known if evidence is not None and use is not None and use["reads"] else None


def forecast_cost(program, pairs: Iterable[Pair], lms, dry: DryRun, knowledge_name: str = "",
             pilot_rows: list | None = None) -> dict:
    """A run's tokens and money from a sample of its real prompts (`hiera_dspy.runs.cost.forecast`); nothing is sent."""
    return forecast(program, pairs if isinstance(pairs, list) else list(pairs), lms, sample=dry.sample,
                         delegation=dry.delegation, output_tokens=dry.output_tokens, pilot_rows=pilot_rows,
                         run_lookups=not knowledge_name.startswith("web"))


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
    use = hand_over(program, evidence, pairs)  # before any pair: the judge reads its queries' known judgments once
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
    recipe = replica(j, SourceLoader(request.data), split, evidence, use, pairs)  # --engine ray's replicas
    rows = run_engine(j.engine, Job(program, pairs, store, run_id, lms, retry_errors=j.run.retry_errors,
                                    progress=progress_display(j.run.verbose, lms, program.method),
                                    options=j.engine_options, factory=recipe))
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


@dataclass(frozen=True)
class SourceLoader:
    """The dataset of a request's data source, loaded again where it is called (a picklable recipe)."""

    source: DataSource

    def __call__(self) -> Dataset:
        return load_data(self.source)
