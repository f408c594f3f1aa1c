"""Label pairs that may have no labels (what `python -m eval.label` does): judge them as a labelling run
(`hiera_dspy.review.run`), export labels.jsonl, qrels.txt and pairs.jsonl, and score the pairs that carry gold.
`label_pairs` is the judging step that filling a benchmark's holes shares."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hiera_dspy.data import Dataset
from hiera_dspy.data.known_evidence import Evidence, handed_over, read_evidence
from hiera_dspy.engines import judge as run_engine
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.preparing import (
    SourceLoader,
    build_program,
    forecast_cost,
    judging_job,
    load_data,
    output_folder,
)
from hiera_dspy.jobs.requests import Judging, LabelRequest
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.metrics.reference import ReferenceScorer, summarize
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.review.run import LabellingRun, export_run
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import Tally
from hiera_dspy.store import freshness
from hiera_dspy.store.files import write_atomic
from hiera_dspy.store.opening import open_labelling_run, open_store
from hiera_dspy.store.pairs_file import write_pairs_file


@dataclass
class Labelled:
    """A labelling: its run id, the counts (`summary`: pairs, labelled, escalated, errors, confidence sources,
    labels), the metrics on the pairs with gold (None without gold), the files written ([] when the outputs were up
    to date: `fresh`), the rows and the method. On a dry run only `estimate` is set."""

    run_id: str = ""
    summary: dict = field(default_factory=dict)
    metrics: dict | None = None
    written: list[Path] = field(default_factory=list)
    rows: Sequence[Judgment] = ()
    method: str | None = ""
    fresh: bool = False
    estimate: dict | None = None


def label(request: LabelRequest) -> Labelled:
    """Label a dataset's split and export labels.jsonl, qrels.txt and pairs.jsonl to `request.out` (a run resumed or,
    when nothing changed since its last export, returned at once); score the pairs that carry gold (metrics.json)."""
    output_folder(request.out)
    dataset = load_data(request.data)
    pairs = dataset.split(request.split, request.judging.limit)
    split = request.split or dataset.default_split
    out = Path(request.out).resolve()
    labelling = {"kind": "label", "out": str(out), "scheme": dataset.scheme.to_dict()}
    known = request.known
    evidence = read_evidence(known.path, known.on_overlap, dataset, pairs, known.kind)
    run = label_pairs(request.judging, dataset, pairs, split, labelling, reuse_export=True,
                      reload=SourceLoader(request.data), evidence=evidence)
    if isinstance(run, dict):  # a dry run: the estimate, nothing was sent
        return Labelled(estimate=run)
    if run.fresh is not None:  # a finished run, exported from exactly this input and these rows: nothing to redo
        return Labelled(run.run_id, run.fresh, rows=run.rows, fresh=True)
    counts = LabelCounts()
    written = export_run(run.store, run.settings, tap=counts.add)
    summary = counts.summary()
    assert run.settings.labelling is not None  # started as a labelling run
    if known_use := run.settings.labelling.get("known"):
        summary["known"] = known_use
    skipped = dataset.notes.get("skipped_rows") or []
    if skipped:
        summary["skipped_rows"] = len(skipped)
    with_gold = list(run.rows.with_gold())
    gold = Tally(list(dataset.scheme.labels)).add_all(with_gold)
    metrics = None
    if gold.pairs:
        metrics = gold.metrics() | {"run_id": run.run_id}
        labels = list(dataset.scheme.labels)
        metrics["summary"], metrics["reference"] = summarize(  # the closing line: kappa beside embed-lr's
            [r.to_dict() for r in with_gold], labels, ReferenceScorer(dataset),
            [p for p in pairs if p.label in labels], run.settings.identity.get("method") or "")
        write_atomic(out / "metrics.json", json.dumps(metrics, indent=1))
    if summary["pairs"] == len(run.rows.ids):  # every pair of the split has its row: a later run may reuse this
        sig = freshness.signature(run.store, run.run_id, dataset.notes.get("source"), split, request.judging.limit,
                                  str(out))
        freshness.mark_fresh(run.store, run.run_id, sig, summary)
    return Labelled(run.run_id, summary, metrics, written, run.rows, run.settings.identity.get("method"))


def label_pairs(judging: Judging, dataset: Dataset, pairs: Iterable[Pair], split: str, labelling: dict,
                identity_extra: dict | None = None, reuse_export: bool = False,
                reload: Callable[[], Dataset] | None = None, evidence: Evidence | None = None) -> LabellingRun | dict:
    """Judge `pairs` (a list or a lazily read split) as a run of the store (resuming a finished part), after writing
    OUT/pairs.jsonl, with the request's engine (`reload` rebuilds the dataset in each Ray replica). A judge that reads
    known judgments reads `evidence` first (its digest joins the run's identity, what it read the labelling's
    `known`). With a dry run nothing is sent and no run starts: the cost estimate is returned. With `reuse_export`, a
    finished run whose last export was made from exactly this input and these rows (`freshness`) returns at once with
    that export's summary in `fresh`."""
    program, lms, knowledge = build_program(judging, dataset)
    try:
        if not judging.judge:
            prepare_fresh(program, dataset, split)
    except RuntimeError as exc:  # a learned method with no labelled pairs to learn from
        raise RequestError(f"{program.method}: {exc}") from None
    handed = handed_over(program, evidence, pairs)  # before any pair: the judge reads its queries' known judgments once
    use = None if handed is None else handed.use
    if evidence is not None and use is not None:
        identity_extra = {**(identity_extra or {}), **evidence.identity(use["reads"], use.get("demos"))}
        labelling = {**labelling, "known": use}
    spec = RunSpec.judging(program, dataset=dataset.name, split=split, lms=lms, knowledge=knowledge.name,
                           judge=judging.judge, extra=identity_extra)
    identity = spec.identity()
    run_id = judging.run.run_id or spec.run_id
    store = open_store(judging.run.store)
    if judging.dry_run:  # a pilot of this run in the store gives the delegation rate
        return forecast_cost(program, pairs, lms, judging.dry_run, knowledge.name, store.rows(run_id))
    out, limit = Path(labelling["out"]), judging.limit
    settings = open_labelling_run(store, run_id, {**identity, "limit": limit}, labelling, pairs, judging.run.wait)
    source = dataset.notes.get("source")
    fresh = freshness.check(store, run_id, source, split, limit, out,
                            export=reuse_export and not judging.run.retry_errors)
    on_disk = all((out / name).is_file() for name in ("pairs.jsonl", "labels.jsonl", "qrels.txt"))
    if on_disk and fresh.summary is not None:
        print(f"run {run_id}: every pair is judged and {out} is up to date "
              "(nothing changed since its last export)", file=sys.stderr)
        store.release(run_id)
        return LabellingRun(run_id, store, settings, [], fresh=fresh.summary)
    count = fresh.pairs
    if count is None:  # pairs.jsonl is not (known to be) this split's: write it, one pass
        count = write_pairs_file(out / "pairs.jsonl", pairs)
        freshness.mark_pairs(store, run_id, source, split, limit, out, count)
    print(f"run {run_id}: {count} pairs to label with {program.method} (LMs {spec.lms}, "
          f"knowledge {knowledge.name})", file=sys.stderr)
    rows = run_engine(judging.engine, judging_job(judging, program, pairs, store, run_id, lms, split, reload, evidence,
                                                  handed))
    return LabellingRun(run_id, store, settings, rows)


class LabelCounts:
    """Counts of a labelling, one record at a time: pairs, labelled, escalated, errors, confidence sources, labels."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.sources: Counter = Counter()
        self.labels: Counter = Counter()

    def add(self, r: dict) -> None:
        """Count one labels.jsonl record."""
        self.counts.update(pairs=1, labelled=bool(r["label"]), escalated=bool(r["escalated"] and not r["label"]),
                           errors=bool(r["error"]), truncated=bool(r.get("truncated")))
        self.sources[r["confidence_source"].split(" (")[0]] += 1
        if r["label"]:
            self.labels[r["label"]] += 1

    def summary(self) -> dict:
        """The counts as a labelling's summary."""
        c = self.counts
        return {"pairs": c["pairs"], "labelled": c["labelled"], "escalated": c["escalated"], "errors": c["errors"],
                "truncated": c["truncated"], "confidence_sources": dict(self.sources), "labels": dict(self.labels)}
