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
`--known FILE` gives every method a judgment list of the same queries: those that read known judgments (a learned
judge's feedback stage) read it once before any pair, their run ids say so, and the report names which did; the
others judge each pair alone (docs/labelling.md#known-judgments).
"""

from __future__ import annotations

import argparse

from hiera_dspy.cli.dry_run import add_dry_run_arguments
from hiera_dspy.cli.lms import add_lm_arguments, lm_choice
from hiera_dspy.cli.options import (
    add_data_arguments,
    add_known_arguments,
    add_run_arguments,
    cli_main,
    exit_on_error_rate,
    positive_int,
    raise_if_stopped,
)
from hiera_dspy.cli.requests import data_source, dry_run_of, known_list, run_options
from hiera_dspy.jobs.ablating import GRIDS, AblateRequest, ablate, cell_run_id, family_of, lm_calls_by_role, variants
from hiera_dspy.metrics.numbers import number
from hiera_dspy.runs.cost import format_forecast, format_total

__all__ = ["main", "parser", "GRIDS", "variants", "cell_run_id", "family_of", "lm_calls_by_role", "print_table"]

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
    add_known_arguments(p)
    add_run_arguments(p)
    add_lm_arguments(p)
    add_dry_run_arguments(p)
    return p


def main(argv: list[str] | None = None) -> list[dict]:
    """Run every requested method on one split, print the comparison table and write the report; return the
    per-method summaries (estimates on a dry run)."""
    args = parser().parse_args(argv)
    names = GRIDS[args.grid]() if args.grid else [m.strip() for m in args.methods.split(",") if m.strip()]
    done = ablate(AblateRequest(data_source(args), tuple(names), args.with_knowledge, args.split, args.limit,
                                args.knowledge, lm_choice(args), args.threads, run_options(args), dry_run_of(args),
                                args.reference, args.out, known_list(args)))
    if args.dry_run:
        print("\n".join([*map(format_forecast, done.estimates), format_total(done.estimates)]))
        return done.estimates
    print_table(done.summaries, done.reference)
    for note in done.notes:
        print(note)
    print(f"wrote report.md, summary.json, predictions.jsonl and {done.figures} figures to {done.report}/ "
          f"(store {done.store})")
    for _, rows in done.results.values():
        raise_if_stopped(rows)
    exit_on_error_rate({display: {"errors": sum(1 for r in rows if r.get("error")), "pairs": len(rows)}
                        for display, (_, rows) in done.results.items()}, args.max_error_rate,
                       "retry a method's errors with eval.run --method NAME --retry-errors and the same data and LM "
                       "flags (the same run)")
    return done.summaries


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
