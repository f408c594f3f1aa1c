"""The paper's comparison as one command: every method on exactly the same pairs, one report.

    python -m eval.ablate --dataset msrd --split dev --grid ablations --limit 50          # Table 3
    python -m eval.ablate --dataset msrd --grid paper --with-knowledge --lm paper         # Tables 1, 2 and 4
    python -m eval.ablate --dataset msrd --methods hiera,judge-only --reference judge-only

Each method is its own resumable run in the run store (the same run id `eval.run --method NAME` uses, without
--limit, so a larger limit resumes and a rerun judges nothing new; `--run-id PREFIX` names them PREFIX.NAME instead,
e.g. PREFIX.hiera, PREFIX.zero-shot+k, and eval.run --run-id PREFIX.hiera resumes one); identical LM sub-calls across
methods are served by DSPy's LM cache. The run options (--run-id, --store, --wait, --max-error-rate) are those of
every judging CLI (hiera_dspy.cli.options.add_run_arguments).
Writes OUT/report.md, OUT/summary.json (every pair scored, a pair without a label as wrong, coverage beside; bootstrap
95% CIs; McNemar vs the reference, Bonferroni within each family of comparisons: the paper grid's 11 baselines m=11,
its 7 ablations m=7; cost per role, latency, delegation, errors, escalations; the field's agreement measures: binary
kappa, Krippendorff's alpha (ordinal), quadratic kappa, the confusion; `wall_ms_per_pair`, the method's wall time
(build, fit, judging) over the pairs it judged), OUT/predictions.jsonl and the figures.
`--with-knowledge` adds, for each baseline, NAME+k with config with_knowledge=True (Table 4): a grid option, not a
run option (one method's run: eval.run --method NAME --set with_knowledge=true).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from typing import Callable

import dspy

from eval.disagreements import report_section
from eval.report import comparison_families, family_note, sanitize, summarize_method, write_report
from hiera_dspy.cli.dry_run import add_dry_run_arguments, dry_run
from hiera_dspy.cli.lms import add_lm_arguments, lms_from_args
from hiera_dspy.cli.options import (
    add_data_arguments,
    add_run_arguments,
    begin_run,
    cli_main,
    exit_on_error_rate,
    load_data,
    open_store,
    output_folder,
    positive_int,
    progress_display,
    raise_if_stopped,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.methods.graphs import ABLATIONS
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.metrics.format import number
from hiera_dspy.records import as_judgment
from hiera_dspy.runs.cost import format_total
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
DREAM_NOTE = ("Note: DREAM debates the binary question (relevant or not) for graded label schemes; judgments its "
              "debate escalates get no label and are counted under esc.")


def parser() -> argparse.ArgumentParser:
    """The command-line options of eval.ablate."""
    p = argparse.ArgumentParser(prog="python -m eval.ablate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--split", help="train | dev | eval | all (default: the dataset's default split)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--methods", help="comma-separated registered methods")
    which.add_argument("--grid", choices=sorted(GRIDS), help="a named set of methods")
    p.add_argument("--with-knowledge", action="store_true",
                   help="also run every baseline with knowledge passages concatenated (NAME+k; for one method: "
                        "eval.run --set with_knowledge=true)")
    p.add_argument("--limit", type=positive_int, help="judge only the first N pairs of the split")
    p.add_argument("--reference", default="hiera", help="method the others are tested against (McNemar)")
    p.add_argument("--out", help="report folder (default: runs/ablate-<dataset>-<split>)")
    add_run_arguments(p)
    add_lm_arguments(p)
    add_dry_run_arguments(p)
    return p


def variants(names: list[str], with_knowledge: bool) -> list[tuple[str, str, dict]]:
    """(display name, method, config) per report row; NAME+k follows each baseline when asked."""
    methods = available()
    unknown = [n for n in names if n not in methods]
    if unknown:
        raise SystemExit(f"unknown method(s) {', '.join(unknown)}; registered: {', '.join(sorted(methods))}")
    out = []
    for name in dict.fromkeys(names):  # keep order, drop duplicates
        out.append((name, name, {}))
        if with_knowledge and methods[name].family == "baseline":
            out.append((f"{name}+k", name, {"with_knowledge": True}))
    return out


def cell_run_id(prefix: str | None, display: str) -> str | None:
    """The run id of one report row under `--run-id PREFIX`: PREFIX.NAME (None without a prefix: the derived id)."""
    if prefix is None:
        return None
    try:
        return validate_run_id(f"{prefix}.{display}")
    except StoreError as exc:
        raise SystemExit(f"error: --run-id {prefix}: {exc}") from None


def family_of(method: str, config: dict) -> str:
    """The comparison family of a report row: its registered family; a baseline with knowledge (NAME+k) is its own
    family, as in the paper's Table 4."""
    family = available()[method].family
    return f"{family}+knowledge" if config.get("with_knowledge") else family


def lm_calls_by_role(rows: list[dict]) -> dict[str, float]:
    """Mean LM calls per judged row for each role (rows without a label left out); {} if none."""
    judged = [r for r in rows if r.get("label") is not None]
    totals: dict[str, int] = defaultdict(int)
    for r in judged:
        for step in r.get("steps") or []:
            totals[step.get("role", "?")] += step.get("calls", 0)
    return {role: n / len(judged) for role, n in sorted(totals.items())} if judged else {}


def main(argv: list[str] | None = None) -> list[dict]:
    """Run every requested method on one split, print the comparison table and write the report; return the
    per-method summaries (estimates on a dry run)."""
    args = parser().parse_args(argv)
    names = GRIDS[args.grid]() if args.grid else [m.strip() for m in args.methods.split(",") if m.strip()]
    rows_spec = variants(names, args.with_knowledge)
    if args.out:
        output_folder(args.out)
    store = open_store(args)
    dataset = load_data(args)
    split = args.split or dataset.default_split
    if not dataset.splits.get("train"):
        learned = [row for row in rows_spec if available()[row[1]].family == "signals"]
        if learned:
            print(f"{args.dataset} has no labelled train split: skipping {', '.join(r[0] for r in learned)} "
                  "(the learned scorer is fitted on train)", file=sys.stderr)
            rows_spec = [row for row in rows_spec if row not in learned]
    pairs = dataset.split(split, args.limit)
    labels = list(dataset.scheme.labels)
    lms = lms_from_args(args)
    dspy.configure(lm=lms.for_role("judge"))
    knowledge = make_knowledge(args.knowledge, dataset)
    ctx = BuildContext(dataset.scheme, lms, knowledge, dataset.splits.get("train", []))
    print(f"{len(rows_spec)} methods x {len(pairs)} pairs of {args.dataset} [{split}] (LMs {lms.describe()}, "
          f"knowledge {knowledge.name})", file=sys.stderr)

    results: dict[str, tuple[str, list[dict]]] = {}
    started, clocks = {}, {}  # per method: when its run began, and its wall time over the pairs it judged
    estimates: list[dict] = []
    for display, method, config in rows_spec:
        started[display] = time.time()  # its build and fit count too: the method's whole run
        program = build(method, ctx, **config)
        prepare_fresh(program, dataset, split)
        # the same identity as eval.run (minus --limit): a run started there is resumed here, and vice versa
        spec = RunSpec.judging(program, dataset=args.dataset, split=split, lms=lms, knowledge=knowledge.name)
        identity, run_id = spec.identity(), cell_run_id(args.run_id, display) or spec.run_id
        if args.dry_run:  # nothing is sent: an estimate per method, then the grid's total
            estimates.append(dry_run(program, pairs, lms, args, knowledge.name, store.rows(run_id)))
            continue
        begin_run(store, run_id, identity, args)
        print(f"== {display} (run {run_id})", file=sys.stderr)
        results[display] = (run_id, run_pairs(program, pairs, store, run_id, threads=args.threads,
                                              progress=progress_display(args, lms, display), lms=lms))
        clocks[display] = wall_clock(results[display][1], started[display])
        if results[display][1].stopped is not None:  # an endpoint is down: the methods left would not reach it
            break

    if args.dry_run:
        print(format_total(estimates))
        return estimates
    reference = args.reference if args.reference in results else None
    if reference is None:
        print(f"reference {args.reference!r} is not among the methods: no significance tests", file=sys.stderr)
    families = {display: family_of(method, config) for display, method, config in rows_spec if display in results}
    n_comparisons = comparison_families(families, reference)  # Bonferroni's m per method: the size of its family
    summaries = []
    query_of = {p.id: p.query_id for p in pairs} if isinstance(pairs, list) else None  # CIs over queries too
    for display, (run_id, rows) in results.items():
        ref_rows = results[reference][1] if reference and display != reference else None
        s = summarize_method(display, rows, labels, reference_rows=ref_rows,
                             n_comparisons=n_comparisons.get(display, 1), binary_from=dataset.scheme.binary_from,
                             query_of=query_of)
        s |= {"run_id": run_id, "lm_calls_by_role": lm_calls_by_role(rows), "skipped_rows": skipped_rows(dataset)}
        s |= clocks[display]
        summaries.append(s)

    out = output_folder(args.out or runs_dir() / f"ablate-{sanitize(args.dataset)}-{split}")
    has_dream = any(available()[m].family in DEBATE for _, m, _ in rows_spec)
    title = f"{args.dataset} [{split}]: {len(pairs)} pairs, LMs {lms.describe()}, knowledge {knowledge.name}"
    notes = [note for note in (family_note(families, reference), DREAM_NOTE if has_dream else None) if note]
    predictions = {d: rows for d, (_, rows) in results.items()}
    paths = write_report(out, summaries, predictions, labels, title, reference=reference, notes=notes,
                         sections=report_section(predictions))
    with open(out / "predictions.jsonl", "w") as fh:
        for display, (run_id, rows) in results.items():
            for r in rows:
                line = {"method": display, "run_id": run_id, **as_judgment(r).prediction_line()}
                fh.write(json.dumps(line, default=str) + "\n")
    print_table(summaries, reference)
    if family_note(families, reference):
        print(family_note(families, reference))
    figures = sum(1 for name in paths if name.endswith(".png"))
    print(f"wrote report.md, summary.json, predictions.jsonl and {figures} figures to {out}/ (store {store.path})")
    for _, rows in results.values():
        raise_if_stopped(rows)
    exit_on_error_rate({display: {"errors": sum(1 for r in rows if r.get("error")), "pairs": len(rows)}
                        for display, (_, rows) in results.items()}, args.max_error_rate,
                       "retry a method's errors with eval.run --method NAME --retry-errors and the same data and LM "
                       "flags (the same run)")
    return summaries


def print_table(summaries: list[dict], reference: str | None) -> None:
    """Print one line per method: coverage, accuracy, F1, kappa, McNemar p vs the reference, tokens, errors."""
    f = number
    width = max([len(s["method"]) for s in summaries] + [6])
    print(f"{'method':<{width}}  {'n':>4}  {'cover':>5}  {'acc':>5}  {'F1':>5}  {'kappa':>6}  {'p':>7}  {'tok/j':>7}  "
          "err/esc")
    for s in summaries:
        p = "ref" if s["method"] == reference else f(s.get("mcnemar_p"), ".4f")
        print(f"{s['method']:<{width}}  {s['n']:>4}  {f(s.get('coverage'), '.2f'):>5}  {f(s['accuracy']):>5}  "
              f"{f(s['macro_f1']):>5}  {f(s['kappa']):>6}  {p:>7}  {f(s['tokens_per_judgment'], '.0f'):>7}  "
              f"{s['errors']}/{s['escalations']}")


if __name__ == "__main__":
    cli_main(main)
