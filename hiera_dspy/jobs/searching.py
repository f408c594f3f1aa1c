"""Search HIERA's graph configuration with optuna (what `python -m optimize.search` does): quality (dev kappa) against
cost (tokens per judgment), each trial judged through the run store.

Space: specialists (none, query, item, query+item), Relation Analyzer on/off, knowledge (none, the dataset's catalog,
web when TAVILY_API_KEY is set; a specific choice restricts it to none or that source) with k in {1, 3, 5},
bootstrapped demos per predictor {0, 1, 2} (BootstrapFewShot on the budget's train slice), delegation (triage, always).
A seeded multi-objective TPE study (maximize kappa, minimize tokens) gives the Pareto front (`search`); a repeated
configuration (or a rerun with the same seed) judges nothing new. `write_results` writes search.json, pareto.md and
best.json (the front's highest kappa), the config `optimize.compile --config` compiles.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import dspy
import optuna

from hiera_dspy.data import Dataset
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.optimizers import BUDGETS, examples, label_match
from hiera_dspy.jobs.preparing import progress_display
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows
from hiera_dspy.store.opening import begin_run
from hiera_dspy.store.run_store import RunStore

SPECIALISTS = {"none": [], "query": ["query"], "item": ["item"], "query+item": ["query", "item"]}


@dataclass(frozen=True)
class SearchSettings:
    """How a search runs: the `dataset` spec naming its runs, the `budget` (train/dev slice sizes: smoke | light), the
    TPE `seed`, the `knowledge` choice (auto | none | catalog | web), `threads` a trial judges on, whether a trial
    `wait`s for another writer of its run, and `verbose` progress (a line per judgment)."""

    dataset: str
    budget: str = "smoke"
    seed: int = 42
    knowledge: str = "auto"
    threads: int = 1
    wait: bool = False
    verbose: bool = False


def knowledge_sources(choice: str, dataset: Dataset) -> list[str]:
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

    def __init__(self, settings: SearchSettings, dataset: Dataset, lms, store: RunStore):
        self.settings, self.dataset, self.lms, self.store = settings, dataset, lms, store
        budget = BUDGETS[settings.budget]
        self.train, self.dev = dataset.split("train", budget.n_train), dataset.split("dev", budget.n_dev)
        self.sources = knowledge_sources(settings.knowledge, dataset)
        self._knowledge: dict = {}

    def knowledge(self, source: str):
        """The knowledge source named `source`, built once per search."""
        if source not in self._knowledge:
            self._knowledge[source] = make_knowledge(source, self.dataset)
        return self._knowledge[source]

    def __call__(self, trial: optuna.Trial) -> tuple[float, float]:
        s = self.settings
        config, source, demos = suggest(trial, self.sources)
        knowledge = self.knowledge(source)
        ctx = BuildContext(self.dataset.scheme, self.lms, knowledge, self.dataset.splits.get("train", []))
        program = build("hiera", ctx, **config)
        spec = RunSpec.of(program, dataset=s.dataset, split="dev", lms=self.lms, knowledge=knowledge.name,
                          extra={"demos": demos, "n_train": len(self.train), "seed": s.seed, "phase": "search"})
        identity, run_id = spec.identity(), spec.run_id
        begin_run(self.store, run_id, identity, s.wait)
        finished = self.store.finished_ids(run_id)
        if demos and not all(p.id in finished for p in self.dev):  # compile only when something is left to judge
            optimizer = dspy.BootstrapFewShot(metric=label_match, max_bootstrapped_demos=demos,
                                              max_labeled_demos=demos, max_rounds=1)
            program = optimizer.compile(program, trainset=examples(self.train))
        rows = run_pairs(program, self.dev, self.store, run_id, threads=s.threads,
                         progress=progress_display(s.verbose, self.lms, f"trial {trial.number}"), lms=self.lms)
        stopped = getattr(rows, "stopped", None)
        if stopped is not None:  # an unreachable endpoint: the trials left would not reach it
            raise stopped
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


def check_splits(dataset: Dataset, name: str) -> None:
    """A RequestError unless the dataset has the train and dev splits a search needs."""
    for split in ("train", "dev"):
        if split not in dataset.splits:
            raise RequestError(f"dataset {name} has no {split!r} split to search with")


def search(settings: SearchSettings, dataset: Dataset, lms, store: RunStore, trials: int) -> tuple[list[dict],
                                                                                                   list[dict], int]:
    """Run `trials` optuna trials on the dataset's train and dev splits; (every trial's record, the Pareto front by
    tokens then kappa, the dev pairs each trial judged)."""
    check_splits(dataset, settings.dataset)
    dspy.configure(lm=lms.for_role("judge"))
    objective = Objective(settings, dataset, lms, store)
    print(f"searching HIERA graphs on {settings.dataset}: {trials} trials, {len(objective.train)} train / "
          f"{len(objective.dev)} dev pairs, knowledge sources {objective.sources}", file=sys.stderr)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "minimize"], study_name="hiera-graph",
                                sampler=optuna.samplers.TPESampler(seed=settings.seed))
    study.optimize(objective, n_trials=trials)
    front_ids = {t.number for t in study.best_trials}
    records = [trial_record(t, front_ids) for t in study.trials]
    front = sorted((t for t in records if t["pareto"]), key=lambda t: (t["tokens_per_judgment"], -t["kappa"]))
    return records, front, len(objective.dev)


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


def write_results(out: Path, trials: list[dict], front: list[dict]) -> dict:
    """Write search.json, pareto.md and best.json (the front's best kappa, fewest tokens on a tie) to `out`; returns
    best.json's spec."""
    best = max(front, key=lambda t: (t["kappa"], -t["tokens_per_judgment"]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "search.json").write_text(json.dumps(trials, indent=1, default=str))
    write_pareto(out / "pareto.md", front)
    spec = {"method": "hiera", "config": best["config"], "knowledge": best["knowledge_source"],
            "demos": best["params"]["demos"], "trial": best["number"],
            "dev": {k: best[k] for k in ("kappa", "accuracy", "macro_f1", "tokens_per_judgment")}}
    (out / "best.json").write_text(json.dumps(spec, indent=1))
    return spec
