"""Fill the holes of a retrieval benchmark (what `python -m eval.holes` does): judge the unjudged documents in the
runs' top k as a labelling run, draw the human sample, and export the filled qrels with the conclusions;
`conclusions` exports a holes run again (after decisions) and returns what it concludes."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hiera_dspy.benchmark.conclusions import check_sample_size, draw_human_sample
from hiera_dspy.benchmark.inputs import TIE_RULE, Inputs, read_inputs, tied_in_top
from hiera_dspy.benchmark.known import benchmark_evidence
from hiera_dspy.benchmark.pool import pool_holes
from hiera_dspy.conclude.holes import population
from hiera_dspy.data import Dataset, trec_folder
from hiera_dspy.data.guidelines import read_guidelines
from hiera_dspy.data.known_evidence import Evidence
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.labelling import label_pairs
from hiera_dspy.jobs.preparing import open_store, output_folder
from hiera_dspy.jobs.requests import HolesRequest
from hiera_dspy.labels import LabelScheme, custom_scheme, get_scheme
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.review.run import export_run
from hiera_dspy.store.run_settings import RunSettings, read_settings
from hiera_dspy.store.run_store import RunStore, no_run


@dataclass
class Filled:
    """A filled benchmark: its run id, the summary (summary.json: per run the hole rate and the measures before and
    after, the conclusions), report.md's text, the files written and the rows. On a dry run only `estimate` is set."""

    run_id: str = ""
    summary: dict = field(default_factory=dict)
    report: str = ""
    written: list[Path] = field(default_factory=list)
    rows: Sequence[Judgment] = ()
    estimate: dict | None = None


@dataclass(frozen=True)
class Holes:
    """A holes request read once, before anything is judged: the qrels' label scheme, the run's `labelling` section
    (what it fills and how it concludes, the files as absolute paths), the benchmark's files read and cross-checked,
    the holes as a dataset (split `holes`; the existing judgments are its `train` split, the corpus its catalog) and
    the benchmark's own judgments as the evidence its judge reads (`evidence`; None with `judge_pool` or when not
    asked for)."""

    scheme: LabelScheme
    labelling: Mapping[str, Any]
    inputs: Inputs
    dataset: Dataset
    evidence: Evidence | None = None

    @property
    def holes(self) -> list[Pair]:
        """The pairs to judge: the pool's holes (with --judge-pool, the pool's judged pairs too)."""
        return self.dataset.splits["holes"]

    def identity(self) -> dict:
        """What the run's identity adds: the benchmark's files, its depth and whether the pool is judged too."""
        labelling = self.labelling
        return {"holes": {k: labelling[k] for k in ("qrels", "runs", "topics", "corpus", "depth")}
                | ({"dataset": labelling["dataset"]} if labelling["dataset"] else {})
                | ({"judge_pool": True} if labelling["judge_pool"] else {})}


def read_holes(request: HolesRequest, job: bool = False) -> Holes:
    """The holes request's inputs, each checked (a RequestError naming the option) and read once: the label scheme
    from `scheme`, `labels` or a `guidelines` file (exactly one of them; with `dataset`, `trec` if none), the
    benchmark from the three files or `dataset` trec:FOLDER | irds:ID (exactly one of the two ways), the runs; with
    `judge_pool` the pool's judged pairs join the holes, their given grade as gold. The `job`'s own read (not a
    replica's) also says which runs tie at the pool's depth, refuses a human sample that cannot be drawn before the
    pool is made, and reads the benchmark's own judgments (its qrels; never the human sample's decisions, which the
    conclusions assume the judge never saw) as the evidence a judge that reads known judgments reads; none with
    `judge_pool`, whose machine-only qrels are judged with nothing known."""
    given = sum(bool(x) for x in (request.scheme, request.labels, request.guidelines))
    if given != 1 and not (request.dataset and not given):
        raise RequestError("give the qrels' label scheme: --scheme msrd|esci|wands|homedepot|trec, "
                           "--labels 'A,B,C' or --guidelines FILE")
    if request.depth < 1:
        raise RequestError(f"--depth must be at least 1, got {request.depth}")
    sources = _sources(request)
    scheme = (read_guidelines(request.guidelines) if request.guidelines else custom_scheme(request.labels)
              if request.labels else get_scheme(request.scheme or "trec"))
    runs = [_abs(r) for r in request.runs if r.strip()]
    labelling = {"kind": "holes", "out": str(Path(request.out).resolve()), "scheme": scheme.to_dict(),
                 "depth": request.depth, **sources, "runs": runs, "on_bad_row": request.on_bad_row,
                 "ci": request.sample.ci, "machine_values": request.sample.machine_values,
                 "judge_pool": request.judge_pool} | ({"sample_unit": "pair"} if request.sample.unit == "pair" else {})
    if not runs:
        raise RequestError("--runs (field `runs`): give the systems' TREC run files, comma-separated, e.g. a.run,b.run")
    if twice := sorted(r for r, n in Counter(runs).items() if n > 1):
        raise RequestError(f"--runs {','.join(request.runs)} (field `runs`): {', '.join(twice)} is given twice; "
                           "name each system's run file once")
    inputs = read_inputs(labelling, scheme)
    if job:
        _check(request, inputs)
    holes = [inputs.pair(q, d) for q, d in pool_holes(inputs.runs, inputs.qrels, request.depth)]
    if request.judge_pool:
        holes += [inputs.pair(q, d, scheme.labels[inputs.qrels[q, d]])
                  for q, d in pool_holes(inputs.runs, {}, request.depth) if (q, d) in inputs.qrels]
    if request.judging.limit:
        holes = holes[:request.judging.limit]
    dataset = Dataset(name=f"holes:{labelling['dataset'] or labelling['qrels']}", scheme=scheme,
                      default_split="holes", splits={"holes": holes, "train": inputs.judged_pairs(scheme)},
                      catalog=list(inputs.corpus.values()))
    section = MappingProxyType(labelling)  # read-only: the run's config is made from a copy (`label_pairs`)
    if not job or request.judge_pool:
        return Holes(scheme, section, inputs, dataset)
    return Holes(scheme, section, inputs, dataset,
                 benchmark_evidence(inputs.qrels, inputs.qrel_lines, inputs.topics, inputs.corpus, scheme,
                                    labelling["qrels"] or labelling["dataset"], holes))


def _check(request: HolesRequest, inputs: Inputs) -> None:
    """Say which runs tie at the pool's depth, and refuse a human sample that cannot be drawn (a RequestError)."""
    for name, run in inputs.runs.items():
        if tied := tied_in_top(run, request.depth):
            print(f"run {name}: {tied} documents in a top {request.depth} share their score with a neighbour; "
                  f"{TIE_RULE}", file=sys.stderr)
    sample = request.sample
    check_sample_size(population(inputs.runs), None if sample.unit == "pair" else sample.size, sample.method,
                      sample.strata, sample.ci, sample.unit)


def _sources(request: HolesRequest) -> dict:
    """topics, corpus, qrels (absolute paths, or None for an irds: id) and dataset."""
    files = (request.topics, request.corpus, request.qrels)
    if request.dataset:
        if any(files):
            raise RequestError("give --dataset or --topics/--corpus/--qrels, not both")
        name, _, arg = request.dataset.partition(":")
        if name == "irds":
            return {"topics": None, "corpus": None, "qrels": None, "dataset": request.dataset}
        if name != "trec":
            raise RequestError(f"--dataset {request.dataset!r}: holes read trec:FOLDER or irds:ID")
        found = trec_folder.files(arg)
        return {role: _abs(str(path)) for role, path in found.items()} | {"dataset": request.dataset}
    if not all(files):
        raise RequestError("give the benchmark: --dataset trec:FOLDER | irds:ID, or all of --topics, --corpus and "
                           "--qrels")
    return {"topics": _abs(request.topics), "corpus": _abs(request.corpus), "qrels": _abs(request.qrels),
            "dataset": None}


@dataclass(frozen=True)
class HolesLoader:
    """The holes dataset of a request, read again where it is called (a Ray replica's picklable recipe)."""

    request: HolesRequest

    def __call__(self) -> Dataset:
        return read_holes(self.request).dataset


def fill_holes(request: HolesRequest) -> Filled:
    """Judge the unjudged documents in each run's top `depth`, draw the human sample (once, kept in the run) and
    export OUT/qrels.txt, new.jsonl, summary.json and report.md; returns the summary."""
    output_folder(request.out)
    read = read_holes(request, job=True)
    inputs = read.inputs
    train = read.dataset.splits["train"]
    if len(train) < len(inputs.qrels):
        print(f"{len(inputs.qrels) - len(train)} existing judgments name a qid or docid missing from the topics or "
              "corpus: kept in qrels.txt, not used as train pairs", file=sys.stderr)
    print(f"{len(read.holes)} {'pairs of the pool' if request.judge_pool else 'holes'} at depth {request.depth} over "
          f"{len(inputs.runs)} runs ({len(inputs.qrels)} existing judgments)", file=sys.stderr)
    if request.judge_pool:
        print("--judge-pool: the judge reads no known judgments (the pool's judged pairs are judged too)",
              file=sys.stderr)
    run = label_pairs(request.judging, read.dataset, read.holes, "holes", dict(read.labelling), read.identity(),
                      reload=HolesLoader(request), evidence=read.evidence)
    if isinstance(run, dict):  # a dry run: the estimate, nothing was sent
        return Filled(estimate=run)
    if run.rows.stopped is None:  # drawn from the complete judging (a stratified, active or pair draw reads it)
        sample = request.sample
        draw_human_sample(run.store, run.settings, inputs.runs, inputs.qrels, read.scheme, request.depth, sample.unit,
                          sample.size, sample.seed, sample.method, sample.strata, sample.machine_values)
    settings = run.settings  # as the run resumed with them
    assert settings.labelling is not None  # the job started it as a holes run
    if (ci := settings.labelling.get("ci", 0.95)) != request.sample.ci:
        print(f"run {run.run_id} reports its intervals at the level it was started with (--ci {ci}); start a new "
              "run for another", file=sys.stderr)
    return _exported(run.store, settings, run.rows)


def conclusions(run_id: str, store: str | None = None) -> Filled:
    """Export the holes run `run_id` again from the store (every decision so far counted) and return its summary
    (summary.json: "estimates", "differences", "human_sample") and report.md's text."""
    opened = open_store(store)
    settings = read_settings(opened, run_id)
    if settings is None:
        raise RequestError(no_run(opened, run_id))
    if settings.kind() != "holes":
        raise RequestError(f"run {run_id!r} is not a holes run (made by eval.holes)")
    return _exported(opened, settings)


def _exported(store: RunStore, settings: RunSettings, rows: Sequence[Judgment] = ()) -> Filled:
    """Export the holes run (its settings read already) and read back its summary and report."""
    assert settings.labelling is not None  # a holes run, checked by the callers
    written = export_run(store, settings)
    out = settings.labelling.out
    summary = json.loads((out / "summary.json").read_text())
    return Filled(settings.run_id, summary, (out / "report.md").read_text(encoding="utf-8"), written, rows)


def _abs(path: str) -> str:
    return str(Path(path.strip()).resolve())
