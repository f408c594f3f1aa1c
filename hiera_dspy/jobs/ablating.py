"""The paper's comparison as one job (what `python -m eval.ablate` judges): every method of a grid on exactly the same
pairs, each its own resumable run (the run id eval.run gives the method, without its limit, or PREFIX.NAME)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import dspy

from hiera_dspy.data import Dataset
from hiera_dspy.errors import RequestError, UnknownName
from hiera_dspy.jobs.judging import forecast_cost
from hiera_dspy.jobs.preparing import begin_run, load_data, open_store, progress_display
from hiera_dspy.jobs.requests import DataSource, DryRun, RunOptions
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.lm.choice import LMChoice
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.methods.graphs import ABLATIONS
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import wall_clock
from hiera_dspy.store.run_store import StoreError, validate_run_id


def _families(*families: str) -> list[str]:
    return [name for name, info in available().items() if info.family in families]


DEBATE = ("dream", "debate")  # DREAM's family (registered as "debate")
REFERENCE = ["embed-lr"]  # the learned scorer alone: the non-LLM reference every grid shows (no LM call)
GRIDS: dict[str, Callable[[], list[str]]] = {
    "ablations": lambda: list(ABLATIONS) + REFERENCE,
    "paper": lambda: list(ABLATIONS) + _families("baseline", *DEBATE) + REFERENCE,
    "signals": lambda: REFERENCE + ["zero-shot", "hiera", "hiera+signals", "hiera-cascade"],
}


@dataclass(frozen=True)
class AblateRequest:
    """Judge the split of `data` with every method of `methods` (NAME+k beside each baseline `with_knowledge`);
    `run.run_id` is a prefix: each method's run is PREFIX.NAME."""

    data: DataSource
    methods: tuple[str, ...]
    with_knowledge: bool = False
    split: str | None = None
    limit: int | None = None
    knowledge: str = "auto"
    lms: LMChoice = field(default_factory=LMChoice)
    threads: int = 1
    run: RunOptions = field(default_factory=RunOptions)
    dry_run: DryRun | None = None


@dataclass
class Ablation:
    """The grid judged: each report row (display name, method, config), each row's run id and rows (in row order;
    a grid stopped by an unreachable endpoint ends early), the dataset, split and pairs, the models and knowledge in
    words, the store. On a dry run, `estimates` (one per method) instead of results."""

    variants: list[tuple[str, str, dict]]
    results: dict[str, tuple[str, Sequence[Judgment]]]
    dataset: Dataset
    split: str
    pairs: list[Pair]
    lms: dict
    knowledge: str
    store: str
    estimates: list[dict] = field(default_factory=list)
    clocks: dict[str, dict] = field(default_factory=dict)  # per row: its wall time (build, fit, judging) a pair


def variants(names: list[str], with_knowledge: bool) -> list[tuple[str, str, dict]]:
    """(display name, method, config) per report row; NAME+k follows each baseline when asked."""
    methods = available()
    unknown = [n for n in names if n not in methods]
    if unknown:
        raise UnknownName(f"unknown method(s) {', '.join(unknown)}; registered: {', '.join(sorted(methods))}")
    out: list[tuple[str, str, dict]] = []
    for name in dict.fromkeys(names):  # keep order, drop duplicates
        out.append((name, name, {}))
        if with_knowledge and methods[name].family == "baseline":
            out.append((f"{name}+k", name, {"with_knowledge": True}))
    return out


def cell_run_id(prefix: str | None, display: str) -> str | None:
    """The run id of one report row under a run-id prefix: PREFIX.NAME (None without a prefix: the derived id)."""
    if prefix is None:
        return None
    try:
        return validate_run_id(f"{prefix}.{display}")
    except StoreError as exc:
        raise RequestError(f"--run-id {prefix}: {exc}") from None


def family_of(method: str, config: dict) -> str:
    """The comparison family of a report row: its registered family; a baseline with knowledge (NAME+k) is its own
    family, as in the paper's Table 4."""
    family = available()[method].family
    return f"{family}+knowledge" if config.get("with_knowledge") else family


def ablate(request: AblateRequest) -> Ablation:
    """Judge the split with every method of the request, one resumable run each; a dry run estimates each instead."""
    rows_spec = variants(list(request.methods), request.with_knowledge)
    store = open_store(request.run.store)
    dataset = load_data(request.data)
    split = request.split or dataset.default_split
    if not dataset.splits.get("train"):
        learned = [row for row in rows_spec if available()[row[1]].family == "signals"]
        if learned:
            print(f"{request.data.dataset} has no labelled train split: skipping {', '.join(r[0] for r in learned)} "
                  "(the learned scorer is fitted on train)", file=sys.stderr)
            rows_spec = [row for row in rows_spec if row not in learned]
    pairs = dataset.split(split, request.limit)
    lms = request.lms.build()
    dspy.configure(lm=lms.for_role("judge"))
    knowledge = make_knowledge(request.knowledge, dataset)
    ctx = BuildContext(dataset.scheme, lms, knowledge, dataset.splits.get("train", []))
    print(f"{len(rows_spec)} methods x {len(pairs)} pairs of {request.data.dataset} [{split}] (LMs {lms.describe()}, "
          f"knowledge {knowledge.name})", file=sys.stderr)
    done = Ablation(rows_spec, {}, dataset, split, pairs, lms.describe(), knowledge.name, str(store.path))
    for display, method, config in rows_spec:
        started = time.time()  # its build and fit count too: the method's whole run
        program = build(method, ctx, **config)
        prepare_fresh(program, dataset, split)
        # the same identity as eval.run (minus its limit): a run started there is resumed here, and vice versa
        spec = RunSpec.judging(program, dataset=request.data.dataset, split=split, lms=lms, knowledge=knowledge.name)
        identity, run_id = spec.identity(), cell_run_id(request.run.run_id, display) or spec.run_id
        if request.dry_run:  # nothing is sent: an estimate per method
            done.estimates.append(forecast_cost(program, pairs, lms, request.dry_run, knowledge.name, store.rows(run_id)))
            continue
        begin_run(store, run_id, identity, request.run.wait)
        print(f"== {display} (run {run_id})", file=sys.stderr)
        done.results[display] = (run_id, run_pairs(program, pairs, store, run_id, threads=request.threads,
                                                   progress=progress_display(request.run.verbose, lms, display),
                                                   lms=lms))
        done.clocks[display] = wall_clock(done.results[display][1], started)
        if done.results[display][1].stopped is not None:  # an endpoint is down: the methods left would not reach it
            break
    return done
