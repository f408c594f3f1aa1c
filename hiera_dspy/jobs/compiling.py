"""Compile a judge (what `python -m optimize.compile` does): score the uncompiled program on dev, optimise its prompts
on train (or fit a learned judge), score it again, and write one self-describing artifact; or refit an artifact on
the decisions of labelling runs."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path

import dspy

from hiera_dspy.artifacts.format import ArtifactError, read_artifact
from hiera_dspy.artifacts.judge_file import save_judge
from hiera_dspy.engines import EngineOptions, Job
from hiera_dspy.engines import judge as run_engine
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.optimizers import BUDGETS, OPTIMIZERS, QUICKSTART, examples
from hiera_dspy.jobs.preparing import (
    Replica,
    SourceLoader,
    begin_run,
    load_data,
    method_config,
    open_store,
    output_folder,
    progress_display,
    read_json_file,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.jobs.requests import CompileRequest, DataSource, Judging
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.labels import SCHEMES
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.metrics.reference import ReferenceScorer, summarize
from hiera_dspy.runs.outputs import write_outputs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows
from hiera_dspy.runs.training import TrainingSource


@dataclass
class Compiled:
    """A compiled judge: the program (`judge`, a dspy.Module to call or to import into another program), the artifact
    path, the dev metrics before (None when skipped or learned) and after, what it learned from (`training`), and
    what a report says of it."""

    judge: dspy.Module
    artifact: Path
    metrics: dict
    training: dict
    method: str
    optimizer: str
    dataset: str
    scheme: str
    lms: dict | None
    n_train_available: int
    n_dev: int
    split: str
    from_runs: int = 0
    fit_seconds: float = 0.0
    learned: list[str] = field(default_factory=list)

    @property
    def before(self) -> dict | None:
        """The dev metrics of the uncompiled program (None when skipped, or for a learned judge)."""
        return self.metrics["before"]

    @property
    def after(self) -> dict:
        """The dev metrics of the compiled judge."""
        return self.metrics["after"]


def evaluate(program, pairs, store, run_id, threads, labels, skipped: int = 0, reference=None, progress=True,
             engine: str = "threads", options: EngineOptions | None = None, factory=None) -> dict:
    """Judge `pairs` as run `run_id` with the named `engine` (its `options`, whose threads are `threads`; `factory`:
    the replicas' recipe, `Snapshot`), write its outputs under the runs folder; return the metrics (`progress`: as
    run_pairs takes it; `reference`: the summary line's embed-lr, a `ReferenceScorer`). The rows' `stopped` (an
    unreachable endpoint) is raised after the outputs are written."""
    options = replace(options or EngineOptions(), threads=threads)
    rows = run_engine(engine, Job(  # threads: a program with a `prefetch` (the probe, ce-blend) scores windows there
        program, pairs, store, run_id, progress=progress, options=options, factory=factory))
    metrics = metrics_from_rows(rows, labels)
    metrics["run_id"] = run_id
    metrics["skipped_rows"] = skipped
    metrics["summary"], metrics["reference"] = summarize(rows, labels, reference, pairs, getattr(program, "method", ""))
    write_outputs(runs_dir() / run_id, {"run_id": run_id, "skipped_rows": skipped}, metrics, rows)
    if getattr(rows, "stopped", None) is not None:
        raise rows.stopped
    return metrics


class Snapshot:
    """A picklable recipe for replicas of a program that exists only in this process (compile's judge before and
    after optimising): pickling it, which only an engine that ships workers does (`--engine ray`), writes the program
    as an artifact in a temporary folder (removed with this object), and each replica is that artifact loaded at its
    own endpoint (`hiera_dspy.jobs.preparing.Replica`), so no LM, lock or model is shipped. The folder is local: a
    Ray cluster of other machines cannot read it."""

    def __init__(self, program, lms, knowledge: str, data: DataSource, scheme, choice):
        self.program, self.lms, self.knowledge, self.data, self.scheme, self.choice = (
            program, lms, knowledge, data, scheme, choice)
        self.replica: Replica | None = None

    def recipe(self) -> Replica:
        """The artifact's replica recipe (the artifact written on first use)."""
        if self.replica is None:
            folder = tempfile.mkdtemp(prefix="hiera-compile-")
            weakref.finalize(self, shutil.rmtree, folder, True)
            path = save_judge(self.program, Path(folder) / "judge.json", scheme=self.scheme, lms=self.lms,
                              knowledge=self.knowledge, dataset=self.data.dataset)
            self.replica = Replica(Judging(judge=str(path), knowledge=self.knowledge, lms=self.choice),
                                   SourceLoader(self.data), "dev")
        return self.replica

    def __getstate__(self) -> dict:
        return {"replica": self.recipe()}

    def __setstate__(self, state: dict) -> None:
        self.replica = state["replica"]

    def __call__(self, api_base: str | None):
        return self.recipe()(api_base)


def training_source(request: CompileRequest) -> TrainingSource:
    """What the compile learns from (split, train limit, seed; a refitted `judge`'s dataset and split unless given,
    in `source.doc` the artifact); a RequestError for train_from without a judge or no dataset."""
    if request.train_from and not request.judge:
        raise RequestError("--train-from needs --judge ART: the judge to refit on the run's decisions")
    doc = None
    if request.judge:
        try:
            doc = read_artifact(request.judge)
        except ArtifactError as exc:
            raise RequestError(f"--judge {exc}") from None
        if request.config_file:
            raise RequestError("--judge and --config both name a method; give one")
    given = request.data.dataset if request.data else None
    source = TrainingSource.of_artifact(doc) if doc else TrainingSource(dataset=given or "")
    dataset = given or source.dataset
    if not dataset:
        raise RequestError("--dataset is required (or --judge ART to refit an artifact on its dataset)")
    source.dataset, source.seed = dataset, request.seed
    source.split = request.split or source.split
    source.limit = request.train_limit or source.limit
    source.doc = doc
    return source


def compile_judge(request: CompileRequest) -> Compiled:
    """Compile `request.method` on the train split, score it on dev before and after, save the artifact; returns the
    compiled judge with both dev metrics and the optimizer settings."""
    method, config, knowledge_kind = request.method, dict(request.config), request.knowledge
    if request.out and Path(request.out).is_dir():
        raise RequestError(f"--artifact {request.out}: is a folder; --artifact names the artifact file, e.g. "
                           f"{Path(request.out) / (method + '.json')}")
    if request.out:
        output_folder(Path(request.out).parent, "--artifact")
    store = open_store(request.run.store)
    if request.config_file:
        spec = read_json_file(request.config_file, "--config")
        if not isinstance(spec, dict):
            raise RequestError(f"--config {request.config_file} (field `config_file`): expected a JSON object "
                               '{"method": ..., "config": {...}} (optimize.search writes one: best.json), got a '
                               f"{type(spec).__name__}")
        method, config = spec.get("method", method), {**config, **spec.get("config", {})}
        knowledge_kind = spec.get("knowledge", knowledge_kind)
    preset = QUICKSTART.get(method, {}) if request.budget == "quickstart" and not request.judge else {}
    if preset:  # what command 1 runs for this method: its config, and its split where the dataset has one
        config = {**preset["config"], **config}
    source = training_source(request)
    if request.judge:
        method, config = source.doc["method"], source.doc["config"]
    config = method_config(method, request.settings, config)
    budget = BUDGETS[request.budget]
    data = replace(request.data or DataSource(source.dataset), dataset=source.dataset)
    if source.doc and not (data.scheme or data.labels):  # a refit reads its data in the judge's own scheme
        judges = source.doc["scheme"]
        data = (replace(data, scheme=judges["name"]) if judges["name"] in SCHEMES
                else replace(data, labels=",".join(judges["labels"])))
    dataset = load_data(data)
    reference = ReferenceScorer(dataset)  # the summary's embed-lr: fitted on the bundled train split, whatever we use
    if preset and not request.split and preset["split"] in dataset.splits:
        source.split = preset["split"]
    for split in (source.split, "dev"):
        if split not in dataset.splits:
            raise RequestError(f"dataset {data.dataset} has no {split!r} split to compile with; it has "
                               f"{', '.join(sorted(dataset.splits))}")
    runs = list(dict.fromkeys([*source.from_runs, *request.train_from]))
    source.from_runs = {}
    dataset = replace(dataset, splits={**dataset.splits,
                                       "train": source.pairs(dataset.splits[source.split], store, runs)})
    train = dataset.split("train", budget.n_train, balanced=True)
    lms = request.lms.role_lms()  # each role's LM is built on first use: none for a method without LM roles
    knowledge = make_knowledge(knowledge_kind, dataset)
    program = build(method, BuildContext(dataset.scheme, lms, knowledge, dataset.splits["train"]), **config)
    learned = not program.predictors() and not program.lm_roles  # no prompt, no LM: scoring dev costs seconds
    dev = dataset.split("dev", None if learned else budget.n_dev, balanced=True)  # a learned judge: every dev pair
    if program.lm_roles:  # the optimizers' own calls (instruction proposals) go to the judge LM
        dspy.configure(lm=lms.for_role("judge"))
    started = time.perf_counter()
    prepare_fresh(program, dataset, "dev")  # learned signals: scorer fitted on train, a cascade's tau on dev
    fit_seconds = round(time.perf_counter() - started, 2)
    optimizer = request.optimizer or budget.optimizer if program.predictors() else "none"  # nothing to optimise
    labels = list(dataset.scheme.labels)
    run = RunSpec.compiling(program, dataset=data.dataset, lms=lms, knowledge=knowledge.name)  # phases: qualifiers
    identity = run.identity()
    searched = (f"{len(train)} train pairs for optimizer {optimizer}" if program.predictors() else
                f"learned from {len(dataset.splits['train']):,} pairs of split {source.split!r} in {fit_seconds:.0f} s")
    print(f"compiling {method} on {data.dataset}: {searched}, scored on {len(dev)} dev pairs, budget "
          f"{request.budget}; LMs {run.lms}; knowledge {knowledge.name}", file=sys.stderr)
    before = None
    if not request.skip_before and program.predictors():  # a learned judge has no prompt to compile: before == after
        before_id = replace(run, qualifiers=("dev", "uncompiled")).run_id
        begin_run(store, before_id, {**identity, "phase": "before"}, request.run.wait)
        before = evaluate(program, dev, store, before_id, request.threads, labels, skipped_rows(dataset), reference,
                          progress_display(request.run.verbose, lms, "dev before"), request.engine,
                          request.engine_options, Snapshot(program, lms, knowledge_kind, data, dataset.scheme,
                                                           request.lms))
    if program.predictors():
        compiled = OPTIMIZERS[optimizer](program, examples(train), examples(dev), budget, request.seed, lms,
                                         request.threads)
    else:  # nothing to optimise (embed-lr): the scorer fitted by prepare() is the whole judge
        compiled = program
    compiled.method, compiled.config, compiled.lm_roles = program.method, program.config, program.lm_roles
    learned_from = (source.identity(),) if source.identity() else ()  # a judge fitted on other pairs: another run
    after_id = replace(run, qualifiers=("dev", "compiled", optimizer, request.budget, request.seed,
                                         compiled.dump_state(), *learned_from)).run_id
    begin_run(store, after_id, {**identity, "phase": "after", "optimizer": optimizer, "budget": request.budget},
              request.run.wait)
    after = evaluate(compiled, dev, store, after_id, request.threads, labels, skipped_rows(dataset), reference,
                     progress_display(request.run.verbose, lms, "dev after"), request.engine, request.engine_options,
                     Snapshot(compiled, lms, knowledge_kind, data, dataset.scheme, request.lms))
    out = Path(request.out or Path("artifacts") / dataset.name.split(":")[0] / f"{method}.json")
    fitted_on = {p.id for p in dataset.splits["train"]}
    metrics = {"before": before, "after": after, "optimizer": optimizer, "budget": request.budget,
               "seed": request.seed, "n_train": len(train), "n_dev": len(dev), "skipped_rows": skipped_rows(dataset),
               "dev_in_train": sum(p.id in fitted_on for p in dev)}  # > 0: the dev scores are in-sample
    training = source.record(len(dataset.splits["train"]), fit_seconds)
    save_judge(compiled, out, scheme=dataset.scheme, lms=lms, knowledge=knowledge.name, dataset=data.dataset,
               metrics=metrics, training=training)
    return Compiled(compiled, out, metrics, training, method, optimizer if program.predictors() else "",
                    data.dataset, dataset.scheme.name, run.lms, len(dataset.splits["train"]), len(dev), source.split,
                    len(runs), fit_seconds, list(getattr(compiled, "learned_from", lambda: [])()))
