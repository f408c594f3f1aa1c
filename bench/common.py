"""The protocols the benchmarks share: held-out splits of the MSRD judgments pool, balanced draws, result files.

- `heldout_split`: bench.learning's held-out hole queries (pool queries outside train and dev);
- `held_out`: bench.manipulation's held-out pairs (one pair a query outside train and dev, half relevant);
- `heldout_pairs`, `fresh_pairs`, `probe_pool_pairs`: bench.probe_heldout's balanced held-out sets (one relevant and
  one irrelevant pair a fresh query, none of the queries above), used by bench.probe_method, bench.cross_encoder,
  bench.pool_select and bench.probe_ablation;
- `metrics_row`, `mcnemar_cell`, `write_result`: a judge's row (kappa with CI, McNemar vs the reference), its cell, and
  OUT/STEM.json + OUT/STEM.md.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np

from hiera_dspy.data.msrd_pool import pool_item_text
from hiera_dspy.data.msrd_sample import CATALOG_FIELDS
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.numbers import number
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.records import Pair

OUT = Path("bench/results")
POOL_OPTIONS = {"model": "hgb", "features": "query", "class_weight": "balanced"}
MSRD = Path(__file__).resolve().parents[1] / "hiera_dspy" / "data" / "msrd"


def heldout_split(pool: list[Pair], train: list[Pair], dev: list[Pair], n_queries: int,
                  seed: int) -> tuple[list[Pair], list[Pair]]:
    """(pool train pairs, held-out holes): `n_queries` seeded pool queries that are no train or dev query."""
    taken = {p.query_id for p in train} | {p.query_id for p in dev}
    queries = sorted({p.query_id for p in pool} - taken)
    held = set(random.Random(seed).sample(queries, min(n_queries, len(queries))))
    return [p for p in pool if p.query_id not in held], [p for p in pool if p.query_id in held]


def held_out(dataset, n: int, seed: int) -> list[Pair]:
    """`n` pool pairs (half relevant) of queries outside train and dev, one per query, in a seeded order."""
    seen = {p.query_id for split in ("train", "dev") for p in dataset.splits[split]}
    with gzip.open(MSRD / "movies-corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        catalog = {str(r["id"]): r for r in map(json.loads, fh)}
    by_label: dict[str, dict[str, Pair]] = defaultdict(dict)
    with gzip.open(MSRD / "judgments-pool.tsv.gz", "rt", encoding="utf-8") as fh:
        next(fh)
        rows = [line.rstrip("\n").split("\t") for line in fh]
    random.Random(seed).shuffle(rows)
    for qid, query, doc, grade in rows:
        row = catalog.get(doc)
        label = dataset.scheme.from_raw(int(grade))
        if qid in seen or row is None or qid in by_label["Irrelevant"] or qid in by_label["Relevant"]:
            continue
        by_label[label][qid] = Pair(f"msrd:{qid}:{doc}", query, str(row["title"]), pool_item_text(row, CATALOG_FIELDS), label, qid, doc)
    half = n // 2
    pairs = list(by_label["Relevant"].values())[:half] + list(by_label["Irrelevant"].values())[:n - half]
    random.Random(seed).shuffle(pairs)
    return pairs


def excluded_queries(dataset) -> set[str]:
    """Queries some earlier measurement or fit already used: train, dev, bench/learning.py's held-out holes (seed 7,
    200 queries) and bench/manipulation.py's held-out pairs (seed 0, 300 pairs)."""
    train, dev = list(dataset.split("train")), list(dataset.split("dev"))
    taken = {p.query_id for p in train} | {p.query_id for p in dev}
    _, holes = heldout_split(list(dataset.split("pool")), train, dev, 200, 7)
    taken |= {p.query_id for p in holes}
    taken |= {p.query_id for p in held_out(dataset, 300, 0)}
    return taken


def balanced_pairs(dataset, taken: set[str], n_queries: int, rng: random.Random, query_order: bool = False):
    """One relevant and one irrelevant pool pair of each of `n_queries` pool queries drawn by `rng` among those not in
    `taken` that have both (in draw order, or in query order: a query's prompts then share their prefix)."""
    labels = dataset.scheme.labels
    by_query: dict[str, dict[str, list[Pair]]] = defaultdict(lambda: defaultdict(list))
    for p in dataset.split("pool"):
        if p.query_id not in taken:
            by_query[p.query_id][p.label].append(p)
    both = sorted(q for q, d in by_query.items() if d[labels[0]] and d[labels[-1]])
    chosen = rng.sample(both, min(n_queries, len(both)))
    return [rng.choice(by_query[q][label]) for q in (sorted(chosen) if query_order else chosen)
            for label in (labels[-1], labels[0])]


def heldout_pairs(dataset, n_queries: int = 200, seed: int = 21) -> list[Pair]:
    """One relevant and one irrelevant pool pair of each of `n_queries` seeded fresh queries (see the module doc), in
    a seeded order."""
    rng = random.Random(seed)
    pairs = balanced_pairs(dataset, excluded_queries(dataset), n_queries, rng)
    rng.shuffle(pairs)
    return pairs


def fresh_pairs(dataset, used: set[str], n_queries: int, seed: int) -> list[Pair]:
    """A second held-out set, scored for the first time here: `balanced_pairs` of `n_queries` seeded pool queries
    outside `excluded_queries` and `used` (the first set's queries), in a seeded order."""
    rng = random.Random(seed)
    pairs = balanced_pairs(dataset, excluded_queries(dataset) | used, n_queries, rng)
    rng.shuffle(pairs)
    return pairs


def probe_pool_pairs(dataset, n_queries: int, seed: int = 5) -> list[Pair]:
    """More labelled pairs for the probe (`--probe-pool N`): `balanced_pairs` of `n_queries` seeded pool queries that
    are neither held out (`heldout_pairs`' defaults) nor among `excluded_queries`, in query order."""
    taken = excluded_queries(dataset) | {p.query_id for p in heldout_pairs(dataset)}
    return balanced_pairs(dataset, taken, n_queries, random.Random(seed), query_order=True)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (MB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def metrics_row(name: str, gold, pred, reference, labels, **extra) -> dict:
    m = classification_metrics(gold, pred, labels)
    test = mcnemar(gold, reference, pred)
    return {"name": name, "n": m["n"], "kappa": m["kappa"], "kappa_ci": list(bootstrap_ci(gold, pred, labels, "kappa")),
            "accuracy": m["accuracy"], "mcnemar": [test["b"], test["c"], test["p_value"]], **extra}


def mcnemar_cell(row: dict) -> str:
    """A row's McNemar against embed-lr 300 as "b, c, p" ("-" for the reference itself)."""
    if row["name"] == "embed-lr 300":
        return "-"
    return ", ".join(number(v) if isinstance(v, float) else str(v) for v in row["mcnemar"])


def write_result(out: Path, stem: str, result: dict, text: str) -> dict:
    """OUT/STEM.json (the numbers) and OUT/STEM.md (`text`, also printed); returns `result`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"{stem}.md").write_text(text)
    print(text)
    return result


def expected_calibration_error(probs: np.ndarray, gold: np.ndarray, bins: int = 10) -> float:
    """ECE of the top label: |accuracy - confidence| averaged over equal-width confidence bins, weighted by count."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == gold).astype(float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        mask = (conf > lo) & (conf <= hi)
        if mask.any():
            total += mask.mean() * abs(correct[mask].mean() - conf[mask].mean())
    return float(total)
