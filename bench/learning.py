"""Labels in, a better judge out: the learned judge fitted on 300 pairs, on the MSRD judgments pool, and refitted on
simulated human decisions, scored on held-out pool queries (hole filling with full judgments) and on the bundled dev.

    python -m bench.learning                          # MiniLM (cached on disk), all configurations: ~15 min on 2 cores
    python -m bench.learning --fake --heldout 40      # a hashed fake embedder, a small set: the plumbing only

Held-out set ("holes"): `--heldout` queries of the pool (seeded), none of them a query of the bundled train or dev
split; every judged movie of such a query is a hole whose truth is its MSRD judgment (about 24 a query, ~15%
relevant). The pool split (`--dataset msrd --split pool`) minus these queries is the large train split. This is the
hole-filling benchmark with every candidate a hole; issue 20's bench/conclusions.py builds its holes from the top k
of ranked runs over the same pool, a subset of the same kind of pairs.

Rows (each: n, Cohen's kappa with its bootstrap 95% CI, McNemar against embed-lr 300 on the same pairs, fit seconds,
seconds a pair with the vectors cached):
- (a) embed-lr fitted on the bundled 300 train pairs (today's judge);
- (b) embed-lr fitted on the pool minus the held-out queries, with its options (class weights, interaction features,
  C chosen on a query-grouped dev split of its own train pairs);
- (c) a judge refitted after 50, 100, 200 simulated decisions (the gold of holes a person is shown), picked by
  uncertainty (the review queue's least confident first, `hiera_dspy.review.queue.review_queue`, re-ranked by each refitted
  judge, in rounds of 50, 50 and 100) or at random (3 seeds); scored on the holes nobody decided, beside the judge
  before the decisions on the same holes (delta).
The bundled dev (300 pairs, balanced) is scored too, for the numbers of earlier tables (embed-lr 0.707).
Writes bench/results/learning.md and learning.json (learning_fake.* with --fake).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import heldout_split
from hiera_dspy.data import load_dataset
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.numbers import number, with_ci
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.records import Pair
from hiera_dspy.review.gold import with_decisions
from hiera_dspy.review.queue import review_queue
from hiera_dspy.signals import RelevanceScorer
from hiera_dspy.signals.features import item_document, resolve_embedder

OUT = Path("bench/results")
C_GRID = [0.01, 0.1, 1.0, 10.0]
POOL_CONFIGS = {  # name -> RelevanceScorer options (fitted on the pool minus the held-out queries)
    "pool": {},
    "pool+balanced": {"class_weight": "balanced"},
    "pool+balanced+C": {"class_weight": "balanced", "C_grid": C_GRID},
    "pool+hgb+query": {"model": "hgb", "features": "query"},
    "pool+hgb+query+balanced": {"model": "hgb", "features": "query", "class_weight": "balanced"},
    "pool+interactions": {"features": "interactions", "C_grid": C_GRID},
    "pool+interactions+balanced+C1": {"features": "interactions", "class_weight": "balanced"},
    "pool+interactions+balanced": {"features": "interactions", "C_grid": C_GRID, "class_weight": "balanced"},
}
ROUNDS = (50, 50, 100)  # decisions added per round: 50, 100, 200 in all
RANDOM_SEEDS = (1, 2, 3)


class FakeEmbedder:
    """A hashed bag of words (32 floats, unit length): plumbing checks only, never a measurement."""

    model_id = "bench/fake-hash"

    def encode(self, texts):
        """Unit vectors of hashed word counts."""
        rows = np.zeros((len(texts), 32))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % 32] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1.0, norms)


def fit(scheme, embedder, train: list[Pair], options: dict) -> tuple[RelevanceScorer, float]:
    """A scorer with `options` fitted on `train`, and the seconds it took."""
    start = time.perf_counter()
    scorer = RelevanceScorer(scheme, embedder=embedder, **options).fit(train)
    return scorer, time.perf_counter() - start


def judge(scorer: RelevanceScorer, pairs: list[Pair]) -> tuple[list[str], list[dict], float]:
    """Labels, distributions and seconds a pair (batched; vectors from the cache when warm)."""
    start = time.perf_counter()
    dists = scorer.predict_proba_many(pairs)
    seconds = (time.perf_counter() - start) / max(1, len(pairs))
    return [max(d, key=d.get) for d in dists], dists, seconds


def row(name: str, gold: list[str], pred: list[str], reference: list[str], labels: list[str], **extra) -> dict:
    """One table row: n, kappa and its CI, accuracy, McNemar against `reference` (b = reference right, row wrong)."""
    m = classification_metrics(gold, pred, labels)
    test = mcnemar(gold, reference, pred)
    return {"name": name, "n": m["n"], "kappa": m["kappa"], "kappa_ci": list(bootstrap_ci(gold, pred, labels, "kappa")),
            "accuracy": m["accuracy"], "mcnemar_b": test["b"], "mcnemar_c": test["c"], "p_value": test["p_value"],
            **extra}


def least_confident(holes: list[Pair], predicted: list[str], dists: list[dict], decided: set[str],
                    k: int) -> list[Pair]:
    """The `k` undecided holes the review queue shows first (`--budget k`: least confident first)."""
    rows = [{"id": p.id, "label": y, "fields": {"scores": d}, "position": i}
            for i, (p, y, d) in enumerate(zip(holes, predicted, dists)) if p.id not in decided]
    by_id = {p.id: p for p in holes}
    return [by_id[entry.row["id"]] for entry in review_queue(rows, k)]


def simulate(scheme, embedder, base_train: list[Pair], options: dict, holes: list[Pair], strategy: str,
             seed: int, reference: dict[str, str], labels: list[str], rounds: tuple[int, ...] = ROUNDS) -> list[dict]:
    """Rounds of simulated decisions (ROUNDS) on the holes, a refit after each; rows scored on the holes nobody
    decided, beside the judge before any decision on the same holes."""
    scorer, _ = fit(scheme, embedder, base_train, options)
    first, dists, _ = judge(scorer, holes)
    before = dict(zip((p.id for p in holes), first))
    current, decided, rows, rng = first, [], [], random.Random(seed)
    for k in rounds:
        done = {p.id for p in decided}
        if strategy == "uncertainty":
            picked = least_confident(holes, current, dists, done, k)
        else:
            picked = rng.sample([p for p in holes if p.id not in done], k)
        decided += picked  # a person's decision is the hole's gold
        scorer, fit_s = fit(scheme, embedder, with_decisions(base_train, decided), options)
        current, dists, s_pair = judge(scorer, holes)
        done = {p.id for p in decided}
        rest = [i for i, p in enumerate(holes) if p.id not in done]
        gold = [holes[i].label for i in rest]
        pred = [current[i] for i in rest]
        prior = [before[holes[i].id] for i in rest]
        kappa_before = classification_metrics(gold, prior, labels)["kappa"]
        relevant = sum(p.label == labels[-1] for p in decided)
        rows.append(row(f"+{len(decided)} decisions ({strategy}{'' if strategy == 'uncertainty' else f', seed {seed}'})",
                        gold, pred, [reference[holes[i].id] for i in rest], labels, fit_seconds=fit_s,
                        s_per_pair=s_pair, decisions=len(decided), decided_relevant=relevant,
                        kappa_before=kappa_before, delta=m_delta(gold, pred, prior, labels)))
        print(f"  {rows[-1]['name']}: kappa {rows[-1]['kappa']:.3f} (before {kappa_before:.3f})", file=sys.stderr)
    return rows


def m_delta(gold, pred, prior, labels) -> float | None:
    """kappa(pred) - kappa(prior) on the same pairs."""
    a, b = classification_metrics(gold, pred, labels)["kappa"], classification_metrics(gold, prior, labels)["kappa"]
    return None if a is None or b is None else a - b


def cache_filter(embedder):
    """pairs -> the pairs whose three texts are in `embedder`'s disk cache (a CachedEmbedder)."""
    def keep(pairs: list[Pair]) -> list[Pair]:
        texts = [s for p in pairs for s in (p.query, p.item_title, item_document(p.item_title, p.item_text))]
        cached = embedder.cached(list(dict.fromkeys(texts)))
        return [p for p in pairs if {p.query, p.item_title, item_document(p.item_title, p.item_text)} <= cached]
    return keep


def run(dataset, embedder, n_heldout: int, seed: int, configs: dict, simulate_from: tuple[str, ...],
        pool_limit: int | None = None, keep=None, rounds: tuple[int, ...] = ROUNDS,
        random_seeds: tuple[int, ...] = RANDOM_SEEDS) -> dict:
    """Every row of the benchmark on `dataset` (an msrd Dataset with train, dev and pool splits); `pool_limit`: a
    seeded sample of the pool train pairs; `keep`: a filter of the pool train pairs (`cache_filter`)."""
    scheme, labels = dataset.scheme, list(dataset.scheme.labels)
    train300, dev300 = list(dataset.split("train")), list(dataset.split("dev"))
    pool_train, holes = heldout_split(list(dataset.split("pool")), train300, dev300, n_heldout, seed)
    if keep is not None:
        pool_train = keep(pool_train)
    if pool_limit and len(pool_train) > pool_limit:
        pool_train = [pool_train[i] for i in sorted(random.Random(seed).sample(range(len(pool_train)), pool_limit))]
    print(f"{len(holes)} holes of {len({p.query_id for p in holes})} held-out queries; pool train {len(pool_train)} "
          f"pairs", file=sys.stderr)
    gold_h, gold_d = [p.label for p in holes], [p.label for p in dev300]
    sets = {"300": (train300, {})} | {name: (pool_train, opts) for name, opts in configs.items()}
    holes_rows, dev_rows, refs, judges = [], [], {}, {}
    for name, (train, options) in sets.items():
        scorer, fit_s = fit(scheme, embedder, train, options)
        pred_h, _, s_h = judge(scorer, holes)
        pred_d, _, _ = judge(scorer, dev300)
        refs.setdefault("holes", pred_h)
        refs.setdefault("dev", pred_d)
        judges[name] = (train, options)
        extra = {"n_train": len(train), "fit_seconds": fit_s, "s_per_pair": s_h, "C": scorer.C}
        holes_rows.append(row(f"embed-lr {name}", gold_h, pred_h, refs["holes"], labels, **extra))
        dev_rows.append(row(f"embed-lr {name}", gold_d, pred_d, refs["dev"], labels, **extra))
        print(f"{name}: holes kappa {holes_rows[-1]['kappa']:.3f}, dev {dev_rows[-1]['kappa']:.3f}, fit {fit_s:.0f} s"
              f", C {scorer.C}", file=sys.stderr)
    reference = dict(zip((p.id for p in holes), refs["holes"]))
    decisions = {}
    for name in simulate_from:
        train, options = judges[name]
        rows = simulate(scheme, embedder, train, options, holes, "uncertainty", 0, reference, labels, rounds)
        for s in random_seeds:
            rows += simulate(scheme, embedder, train, options, holes, "random", s, reference, labels, rounds)
        decisions[name] = rows
    return {"holes": len(holes), "heldout_queries": len({p.query_id for p in holes}), "pool_train": len(pool_train),
            "relevant_share": sum(g == labels[-1] for g in gold_h) / max(1, len(gold_h)), "seed": seed,
            "embedder": getattr(embedder, "model_id", None) or "none (lexical features)", "holes_rows": holes_rows, "dev_rows": dev_rows,
            "decisions": decisions}


def uncached_seconds(embedder, pairs: list[Pair], n: int = 20) -> float | None:
    """Median seconds to embed one fresh pair's three texts with the model itself (no cache): a new pair's cost."""
    inner = getattr(embedder, "inner", embedder)
    times = []
    for p in pairs[:n]:
        start = time.perf_counter()
        inner.encode([p.query, p.item_title, f"{p.item_title}\n{p.item_text}"])
        times.append(time.perf_counter() - start)
    return float(np.median(times)) if times else None


def markdown(result: dict) -> str:
    """The tables: held-out holes, bundled dev, decisions."""
    def table(rows, decisions=False):
        head = ("| judge | n | kappa [95% CI] | accuracy | McNemar vs embed-lr 300 (b, c, p) | "
                + ("kappa before | delta | " if decisions else "train pairs | C | ") + "fit s | s/pair |")
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
        for r in rows:
            mc = f"{r['mcnemar_b']}, {r['mcnemar_c']}, {number(r['p_value'])}"
            middle = (f"{number(r['kappa_before'])} | {number(r['delta'], '+.3f')}" if decisions else
                      f"{r['n_train']} | {r['C']:g}")
            lines.append(f"| {r['name']} | {r['n']} | {with_ci(r['kappa'], r['kappa_ci'])} | {number(r['accuracy'])} | "
                         f"{mc} | {middle} | {r['fit_seconds']:.1f} | {r['s_per_pair']:.4f} |")
        return "\n".join(lines)

    out = [(f"### Held-out MSRD holes: {result['holes']} pairs of {result['heldout_queries']} pool queries "
           f"({result['relevant_share']:.1%} relevant), seed {result['seed']}; embedder {result['embedder']}"), "",
           table(result["holes_rows"]), "",
           "### Bundled dev (300 pairs, balanced; the judges above, same fits)", "", table(result["dev_rows"])]
    for name, rows in result["decisions"].items():
        out += ["", (f"### Simulated decisions on the holes, refitting embed-lr {name} (scored on the holes nobody "
                    "decided)"), "",
                table(rows, decisions=True)]
        out += ["", summary_line(rows)]
    if result.get("uncached_s_per_pair") is not None:
        out += ["", (f"A fresh pair (its three texts embedded by the model, no cache): median "
                    f"{result['uncached_s_per_pair']:.3f} s.")]
    return "\n".join(out) + "\n"


def summary_line(rows: list[dict]) -> str:
    """Mean delta per number of decisions, uncertainty vs random."""
    parts = []
    for k in sorted({r["decisions"] for r in rows}):
        unc = [r["delta"] for r in rows if r["decisions"] == k and "uncertainty" in r["name"]]
        rnd = [r["delta"] for r in rows if r["decisions"] == k and "random" in r["name"]]
        parts.append(f"{k}: uncertainty {number(np.mean(unc) if unc else None, '+.3f')}, random (mean of "
                     f"{len(rnd)}) {number(np.mean(rnd) if rnd else None, '+.3f')}")
    return "Kappa gained on the undecided holes, by decisions: " + "; ".join(parts) + "."


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; write bench/results/learning.md and learning.json (learning_fake.* with --fake)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heldout", type=int, default=200, help="held-out pool queries (default 200)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--fake", action="store_true", help="a hashed fake embedder (plumbing only)")
    ap.add_argument("--dataset", default="msrd", help="an msrd folder with train, dev and the pool (default: bundled)")
    ap.add_argument("--configs", default=",".join(POOL_CONFIGS), help="pool configurations to fit (comma-separated)")
    ap.add_argument("--simulate-from", default="300",
                    help="judges to refit on simulated decisions (comma-separated: 300 and/or --configs names)")
    ap.add_argument("--pool-limit", type=int, help="fit the pool judges on a seeded sample of N pool pairs")
    ap.add_argument("--embedder", default="auto", help="auto (MiniLM, cached on disk) | lexical (no embeddings)")
    ap.add_argument("--cached-only", action="store_true",
                    help="fit the pool judges only on pool pairs whose texts are already in the embedding cache "
                         "(a subsample stated in the table; for a busy machine)")
    ap.add_argument("--rounds", default=",".join(map(str, ROUNDS)), help="decisions added per round (comma-separated)")
    ap.add_argument("--random-seeds", default=",".join(map(str, RANDOM_SEEDS)), help="seeds of the random rounds")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    dataset = load_dataset(args.dataset)
    rounds, seeds = (tuple(int(n) for n in text.split(",") if n) for text in (args.rounds, args.random_seeds))
    embedder = FakeEmbedder() if args.fake else resolve_embedder(None if args.embedder == "lexical" else args.embedder)
    names = [n for n in args.configs.split(",") if n and (embedder is not None or "interactions" not in n)]
    configs = {name: POOL_CONFIGS[name] for name in names}
    simulate_from = tuple(n for n in args.simulate_from.split(",") if n)
    keep = cache_filter(embedder) if args.cached_only else None
    result = run(dataset, embedder, args.heldout, args.seed, configs, simulate_from, args.pool_limit, keep, rounds, seeds)
    timed = not args.fake and embedder is not None
    result["uncached_s_per_pair"] = uncached_seconds(embedder, list(dataset.split("dev"))) if timed else None
    out, stem = Path(args.out), "learning_fake" if args.fake else "learning"
    out.mkdir(parents=True, exist_ok=True)
    text = ("Fake embedder: plumbing check, not a measurement.\n\n" if args.fake else "") + markdown(result)
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
