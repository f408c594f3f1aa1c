"""Which late-interaction features late-lr reads: each feature set through the product's late-lr, on several seeds of
the query folds, so a feature is kept only when it wins on most seeds, not on one split.

    python -m bench.trecdl_features --data DL20 --work /tmp/trecdl --seeds 0,1,2,3 --feature-sets late,late+coverage

For each seed the queries are dealt into `--folds` folds (`bench.trecdl.fold_of`); late-lr is compiled on the other
folds' pairs with `features=SET` (its thresholds chosen out of fold inside them, as the product does) and judges the
held-out fold. The late-interaction features of every pair come from one table (`bench.trecdl.late_table`, the same
numbers the encoder gives), so a run costs the fits, not the encoder; `bench/trecdl.py` times the encoder. Prints,
per seed and feature set, kappa (4 grades), binary kappa (>= 2), Krippendorff's alpha and quadratic kappa, then each
set's mean and on how many seeds it beat the first set; writes work/features.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench import trecdl
from bench.trecdl import LABELS, agreement, fold_of, late_from_table, late_table, load_pairs
from hiera_dspy.records import Pair

MEASURES = ("kappa", "kappa_binary", "alpha", "weighted_kappa")


def cross_validated(pairs: list[Pair], features: str, seed: int, folds: int) -> np.ndarray:
    """late-lr's grade codes for every pair, each judged by a late-lr compiled without its query's fold."""
    fold = fold_of(pairs, folds, seed)
    predicted = np.zeros(len(pairs), dtype=int)
    for f in range(folds):
        held = [i for i, p in enumerate(pairs) if fold[p.query_id] == f]
        program = trecdl.compiled_late([p for p in pairs if fold[p.query_id] != f], features=features, seed=0)
        predicted[held] = trecdl.late_grades(program, [pairs[i] for i in held])
    return predicted


def markdown(results: dict[tuple[int, str], dict], seeds: list[int], sets: list[str], n: int, folds: int) -> str:
    """Per seed and set, then each set's mean and its wins over the first set, measure by measure."""
    lines = [f"late-lr's feature sets, {folds}-fold cross-validation by query on {n:,} pairs, seeds "
             f"{', '.join(map(str, seeds))}.", "",
             "| seed | features | kappa (4 grades) | binary kappa (>= 2) | alpha | quadratic kappa |", "|---|---|---|---|---|---|"]
    for seed in seeds:
        for name in sets:
            lines.append(f"| {seed} | {name} | " + " | ".join(f"{results[seed, name][m]:.3f}" for m in MEASURES) + " |")
    lines += ["", "| features | " + " | ".join(f"mean {m} (seeds above {sets[0]})" for m in MEASURES) + " |",
              "|---|" + "---|" * len(MEASURES)]
    for name in sets:
        cells = []
        for m in MEASURES:
            mean = np.mean([results[s, name][m] for s in seeds])
            wins = sum(results[s, name][m] > results[s, sets[0]][m] for s in seeds)
            cells.append(f"{mean:.3f}" + ("" if name == sets[0] else f" ({wins} of {len(seeds)})"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="a TREC folder: topics.tsv, qrels.txt, corpus.jsonl[.gz]")
    p.add_argument("--work", type=Path, required=True, help="where the late-interaction table is kept")
    p.add_argument("--seeds", default="0,1,2,3")
    p.add_argument("--feature-sets", default="late,late+coverage")
    p.add_argument("--folds", type=int, default=5)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    pairs = load_pairs(args.data, args.work)
    seeds, sets = [int(s) for s in args.seeds.split(",")], args.feature_sets.split(",")
    gold = np.array([LABELS.index(p.label) for p in pairs])
    results = {}
    with late_from_table(late_table(pairs, args.work)):
        for seed in seeds:
            for name in sets:
                results[seed, name] = agreement(gold, cross_validated(pairs, name, seed, args.folds))
                print(f"seed {seed} {name}: " + ", ".join(f"{m} {results[seed, name][m]:.3f}" for m in MEASURES),
                      flush=True)
    text = markdown(results, seeds, sets, len(pairs), args.folds)
    (args.work / "features.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
