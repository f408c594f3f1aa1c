"""Compile a judge: evaluate the uncompiled program on dev, optimise its prompts on train, evaluate again, and write
one self-describing artifact.

    python -m optimize.compile --dataset msrd --budget smoke              # embedded local model, offline
    python -m optimize.compile --dataset esci:/data/shopping_queries_dataset --lm openai/gpt-4o-mini
    python -m optimize.compile --dataset esci --lm openai/gpt-4o-mini     # $HIERA_DATA_DIR/esci, else tasksource/esci

Train pairs: the dataset's `train` split, or `--split NAME` (msrd: `pool`, ~108,700 pairs of the judgments pool, no
dev query among them), capped by `--train-limit N` (a seeded sample). Refit a judge on a person's decisions:

    python -m optimize.compile --train-from RUN_ID [--train-from RUN_ID2] --judge ART --artifact NEW

takes ART's method, config, dataset and train split, adds the decided pairs of the labelling runs (decisions win over
the split's labels; machine labels are never gold; the runs ART itself learned from are kept) and writes NEW, whose
`training` block says which runs and how many decisions it learned from.

Optimisation metric: exact label match per pair (its mean is accuracy) on the train split (bootstrap) or on dev
minibatches (MIPROv2 / GEPA); reported before and after: accuracy, macro-F1 and Cohen's kappa on the dev split.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hiera_dspy.api import Compiled, CompileRequest, compile_judge
from hiera_dspy.cli.engines import add_engine_arguments, options_from_args
from hiera_dspy.cli.lms import add_lm_arguments, lm_choice
from hiera_dspy.cli.options import (
    add_config_argument,
    add_data_arguments,
    add_renamed,
    add_run_arguments,
    cli_main,
    exit_on_error_rate,
    positive_int,
    print_metrics,
    runs_dir,
)
from hiera_dspy.cli.requests import data_source, run_options
from hiera_dspy.jobs.optimizers import BUDGETS, OPTIMIZERS
from hiera_dspy.methods import available

SMOKE_NOTE = ("--budget smoke judges {n} dev pairs: far too few to compare methods (a kappa CI spans about +-0.5 at "
              "this size). It checks that the pipeline runs; compare methods with bench/local_probs.py (all 300 MSRD "
              "dev pairs, McNemar vs embed-lr) or eval.run --split dev without --limit.")


def parser() -> argparse.ArgumentParser:
    """The command-line options of optimize.compile."""
    p = argparse.ArgumentParser(prog="python -m optimize.compile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p._option_string_actions["--dataset"].required = False  # with --judge: the artifact's dataset
    p.add_argument("--method", default="hiera", help="registered method to compile (default: hiera)")
    t = p.add_argument_group("train pairs")
    t.add_argument("--split", help="the split to learn from (default: train; msrd: pool = the judgments pool)")
    t.add_argument("--train-limit", type=positive_int, metavar="N",
                   help="learn from a seeded sample of N pairs of the split (default: all)")
    t.add_argument("--train-from", action="append", default=[], metavar="RUN_ID",
                   help="add the pairs a person decided in this labelling run (repeatable; needs --judge)")
    t.add_argument("--judge", help="refit this artifact: its method, config, dataset and split (with --train-from)")
    p.add_argument("--config", help="JSON file with a method and its graph config (from optimize.search)")
    p.add_argument("--optimizer", choices=sorted(OPTIMIZERS), help="default: bootstrap at smoke, mipro above")
    p.add_argument("--budget", default="light", choices=list(BUDGETS))
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--artifact", help="artifact path (default: artifacts/<dataset>/<method>.json)")
    p.add_argument("--skip-before", action="store_true", help="do not evaluate the uncompiled program")
    add_run_arguments(p, run_id=False)
    add_engine_arguments(p)  # how dev is scored before and after
    add_config_argument(p)
    add_lm_arguments(p)
    add_renamed(p, "--artifact", "--out")  # the old spelling, one release
    return p


NEXT = (  # (what, command): the three commands a newcomer runs next with the compiled judge
    ("label your own pairs", "python -m eval.label --dataset jsonl:YOUR_PAIRS.jsonl --scheme {scheme} --judge {art} "
                             "--out runs/mine"),
    ("fill a benchmark's holes", "python -m eval.holes --topics topics.tsv --corpus corpus.jsonl --qrels qrels.txt "
                                 "--runs a.run,b.run --scheme {scheme} --judge {art} --out runs/filled"),
    ("review the least sure", "python -m eval.review --run RUN_ID     (RUN_ID: printed by either command above)"),
)


def next_steps(artifact: Path, scheme: str) -> str:
    """The three commands a newcomer runs next with the compiled judge."""
    return "next:\n" + "\n".join(f"  {what + ':':<25} {cmd.format(art=artifact, scheme=scheme)}" for what, cmd in NEXT)


def main(argv: list[str] | None = None) -> dict:
    """Compile a method on the train split, evaluate it on dev before and after, save the artifact; return both
    dev metrics with the optimizer settings."""
    args = parser().parse_args(argv)
    compiled = compile_judge(CompileRequest(
        data_source(args) if args.dataset else None, method=args.method, config_file=args.config,
        settings=tuple(args.settings or ()), knowledge=args.knowledge, split=args.split, train_limit=args.train_limit,
        train_from=tuple(args.train_from), judge=args.judge, optimizer=args.optimizer, budget=args.budget,
        seed=args.seed, out=args.artifact, skip_before=args.skip_before, lms=lm_choice(args), threads=args.threads,
        run=run_options(args), engine=args.engine, engine_options=options_from_args(args)))
    print_compiled(compiled)
    phases = (("before", compiled.before), ("after", compiled.after))
    exit_on_error_rate({f"dev {phase} (run {m['run_id']})": m for phase, m in phases if m}, args.max_error_rate,
                       f"the artifact is {compiled.artifact}; each run's errors are in "
                       f"{runs_dir()}/RUN/predictions.jsonl")
    return compiled.metrics


def print_compiled(c: Compiled) -> None:
    """What was compiled, its dev metrics before and after, what it learned from, where the artifact is, and what
    to run next."""
    info = available().get(c.method)
    how = f"optimizer {c.optimizer}, " if c.optimizer else ""
    print(f"compiled: {c.method} ({info.doc if info else 'a registered method'}); {how}"
          f"{c.n_train_available:,} train pairs available, scored on {c.n_dev} dev pairs")
    for part in c.learned:
        print(f"  learned: {part}")
    if c.before:
        print_metrics("dev before", c.before)
        print(f"  {c.before['summary']}")
    print_metrics("dev after ", c.after)
    print(f"  {c.after['summary']}")
    if c.metrics.get("dev_in_train"):
        print(f"  in-sample: {c.metrics['dev_in_train']:,} of the {c.n_dev:,} dev pairs are among the pairs it was "
              f"trained on (split {c.split!r}), so the dev scores say nothing of new queries; judge other data with "
              "`hiera-dspy run --judge ARTIFACT`")
    if c.metrics["budget"] == "smoke":
        print(SMOKE_NOTE.format(n=c.n_dev))
    print(f"trained on {c.training['pairs']} pairs of split {c.split!r}"
          + (f" + {c.training['decisions']} decisions of {c.from_runs} run(s)" if c.from_runs else "")
          + f"; fit {c.fit_seconds:.1f} s, peak memory {c.training['peak_rss_mb']:.0f} MB")
    print(f"artifact: {c.artifact}  (models: {c.lms})")
    print(next_steps(c.artifact, c.scheme))


if __name__ == "__main__":
    cli_main(main)
