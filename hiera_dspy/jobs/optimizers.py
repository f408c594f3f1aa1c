"""Optimizer adapters by name: bootstrap (BootstrapFewShot), mipro (MIPROv2, optuna-backed), gepa, simba, none.

Each takes the program, train/dev Examples, the metric and a Budget and returns the compiled program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import dspy


def examples(pairs) -> list[dspy.Example]:
    """Pairs as DSPy Examples (inputs query, item_title, item_text; `label` the gold label, `pair_id` kept)."""
    return [dspy.Example(**pair.inputs(), label=pair.label, pair_id=pair.id).with_inputs(
        "query", "item_title", "item_text") for pair in pairs]


@dataclass(frozen=True)
class Budget:
    """How much data and search a compile budget allows, and its default optimizer."""
    n_train: int
    n_dev: int
    max_demos: int
    optimizer: str  # the default optimizer at this budget
    candidates: int = 0
    trials: int = 0
    minibatch: int = 0


BUDGETS = {
    # smoke: a few minutes with the local 1.5B model on 2 cores; bootstrapped demos only
    "smoke": Budget(n_train=2, n_dev=4, max_demos=1, optimizer="bootstrap"),
    # quickstart: README command 1 (a learned judge is scored on every dev pair: msrd's 300, a kappa CI of about
    # +-0.08; a judge with an LLM on 150, about +-0.12)
    "quickstart": Budget(n_train=10**9, n_dev=150, max_demos=1, optimizer="none"),
    "light": Budget(n_train=40, n_dev=40, max_demos=2, optimizer="mipro", candidates=4, trials=8, minibatch=20),
    # light-full: light's search on every train pair, valset and before/after on every dev pair (bench/compile_local.py)
    "light-full": Budget(n_train=10**9, n_dev=10**9, max_demos=2, optimizer="mipro", candidates=4, trials=8,
                         minibatch=20),
    "medium": Budget(n_train=150, n_dev=100, max_demos=3, optimizer="mipro", candidates=8, trials=20, minibatch=35),
    "heavy": Budget(n_train=10**9, n_dev=10**9, max_demos=4, optimizer="mipro", candidates=12, trials=40,
                    minibatch=35),
}


# what `--budget quickstart` runs for a method that learns from a large labelled split (README command 1, minutes on
# 2 cores): the split and config keys, each overridden by --split / --set. ce-blend: the lexical whole-pool trees
# scorer (no MiniLM pass over the pool's 21,672 texts) and a cross-encoder fine-tuned on 1,024 of the pool's pairs
# (bench/speed.py measures what that costs and scores)
QUICKSTART = {
    "ce-blend": {"split": "pool", "config": {"embedder": "lexical", "model": "hgb", "features": "query+prior",
                                             "class_weight": "balanced", "ce_pairs": 1024}},
}


def label_match(gold: dspy.Example, pred: dspy.Prediction, trace=None, *_) -> float:
    """The optimisation metric: 1.0 when the predicted label equals the gold label, else 0.0 (mean = accuracy)."""
    return float(getattr(pred, "label", None) == gold.label)


def _bootstrap(program, train, dev, budget: Budget, seed: int, lms, threads: int):
    optimizer = dspy.BootstrapFewShot(metric=label_match, max_bootstrapped_demos=budget.max_demos,
                                      max_labeled_demos=budget.max_demos, max_rounds=1)
    return optimizer.compile(program, trainset=train)


def _mipro(program, train, dev, budget: Budget, seed: int, lms, threads: int):
    optimizer = dspy.MIPROv2(metric=label_match, prompt_model=lms.for_role("judge"), task_model=lms.for_role("judge"),
                             auto=None, num_candidates=budget.candidates, max_bootstrapped_demos=budget.max_demos,
                             max_labeled_demos=budget.max_demos, num_threads=threads, seed=seed, verbose=False)
    return optimizer.compile(program, trainset=train, valset=dev, num_trials=budget.trials,
                             minibatch=len(dev) > budget.minibatch, minibatch_size=min(budget.minibatch, len(dev)))


def _gepa(program, train, dev, budget: Budget, seed: int, lms, threads: int):
    def metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
        ok = label_match(gold, pred)
        feedback = "correct" if ok else f"predicted {getattr(pred, 'label', None)!r}, gold label is {gold.label!r}"
        return dspy.Prediction(score=ok, feedback=feedback)

    optimizer = dspy.GEPA(metric=metric, reflection_lm=lms.for_role("judge"), max_full_evals=max(1, budget.trials // 4),
                          num_threads=threads, seed=seed)
    return optimizer.compile(program, trainset=train, valset=dev)


def _simba(program, train, dev, budget: Budget, seed: int, lms, threads: int):
    bsize = max(2, min(8, len(train)))
    optimizer = dspy.SIMBA(metric=label_match, bsize=bsize, max_demos=budget.max_demos, num_threads=threads)
    return optimizer.compile(program, trainset=train, seed=seed)


def _none(program, train, dev, budget: Budget, seed: int, lms, threads: int):
    """No prompt optimisation: for methods whose learning is their fitted state (stacked: scorer + stacker on train)."""
    return program


OPTIMIZERS: dict[str, Callable] = {"bootstrap": _bootstrap, "mipro": _mipro, "gepa": _gepa, "simba": _simba,
                                   "none": _none}
