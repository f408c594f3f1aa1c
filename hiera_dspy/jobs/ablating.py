"""The paper's comparison as one job (what `python -m eval.ablate` does): every method of a grid on exactly the same
pairs, each its own resumable run (the run id eval.run gives the method, without its limit, or PREFIX.NAME), and the
ablation report written (`write_ablation_report`: report.md, summary.json, predictions.jsonl and the figures)."""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dspy

from hiera_dspy.data import Dataset
from hiera_dspy.data.known_evidence import hand_over, read_evidence
from hiera_dspy.errors import RequestError, UnknownName
from hiera_dspy.jobs.preparing import (
    begin_run,
    forecast_cost,
    load_data,
    open_store,
    output_folder,
    progress_display,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.jobs.requests import DataSource, DryRun, KnownList, RunOptions
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.lm.choice import LMChoice
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.methods.graphs import ABLATIONS
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.methods.votes import split_name
from hiera_dspy.metrics.disagreements import report_section
from hiera_dspy.metrics.reference import fitted_on_train
from hiera_dspy.records import Judgment, Pair, as_judgment
from hiera_dspy.runs.evaluation_report import comparison_families, family_note, sanitize, summarize_method, write_report
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
    reference: str = "hiera"  # the method the others are tested against (McNemar)
    out: str | None = None  # the report's folder (default: runs/ablate-<dataset>-<split>)
    known: KnownList = field(default_factory=KnownList)  # known judgments: each method that reads them reads them


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
    summaries: list[dict] = field(default_factory=list)  # per method: the report's scores (`write_ablation_report`)
    reference: str | None = None  # the reference method, when it is among the methods
    report: str | None = None  # the folder report.md, summary.json, predictions.jsonl and the figures went to
    figures: int = 0
    notes: list[str] = field(default_factory=list)  # what the report says under its table
    known: dict[str, dict] = field(default_factory=dict)  # per row: its use of the known judgments (`hand_over`)


def variants(names: list[str], with_knowledge: bool) -> list[tuple[str, str, dict]]:
    """(display name, method, config) per report row; NAME+k follows each baseline when asked; NAME@N is NAME with
    a vote over N samples (`thomas@5` beside `thomas`)."""
    methods = available()
    unknown = [n for n in names if split_name(n)[0] not in methods]
    if unknown:
        raise UnknownName(f"unknown method(s) {', '.join(unknown)}; registered: {', '.join(sorted(methods))} "
                          "(NAME@N: a vote over N samples)")
    out: list[tuple[str, str, dict]] = []
    for name in dict.fromkeys(names):  # keep order, drop duplicates
        method, votes = split_name(name)
        out.append((name, method, votes))
        if with_knowledge and methods[method].family == "baseline":
            out.append((f"{name}+k", method, {**votes, "with_knowledge": True}))
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
    """Judge the split with every method of the request, one resumable run each, and write the ablation report
    (`write_ablation_report`); a dry run forecasts each method's cost instead."""
    if request.out:
        output_folder(request.out)
    rows_spec = variants(list(request.methods), request.with_knowledge)
    if not rows_spec:
        raise RequestError("no method to compare (field `methods`, flag --methods 'zero-shot,hiera' or --grid NAME)")
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
    known = request.known  # read and checked once, before any method
    evidence = read_evidence(known.path, known.on_overlap, dataset, pairs, known.kind)
    lms = request.lms.role_lms()
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
        use = hand_over(program, evidence, pairs)  # a judge that reads known judgments reads them once, before any pair
        if use is not None:
            done.known[display] = use
        # the same identity as eval.run (minus its limit): a run started there is resumed here, and vice versa
        spec = RunSpec.judging(program, dataset=request.data.dataset, split=split, lms=lms, knowledge=knowledge.name,
                               extra=(evidence.identity(use["reads"], use.get("demos"))
                                      if evidence and use else None))
        identity, run_id = spec.identity(), cell_run_id(request.run.run_id, display) or spec.run_id
        if request.dry_run:  # nothing is sent: an estimate per method
            done.estimates.append(forecast_cost(program, pairs, lms, request.dry_run, knowledge.name, store.rows(run_id)))
            continue
        begin_run(store, run_id, {**identity, "scheme": dataset.scheme.to_dict()}, request.run.wait,
                  may_differ=("scheme",))
        print(f"== {display} (run {run_id})", file=sys.stderr)
        done.results[display] = (run_id, run_pairs(program, pairs, store, run_id, threads=request.threads,
                                                   progress=progress_display(request.run.verbose, lms, display),
                                                   lms=lms))
        done.clocks[display] = wall_clock(done.results[display][1], started)
        if done.results[display][1].stopped is not None:  # an endpoint is down: the methods left would not reach it
            break
    if not request.dry_run:
        out = request.out or runs_dir() / f"ablate-{sanitize(request.data.dataset)}-{split}"
        write_ablation_report(done, request.reference, out, request.data.dataset)
    return done


def learned_note(done: Ablation) -> str | None:
    """The report's line on what the learned methods (embed-lr, the signals family) were fitted on, and how many of
    the judged pairs were among them; None without one."""
    learned = [display for display, method, _ in done.variants
               if display in done.results and available()[method].family == "signals"]
    if not learned:
        return None
    train = [p for p in done.dataset.splits.get("train") or () if p.label in done.dataset.scheme.labels]
    return f"{', '.join(learned)}: {fitted_on_train(train, done.pairs)}."


DREAM_NOTE = ("Note: DREAM debates the binary question (relevant or not) for graded label schemes; judgments its "
              "debate escalates get no label and are counted under esc.")


def known_note(known: dict[str, dict]) -> str | None:
    """The report's line on known judgments: the list, and which methods read it (the others judge every pair
    alone); None without one."""
    if not known:
        return None
    first = next(iter(known.values()))
    readers = ", ".join(f"{d} ({use['read']:,} read)" for d, use in known.items() if use["reads"]) or "no method"
    return (f"Known judgments {first['source']}: {first['in_set']:,} in the split's queries, read by {readers}; "
            "every other method judges each pair alone.")


def lm_calls_by_role(rows: Sequence) -> dict[str, float]:
    """Mean LM calls per judged row for each role (rows without a label left out); {} if none."""
    judged = [r for r in rows if r.get("label") is not None]
    totals: dict[str, int] = defaultdict(int)
    for r in judged:
        for step in r.get("steps") or []:
            totals[step.get("role", "?")] += step.get("calls", 0)
    return {role: n / len(judged) for role, n in sorted(totals.items())} if judged else {}


def write_ablation_report(done: Ablation, reference_name: str, out, dataset_spec: str) -> Ablation:
    """Score every method (McNemar against the reference, Bonferroni within each family), write report.md,
    summary.json, predictions.jsonl and the figures to `out`; `done` with its summaries, reference, notes and the
    report's folder set."""
    results, labels = done.results, list(done.dataset.scheme.labels)
    reference = reference_name if reference_name in results else None
    if reference is None:
        print(f"reference {reference_name!r} is not among the methods: no significance tests", file=sys.stderr)
    families = {display: family_of(method, config) for display, method, config in done.variants if display in results}
    n_comparisons = comparison_families(families, reference)  # Bonferroni's m per method: the size of its family
    summaries = []
    query_of = {p.id: p.query_id for p in done.pairs}  # CIs over queries too
    for display, (run_id, rows) in results.items():
        ref_rows = results[reference][1] if reference and display != reference else None
        s = summarize_method(display, rows, labels, reference_rows=ref_rows,
                             n_comparisons=n_comparisons.get(display, 1),
                             binary_from=done.dataset.scheme.binary_from, query_of=query_of)
        s |= {"run_id": run_id, "lm_calls_by_role": lm_calls_by_role(rows), "skipped_rows": skipped_rows(done.dataset)}
        s |= done.clocks.get(display, {})
        if display in done.known:
            s["known"] = done.known[display]
        summaries.append(s)
    folder = output_folder(out)
    has_dream = any(available()[m].family in DEBATE for _, m, _ in done.variants)
    title = f"{dataset_spec} [{done.split}]: {len(done.pairs)} pairs, LMs {done.lms}, knowledge {done.knowledge}"
    notes = [note for note in (family_note(families, reference), DREAM_NOTE if has_dream else None,
                               known_note(done.known), learned_note(done)) if note]
    predictions: dict[str, Any] = {d: rows for d, (_, rows) in results.items()}  # judgments read as mappings
    paths = write_report(folder, summaries, predictions, labels, title, reference=reference, notes=notes,
                         sections=report_section(predictions))
    with open(folder / "predictions.jsonl", "w") as fh:
        for display, (run_id, rows) in results.items():
            for r in rows:
                line = {"method": display, "run_id": run_id, **as_judgment(r).prediction_line()}
                fh.write(json.dumps(line, default=str) + "\n")
    done.summaries, done.reference, done.report = summaries, reference, str(folder)
    done.figures = sum(1 for name in paths if name.endswith(".png"))
    done.notes = [note for note in (family_note(families, reference),) if note]
    return done
