"""Benchmark the learned relevance scorer (hiera_dspy.signals) on a dataset: fit on train, evaluate on dev.

    python -m bench.signals                    # MSRD sample, 300 train / 300 dev pairs, both feature sets
    python -m bench.signals --modes lexical    # lexical features only (no torch needed)

Prints a markdown table: accuracy, Cohen's kappa, log loss, expected calibration error (10 bins, top label),
seconds per pair to fit (features + regression, per training pair) and to predict (batched, per dev pair), and the
one-off seconds to load the embedding model. The `embeddings` row needs the `signals` extra
(pip install 'hiera-dspy[signals]'); without it that row says so.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from bench.common import expected_calibration_error
from hiera_dspy.data import load_dataset
from hiera_dspy.signals import EmbedderUnavailable, RelevanceScorer, SentenceTransformerEmbedder


def run(mode: str, dataset, train, dev) -> dict:
    from sklearn.metrics import accuracy_score, log_loss

    from hiera_dspy.metrics.agreement import cohen_kappa, confusion

    load_s = 0.0
    if mode == "embeddings":
        t0 = time.perf_counter()
        try:
            embedder = SentenceTransformerEmbedder()
        except EmbedderUnavailable as exc:
            return {"mode": mode, "error": str(exc)}
        load_s = time.perf_counter() - t0
    else:
        embedder = None
    scorer = RelevanceScorer(dataset.scheme, embedder=embedder)
    t0 = time.perf_counter()
    scorer.fit(train)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    dicts = scorer.predict_proba_many(dev)
    predict_s = time.perf_counter() - t0

    labels = list(dataset.scheme.labels)
    probs = np.array([[d[label] for label in labels] for d in dicts])
    pred = [labels[int(i)] for i in probs.argmax(axis=1)]
    gold = [p.label for p in dev]
    gold_idx = np.array([labels.index(g) for g in gold])
    return {
        "mode": mode,
        "features": ", ".join(scorer.feature_names),
        "accuracy": accuracy_score(gold, pred),
        "kappa": float(cohen_kappa(confusion(gold, pred, labels))),
        "log_loss": log_loss(gold_idx, np.clip(probs, 1e-15, 1.0), labels=list(range(len(labels)))),
        "ece": expected_calibration_error(probs, gold_idx),
        "fit_s_per_pair": fit_s / len(train),
        "predict_s_per_pair": predict_s / len(dev),
        "load_s": load_s,
    }


def markdown(rows: list[dict], n_train: int, n_dev: int, dataset: str) -> str:
    head = (f"{dataset}: fit on {n_train} train pairs, evaluated on {n_dev} dev pairs\n\n"
            "| features | accuracy | Cohen's kappa | log loss | ECE | s/pair fit | s/pair predict | model load s |\n"
            "|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['mode']} | unavailable: {r['error']} | | | | | | |")
            continue
        lines.append(f"| {r['mode']} ({r['features']}) | {r['accuracy']:.3f} | {r['kappa']:.3f} | {r['log_loss']:.3f} "
                     f"| {r['ece']:.3f} | {r['fit_s_per_pair']:.5f} | {r['predict_s_per_pair']:.5f} "
                     f"| {r['load_s']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="msrd", help="a --dataset spec with train and dev splits (default: msrd)")
    ap.add_argument("--train-limit", type=int, default=300)
    ap.add_argument("--dev-limit", type=int, default=300)
    ap.add_argument("--modes", default="embeddings,lexical", help="comma-separated: embeddings, lexical")
    args = ap.parse_args(argv)

    dataset = load_dataset(args.dataset)
    train = dataset.split("train", args.train_limit)
    dev = dataset.split("dev", args.dev_limit)
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = sorted(set(modes) - {"embeddings", "lexical"})
    if unknown:
        ap.error(f"unknown --modes {unknown}; use embeddings and/or lexical")
    rows = [run(mode, dataset, train, dev) for mode in modes]
    print(markdown(rows, len(train), len(dev), args.dataset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
