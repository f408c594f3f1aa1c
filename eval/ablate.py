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
from collections import defaultdict

from eval.disagreements import report_section
from eval.report import comparison_families, family_note, sanitize, summarize_method, write_report
from hiera_dspy.cli.dry_run import add_dry_run_arguments
from hiera_dspy.cli.lms import add_lm_arguments, lm_choice
from hiera_dspy.cli.options import (
    add_data_arguments,
    add_run_arguments,
    cli_main,
    exit_on_error_rate,
    positive_int,
    raise_if_stopped,
    runs_dir,
)
from hiera_dspy.cli.requests import data_source, dry_run_of, run_options
from hiera_dspy.jobs.ablating import DEBATE, GRIDS, AblateRequest, Ablation, ablate, cell_run_id, family_of, variants
from hiera_dspy.jobs.preparing import output_folder, skipped_rows
from hiera_dspy.methods import available
from hiera_dspy.metrics.format import number
from hiera_dspy.records import as_judgment
from hiera_dspy.runs.cost import format_forecast, format_total

__all__ = ["main", "parser", "GRIDS", "variants", "cell_run_id", "family_of", "lm_calls_by_role", "print_table"]

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
    if args.out:
        output_folder(args.out)
    done = ablate(AblateRequest(data_source(args), tuple(names), args.with_knowledge, args.split, args.limit,
                                args.knowledge, lm_choice(args), args.threads, run_options(args), dry_run_of(args)))
    if args.dry_run:
        print("\n".join([*map(format_forecast, done.estimates), format_total(done.estimates)]))
        return done.estimates
    summaries = report(done, args.reference, args.out or runs_dir() / f"ablate-{sanitize(args.dataset)}-{done.split}",
                       args.dataset)
    for _, rows in done.results.values():
        raise_if_stopped(rows)
    exit_on_error_rate({display: {"errors": sum(1 for r in rows if r.get("error")), "pairs": len(rows)}
                        for display, (_, rows) in done.results.items()}, args.max_error_rate,
                       "retry a method's errors with eval.run --method NAME --retry-errors and the same data and LM "
                       "flags (the same run)")
    return summaries


def report(done: Ablation, reference_name: str, out, dataset_spec: str) -> list[dict]:
    """Score every method (McNemar against the reference, Bonferroni within each family), write report.md,
    summary.json, predictions.jsonl and the figures to `out`, print the table; return the per-method summaries."""
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
        summaries.append(s)
    out = output_folder(out)
    has_dream = any(available()[m].family in DEBATE for _, m, _ in done.variants)
    title = f"{dataset_spec} [{done.split}]: {len(done.pairs)} pairs, LMs {done.lms}, knowledge {done.knowledge}"
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
    print(f"wrote report.md, summary.json, predictions.jsonl and {figures} figures to {out}/ (store {done.store})")
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
