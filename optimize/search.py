"""Search HIERA's graph configuration with optuna: quality (dev kappa) against cost (tokens per judgment).

    python -m optimize.search --dataset msrd --trials 20 --budget light --out runs/search-msrd
    python -m optimize.compile --dataset msrd --config runs/search-msrd/best.json    # compile the chosen graph

Space: specialists (none, query, item, query+item), Relation Analyzer on/off, knowledge (none, the dataset's catalog,
web when TAVILY_API_KEY is set; a specific --knowledge restricts it to none or that source) with k in {1, 3, 5},
bootstrapped demos per predictor {0, 1, 2} (BootstrapFewShot on the budget's train slice), delegation (triage, always).
A seeded multi-objective TPE study (maximize kappa, minimize tokens) gives the Pareto front. Each trial is judged
through the run store, so a repeated configuration (or a rerun with the same seed) judges nothing new.
Writes OUT/search.json (all trials), OUT/pareto.md (the front) and OUT/best.json (highest-kappa Pareto trial).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import dspy
import optuna

from hiera_dspy.cli.lms import add_lm_arguments, lms_from_args
from hiera_dspy.cli.options import (
    add_data_arguments,
    add_run_arguments,
    begin_run,
    cli_main,
    exit_on_error_rate,
    open_store,
    positive_int,
    progress_display,
    raise_if_stopped,
    runs_dir,
)
from hiera_dspy.cli.requests import data_source
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.optimizers import BUDGETS, examples, label_match
from hiera_dspy.jobs.preparing import load_data
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows
from hiera_dspy.store.run_store import RunStore

SPECIALISTS = {"none": [], "query": ["query"], "item": ["item"], "query+item": ["query", "item"]}


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m optimize.search`."""
    p = argparse.ArgumentParser(prog="python -m optimize.search", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--trials", type=positive_int, required=True, help="number of optuna trials")
    p.add_argument("--budget", default="smoke", choices=["smoke", "light"], help="train/dev slice sizes")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", help="output folder (default: runs/search-<dataset>)")
    add_run_arguments(p, run_id=False)  # --store, --wait, --max-error-rate: each trial is its own run
    add_lm_arguments(p)
    return p


def knowledge_sources(choice: str, dataset) -> list[str]:
    """The knowledge sources a search may try: none, plus the catalog and the web when available."""
    available = (["catalog"] if dataset.catalog else []) + (["web"] if os.environ.get("TAVILY_API_KEY") else [])
    return ["none"] + (available if choice == "auto" else [c for c in available if c == choice])


def suggest(trial: optuna.Trial, sources: list[str]) -> tuple[dict, str, int]:
    """One point of the space: (graph config for build("hiera"), knowledge source, demos per predictor)."""
    source = trial.suggest_categorical("knowledge", sources)
    config = {"relation": trial.suggest_categorical("relation", [True, False]),
              "specialists": SPECIALISTS[trial.suggest_categorical("specialists", list(SPECIALISTS))],
              "knowledge": source != "none",
              "k": trial.suggest_categorical("k", [1, 3, 5]) if source != "none" else 3,
              "delegation": trial.suggest_categorical("delegation", ["triage", "always"])}
    return config, source, trial.suggest_categorical("demos", [0, 1, 2])


class Objective:
    """Build, optionally bootstrap, and judge dev for one trial; (kappa, tokens per judgment)."""

    def __init__(self, args, dataset, lms, store: RunStore):
        self.args, self.dataset, self.lms, self.store = args, dataset, lms, store
        budget = BUDGETS[args.budget]
        self.train, self.dev = dataset.split("train", budget.n_train), dataset.split("dev", budget.n_dev)
        self.sources = knowledge_sources(args.knowledge, dataset)
        self._knowledge: dict = {}

    def knowledge(self, source: str):
        """The knowledge source named `source`, built once per search."""
        if source not in self._knowledge:
            self._knowledge[source] = make_knowledge(source, self.dataset)
        return self._knowledge[source]

    def __call__(self, trial: optuna.Trial) -> tuple[float, float]:
        config, source, demos = suggest(trial, self.sources)
        knowledge = self.knowledge(source)
        ctx = BuildContext(self.dataset.scheme, self.lms, knowledge, self.dataset.splits.get("train", []))
        program = build("hiera", ctx, **config)
        spec = RunSpec.of(program, dataset=self.args.dataset, split="dev", lms=self.lms, knowledge=knowledge.name,
                          extra={"demos": demos, "n_train": len(self.train), "seed": self.args.seed, "phase": "search"})
        identity, run_id = spec.identity(), spec.run_id
        begin_run(self.store, run_id, identity, self.args)
        finished = self.store.finished_ids(run_id)
        if demos and not all(p.id in finished for p in self.dev):  # compile only when something is left to judge
            optimizer = dspy.BootstrapFewShot(metric=label_match, max_bootstrapped_demos=demos,
                                              max_labeled_demos=demos, max_rounds=1)
            program = optimizer.compile(program, trainset=examples(self.train))
        rows = run_pairs(program, self.dev, self.store, run_id, threads=self.args.threads,
                         progress=progress_display(self.args, self.lms, f"trial {trial.number}"), lms=self.lms)
        raise_if_stopped(rows)
        m = metrics_from_rows(rows, list(self.dataset.scheme.labels))
        kappa, tokens = m["kappa"] if m["kappa"] is not None else 0.0, m["tokens_per_judgment"]
        trial.set_user_attr("config", config)
        trial.set_user_attr("knowledge_source", source)
        for key in ("accuracy", "macro_f1", "errors", "lm_calls_per_judgment"):
            trial.set_user_attr(key, m[key])
        trial.set_user_attr("tokens_per_judgment", tokens)
        trial.set_user_attr("run_id", run_id)
        print(f"trial {trial.number}: kappa {kappa:.3f}, tokens/judgment {tokens or 0:.0f}, demos {demos}, "
              f"knowledge {source}, config {config}", file=sys.stderr)
        return kappa, float(tokens) if tokens is not None else float("inf")


def trial_record(t: optuna.trial.FrozenTrial, front: set[int]) -> dict:
    """A trial as a JSON-ready record (kappa, tokens, params, on the Pareto front or not)."""
    values = t.values or [None, None]
    return {"number": t.number, "state": t.state.name, "kappa": values[0], "tokens_per_judgment": values[1],
            "params": t.params, "pareto": t.number in front, **t.user_attrs}


def write_pareto(path: Path, front: list[dict]) -> None:
    """Write the Pareto-optimal trials as a Markdown table."""
    lines = ["# Pareto-optimal HIERA configurations (dev kappa vs tokens per judgment)", "",
             "| trial | kappa | accuracy | tokens/judgment | specialists | relation | knowledge (k) | demos | "
             "delegation |", "|" + "---|" * 9]
    for t in front:
        c = t["config"]
        knowledge = f"{t['knowledge_source']} ({c['k']})" if c["knowledge"] else "none"
        lines.append(f"| {t['number']} | {t['kappa']:.3f} | {t['accuracy'] or 0:.3f} | {t['tokens_per_judgment']:.0f} "
                     f"| {'+'.join(c['specialists']) or '-'} | {c['relation']} | {knowledge} | {t['params']['demos']} "
                     f"| {c['delegation']} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> dict:
    """Search HIERA graph configurations with optuna (kappa up, tokens down); returns the Pareto front."""
    args = parser().parse_args(argv)
    dataset = load_data(data_source(args))
    for split in ("train", "dev"):
        if split not in dataset.splits:
            raise RequestError(f"dataset {args.dataset} has no {split!r} split to search with")
    lms = lms_from_args(args)
    dspy.configure(lm=lms.for_role("judge"))
    store = open_store(args)
    objective = Objective(args, dataset, lms, store)
    print(f"searching HIERA graphs on {args.dataset}: {args.trials} trials, {len(objective.train)} train / "
          f"{len(objective.dev)} dev pairs, knowledge sources {objective.sources}", file=sys.stderr)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "minimize"], study_name="hiera-graph",
                                sampler=optuna.samplers.TPESampler(seed=args.seed))
    study.optimize(objective, n_trials=args.trials)

    front_ids = {t.number for t in study.best_trials}
    trials = [trial_record(t, front_ids) for t in study.trials]
    front = sorted((t for t in trials if t["pareto"]), key=lambda t: (t["tokens_per_judgment"], -t["kappa"]))
    out = Path(args.out or runs_dir() / f"search-{args.dataset.replace(':', '_').replace('/', '_')}")
    spec = write_results(out, trials, front, args.dataset)
    exit_on_error_rate({f"trial {t['number']} (run {t['run_id']})": {"errors": t["errors"], "pairs": len(objective.dev)}
                        for t in trials if t.get("errors") is not None}, args.max_error_rate)
    return {"trials": trials, "front": front, "best": spec}


def write_results(out: Path, trials: list[dict], front: list[dict], dataset: str) -> dict:
    """Write search.json, pareto.md and best.json (the front's best kappa, fewest tokens on a tie) to `out`, print
    the front; returns best.json's spec."""
    best = max(front, key=lambda t: (t["kappa"], -t["tokens_per_judgment"]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "search.json").write_text(json.dumps(trials, indent=1, default=str))
    write_pareto(out / "pareto.md", front)
    spec = {"method": "hiera", "config": best["config"], "knowledge": best["knowledge_source"],
            "demos": best["params"]["demos"], "trial": best["number"],
            "dev": {k: best[k] for k in ("kappa", "accuracy", "macro_f1", "tokens_per_judgment")}}
    (out / "best.json").write_text(json.dumps(spec, indent=1))
    print("Pareto front (kappa, tokens/judgment):")
    for t in front:
        print(f"  trial {t['number']}: kappa {t['kappa']:.3f}, {t['tokens_per_judgment']:.0f} tokens, "
              f"demos {t['params']['demos']}, knowledge {t['knowledge_source']}, {t['config']}")
    print(f"wrote {out}/search.json, pareto.md, best.json (compile it: python -m optimize.compile --dataset "
          f"{dataset} --config {out}/best.json)")
    return spec


if __name__ == "__main__":
    cli_main(main)
