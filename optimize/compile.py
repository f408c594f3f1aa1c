"""Compile a judge: evaluate the uncompiled program on dev, optimise its prompts on train, evaluate again, and write
one self-describing artifact.

    python -m optimize.compile --dataset msrd --budget smoke              # embedded local model, offline
    python -m optimize.compile --dataset esci:/data/shopping_queries_dataset --lm openai/gpt-4o-mini
    python -m optimize.compile --dataset esci --lm openai/gpt-4o-mini     # $HIERA_DATA_DIR/esci, else tasksource/esci

Train pairs: the dataset's `train` split, or `--split NAME` (msrd: `pool`, ~108,700 pairs of the judgments pool, no
dev query among them), capped by `--train-limit N` (a seeded sample). Refit a judge on a person's decisions:

    python -m optimize.compile --train-from RUN_ID [--train-from RUN_ID2] --judge ART --out NEW

takes ART's method, config, dataset and train split, adds the decided pairs of the labelling runs (decisions win over
the split's labels; machine labels are never gold; the runs ART itself learned from are kept) and writes NEW, whose
`training` block says which runs and how many decisions it learned from.

Optimisation metric: exact label match per pair (its mean is accuracy) on the train split (bootstrap) or on dev
minibatches (MIPROv2 / GEPA); reported before and after: accuracy, macro-F1 and Cohen's kappa on the dev split.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import dspy

from hiera_dspy.artifacts.format import ArtifactError, read_artifact
from hiera_dspy.artifacts.judge_file import save_judge
from hiera_dspy.cli.lms import add_lm_arguments, lms_from_args
from hiera_dspy.cli.options import (
    add_config_argument,
    add_data_arguments,
    add_run_arguments,
    begin_run,
    cli_main,
    config_from_args,
    exit_on_error_rate,
    load_data,
    open_store,
    output_folder,
    positive_int,
    print_metrics,
    progress_display,
    raise_if_stopped,
    read_json_file,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.metrics.reference import ReferenceScorer, summary_line
from hiera_dspy.runs.outputs import write_outputs
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows
from hiera_dspy.runs.training import TrainingSource
from optimize.optimizers import BUDGETS, OPTIMIZERS, QUICKSTART, examples

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
    p.add_argument("--out", help="artifact path (default: artifacts/<dataset>/<method>.json)")
    p.add_argument("--skip-before", action="store_true", help="do not evaluate the uncompiled program")
    add_run_arguments(p, run_id=False)
    add_config_argument(p)
    add_lm_arguments(p)
    return p


def evaluate(program, pairs, store, run_id, threads, labels, skipped: int = 0, reference=None, progress=True) -> dict:
    """Judge `pairs` as run `run_id`, write its outputs under the runs folder; return the metrics (`progress`: as
    run_pairs takes it; `reference`: the summary line's embed-lr, a `ReferenceScorer`)."""
    rows = run_pairs(  # a program with a `prefetch` (the probe, ce-blend) scores each window in batches there
        program, pairs, store, run_id, threads=threads, progress=progress)
    metrics = metrics_from_rows(rows, labels)
    metrics["run_id"] = run_id
    metrics["skipped_rows"] = skipped
    metrics["summary"] = summary_line(rows, labels, reference, pairs, getattr(program, "method", ""))
    write_outputs(runs_dir() / run_id, {"run_id": run_id, "skipped_rows": skipped}, metrics, rows)
    raise_if_stopped(rows)
    return metrics


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
    method, config = args.method, {}
    if args.out and Path(args.out).is_dir():
        raise SystemExit(f"error: --out {args.out}: is a folder; --out names the artifact file, e.g. "
                         f"{Path(args.out) / (method + '.json')}")
    if args.out:
        output_folder(Path(args.out).parent, "--out")
    store = open_store(args)
    if args.config:
        spec = read_json_file(args.config, "--config")
        method, config = spec.get("method", method), spec.get("config", {})
        args.knowledge = spec.get("knowledge", args.knowledge)
    preset = QUICKSTART.get(method, {}) if args.budget == "quickstart" and not args.judge else {}
    if preset:  # what command 1 runs for this method: its config, and its split where the dataset has one
        config = {**preset["config"], **config}
    source = training_source(args)
    if args.judge:
        method, config = source.doc["method"], source.doc["config"]
    config = config_from_args(args, method, config)
    budget = BUDGETS[args.budget]
    dataset = load_data(args)
    reference = ReferenceScorer(dataset)  # the summary's embed-lr: fitted on the bundled train split, whatever we use
    if preset and not args.split and preset["split"] in dataset.splits:
        source.split = preset["split"]
    for split in (source.split, "dev"):
        if split not in dataset.splits:
            raise SystemExit(f"error: dataset {args.dataset} has no {split!r} split to compile with; it has "
                             f"{', '.join(sorted(dataset.splits))}")
    runs = list(dict.fromkeys([*source.from_runs, *args.train_from]))
    source.from_runs = {}
    dataset = replace(dataset, splits={**dataset.splits,
                                       "train": source.pairs(dataset.splits[source.split], store, runs)})
    train = dataset.split("train", budget.n_train, balanced=True)
    lms = lms_from_args(args)  # each role's LM is built on first use: none for a method without LM roles
    knowledge = make_knowledge(args.knowledge, dataset)
    program = build(method, BuildContext(dataset.scheme, lms, knowledge, dataset.splits["train"]), **config)
    learned = not program.predictors() and not program.lm_roles  # no prompt, no LM: scoring dev costs seconds
    dev = dataset.split("dev", None if learned else budget.n_dev, balanced=True)  # a learned judge: every dev pair
    if program.lm_roles:  # the optimizers' own calls (instruction proposals) go to the judge LM
        dspy.configure(lm=lms.for_role("judge"))
    started = time.perf_counter()
    prepare_fresh(program, dataset, "dev")  # learned signals: scorer fitted on train, a cascade's tau on dev
    fit_seconds = round(time.perf_counter() - started, 2)
    optimizer = args.optimizer or budget.optimizer if program.predictors() else "none"  # nothing to optimise
    labels = list(dataset.scheme.labels)
    run = RunSpec.compiling(program, dataset=args.dataset, lms=lms, knowledge=knowledge.name)  # phases: qualifiers
    identity = run.identity()
    searched = (f"{len(train)} train pairs for optimizer {optimizer}" if program.predictors() else
                f"learned from {len(dataset.splits['train']):,} pairs of split {source.split!r} in {fit_seconds:.0f} s")
    print(f"compiling {method} on {args.dataset}: {searched}, scored on {len(dev)} dev pairs, budget {args.budget}; "
          f"LMs {run.lms}; knowledge {knowledge.name}", file=sys.stderr)
    before = None
    if not args.skip_before and program.predictors():  # a learned judge has no prompt to compile: before == after
        before_id = replace(run, qualifiers=("dev", "uncompiled")).run_id
        begin_run(store, before_id, {**identity, "phase": "before"}, args)
        before = evaluate(program, dev, store, before_id, args.threads, labels, skipped_rows(dataset), reference,
                          progress_display(args, lms, "dev before"))
    if program.predictors():
        compiled = OPTIMIZERS[optimizer](program, examples(train), examples(dev), budget, args.seed, lms, args.threads)
    else:  # nothing to optimise (embed-lr): the scorer fitted by prepare() is the whole judge
        compiled = program
    compiled.method, compiled.config, compiled.lm_roles = program.method, program.config, program.lm_roles
    learned_from = (source.identity(),) if source.identity() else ()  # a judge fitted on other pairs: another run
    after_id = replace(run, qualifiers=("dev", "compiled", optimizer, args.budget, args.seed,
                                         compiled.dump_state(), *learned_from)).run_id
    begin_run(store, after_id, {**identity, "phase": "after", "optimizer": optimizer, "budget": args.budget}, args)
    after = evaluate(compiled, dev, store, after_id, args.threads, labels, skipped_rows(dataset), reference,
                     progress_display(args, lms, "dev after"))
    out = Path(args.out or Path("artifacts") / dataset.name.split(":")[0] / f"{method}.json")
    metrics = {"before": before, "after": after, "optimizer": optimizer, "budget": args.budget, "seed": args.seed,
               "n_train": len(train), "n_dev": len(dev), "skipped_rows": skipped_rows(dataset)}
    training = source.record(len(dataset.splits["train"]), fit_seconds)
    save_judge(compiled, out, scheme=dataset.scheme, lms=lms, knowledge=knowledge.name, dataset=args.dataset,
               metrics=metrics, training=training)
    info = available().get(method)
    how = f"optimizer {optimizer}, " if program.predictors() else ""
    print(f"compiled: {method} ({info.doc if info else 'a registered method'}); {how}"
          f"{len(dataset.splits['train']):,} train pairs available, scored on {len(dev)} dev pairs")
    for part in getattr(compiled, "learned_from", lambda: [])():
        print(f"  learned: {part}")
    if before:
        print_metrics("dev before", before)
        print(f"  {before['summary']}")
    print_metrics("dev after ", after)
    print(f"  {after['summary']}")
    if args.budget == "smoke":
        print(SMOKE_NOTE.format(n=len(dev)))
    print(f"trained on {training['pairs']} pairs of split {source.split!r}"
          + (f" + {training['decisions']} decisions of {len(runs)} run(s)" if runs else "")
          + f"; fit {fit_seconds:.1f} s, peak memory {training['peak_rss_mb']:.0f} MB")
    print(f"artifact: {out}  (models: {run.lms})")
    print(next_steps(out, dataset.scheme.name))
    exit_on_error_rate({f"dev {phase} (run {m['run_id']})": m for phase, m in (("before", before), ("after", after))
                        if m}, args.max_error_rate, f"the artifact is {out}; each run's errors are in "
                       f"{runs_dir()}/RUN/predictions.jsonl")
    return metrics


def training_source(args) -> TrainingSource:
    """What the compile learns from (--split, --train-limit, --seed; with --judge the artifact's dataset and split
    unless given, in `source.doc` the artifact); a one-line error for --train-from without --judge or no dataset."""
    if args.train_from and not args.judge:
        raise SystemExit("error: --train-from needs --judge ART: the judge to refit on the run's decisions")
    doc = None
    if args.judge:
        try:
            doc = read_artifact(args.judge)
        except ArtifactError as exc:
            raise SystemExit(f"error: --judge {exc}") from None
        if args.config:
            raise SystemExit("error: --judge and --config both name a method; give one")
    source = TrainingSource.of_artifact(doc) if doc else TrainingSource(dataset=args.dataset or "")
    args.dataset = args.dataset or source.dataset
    if not args.dataset:
        raise SystemExit("error: --dataset is required (or --judge ART to refit an artifact on its dataset)")
    source.dataset, source.seed = args.dataset, args.seed
    source.split = args.split or source.split
    source.limit = args.train_limit or source.limit
    source.doc = doc
    return source


if __name__ == "__main__":
    cli_main(main)
