"""The paper's sampling protocol: a balanced ~1,000-pair `eval` sample drawn with seed 42, plus `train` and `dev`
pools for prompt optimisation that share no query with `eval` or with each other.

Deterministic: pairs are sorted by id before any random draw, so the same files give the same splits anywhere.
"""

from __future__ import annotations

import random
from collections import defaultdict

from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair


def balanced_sample(pairs: list[Pair], scheme: LabelScheme, n: int, seed: int = 42) -> list[Pair]:
    """Up to `n` pairs with equal counts per label (fewer if a label is rare), in a seeded random order."""
    rng = random.Random(seed)
    by_label: dict[str, list[Pair]] = defaultdict(list)
    for pair in sorted(pairs, key=lambda p: p.id):
        by_label[pair.label].append(pair)
    per_label = min([n // len(scheme.labels)] + [len(by_label[label]) for label in scheme.labels])
    chosen = []
    for label in scheme.labels:
        chosen += rng.sample(by_label[label], per_label)
    rng.shuffle(chosen)
    return chosen


def make_splits(pairs: list[Pair], scheme: LabelScheme, *, seed: int = 42, n_eval: int = 1000,
                n_train: int = 300, n_dev: int = 300) -> dict[str, list[Pair]]:
    """Split into query-disjoint `eval`, `train`, `dev` (eval drawn first from ~60% of queries, then train, dev)."""
    rng = random.Random(seed)
    queries = sorted({p.query_id for p in pairs})
    rng.shuffle(queries)
    cut1, cut2 = int(len(queries) * 0.6), int(len(queries) * 0.8)
    groups = {"eval": set(queries[:cut1]), "train": set(queries[cut1:cut2]), "dev": set(queries[cut2:])}
    sizes = {"eval": n_eval, "train": n_train, "dev": n_dev}
    return {name: balanced_sample([p for p in pairs if p.query_id in qs], scheme, sizes[name], seed)
            for name, qs in groups.items()}
