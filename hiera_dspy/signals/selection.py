"""Choosing a scorer's C without touching the evaluation pairs: a query-grouped dev split carved out of the train
pairs.

With `C_grid`, `RelevanceScorer.fit` holds out `dev_share` of the train queries (all their pairs; seeded), fits one
scorer per C on the rest, keeps the C with the lowest log loss on the held-out queries (ties: the smaller C, the
simpler model), and refits on every train pair. Grouping by query matters: pairs of one query share its text, so a
pair-level split would reward memorising queries.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from hiera_dspy.errors import HieraError
from hiera_dspy.records import Pair


def query_grouped_split(pairs: Sequence[Pair], dev_share: float = 0.2, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """(fit, dev): the pairs of a seeded `dev_share` of the queries (at least one) in dev, the rest in fit."""
    queries = sorted({p.query_id or p.query for p in pairs})
    if len(queries) < 2:
        raise HieraError(f"choosing C needs train pairs of at least 2 queries; got {len(queries)}")
    k = min(len(queries) - 1, max(1, round(len(queries) * dev_share)))
    held = set(random.Random(seed).sample(queries, k))
    fit = [p for p in pairs if (p.query_id or p.query) not in held]
    dev = [p for p in pairs if (p.query_id or p.query) in held]
    return fit, dev


def log_loss(dists: Sequence[dict[str, float]], gold: Sequence[str]) -> float:
    """Mean negative log probability of the gold labels (probabilities clipped at 1e-12)."""
    return -sum(math.log(max(1e-12, d.get(g, 0.0))) for d, g in zip(dists, gold)) / max(1, len(gold))


def choose_C(fit: Callable[[list[Pair], float], object], pairs: Sequence[Pair], grid: Sequence[float],
             dev_share: float = 0.2, seed: int = 0) -> tuple[float, dict[float, float]]:
    """The C of `grid` whose scorer (`fit(pairs, C)` -> has `predict_proba_many`) has the lowest dev log loss; also
    every C's loss."""
    train, dev = query_grouped_split(pairs, dev_share, seed)
    losses = {}
    for C in sorted(grid):
        scorer = fit(train, C)
        losses[float(C)] = log_loss(scorer.predict_proba_many(dev), [p.label for p in dev])
    best = min(losses, key=lambda c: (losses[c], c))
    return best, losses
