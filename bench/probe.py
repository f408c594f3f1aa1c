"""The LLM probe beside the learned scorer: embed-lr, llm-probe and probe-stacked on the dev split, one table.

    python -m bench.probe                                  # MSRD: fitted on all 300 train pairs, judged on all 300 dev
    python -m bench.probe --three-level bench/data/three_level   # also a Home Depot-format folder (3 labels)
    python -m bench.probe --fake --limit-train 60 --limit-dev 20 # a hashed fake embedder: checks the plumbing only

The methods' own code (`hiera_dspy.methods.probe`) is fitted on train (`prepare`) and judges dev pair by pair. Each row:
n, Cohen's kappa with its bootstrap 95% CI, accuracy, McNemar against embed-lr on the same pairs (b = embed-lr right
and the row wrong, c = the reverse) and seconds per pair. Hidden states come from the disk cache
(`methods.probe_states`: ~/.cache/hiera-dspy/probe) when present, so the judged rows' seconds can be near zero;
`--timing N` embeds N dev pairs again without the cache, in batches, and reports the model's seconds per pair, which is
the probe's cost on a fresh pair. Writes bench/results/probe.md and probe.json (probe_fake.* with --fake).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from hiera_dspy.data import load_dataset
from hiera_dspy.methods import BuildContext, build, probe_states
from hiera_dspy.methods.probe import PROBE
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.format import number, with_ci
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.testing import judge_once

OUT = Path("bench/results")
METHODS = ("embed-lr", "llm-probe", "probe-stacked")


def fake_embedder(prompt: str) -> np.ndarray:
    """A hashed bag of the prompt's words (64 floats): plumbing checks only, never a measurement."""
    vec = np.zeros(64, np.float32)
    for word in prompt.lower().split():
        vec[int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % 64] += 1.0
    return vec


def judge_split(name: str, dataset, train, dev, config: dict) -> tuple[list[str | None], list[float]]:
    """The method fitted on `train`; its label and its steps' seconds for every dev pair."""
    program = build(name, BuildContext(dataset.scheme, train=list(train)), **config)
    start = time.perf_counter()
    program.prepare(train, dev)
    print(f"{dataset.name} {name}: fitted in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if hasattr(program, "prefetch"):  # hidden states in batches into the cache, as optimize.compile does
        program.prefetch(dev)
    labels, seconds = [], []
    for p in dev:
        prediction, book = judge_once(program, p)
        labels.append(prediction.label)
        seconds.append(sum(s.seconds for s in book.steps))
    return labels, seconds


def model_seconds(dataset, dev, n: int, text_chars: int) -> float | None:
    """Seconds per uncached hidden state over the first `n` dev pairs, embedded in batches (None when n is 0)."""
    if n <= 0:
        return None
    states = probe_states.states_for(None, dataset.scheme.labels, cache=False)
    prompts = [states.prompt(p.query, p.item_title, p.item_text, text_chars) for p in dev[:n]]
    start = time.perf_counter()
    states.many(prompts)
    return (time.perf_counter() - start) / len(prompts)


def table(dataset, limit_train: int, limit_dev: int, embedder: str, timing: int,
          text_chars: int = PROBE["text_chars"]) -> dict:
    """Rows for every method of METHODS on `dataset`'s dev split (fitted on its train split)."""
    train, dev = dataset.splits["train"][:limit_train], dataset.splits["dev"][:limit_dev]
    labels = list(dataset.scheme.labels)
    gold = [p.label for p in dev]
    preds, rows = {}, []
    for name in METHODS:
        config = {"embedder": embedder} if name != "llm-probe" else {}
        if name != "embed-lr":
            config["text_chars"] = text_chars
        pred, seconds = judge_split(name, dataset, train, dev, config)
        preds[name] = pred
        m = classification_metrics(gold, pred, labels)
        test = mcnemar(gold, preds["embed-lr"], pred)
        rows.append({"method": name, "n": m["n"], "kappa": m["kappa"],
                     "kappa_ci": list(bootstrap_ci(gold, pred, labels, "kappa")), "accuracy": m["accuracy"],
                     "mcnemar_b": test["b"], "mcnemar_c": test["c"], "p_value": test["p_value"],
                     "s_per_pair": statistics.median(seconds)})
    return {"dataset": dataset.name, "labels": labels, "n_train": len(train), "n_dev": len(dev), "rows": rows,
            "text_chars": text_chars, "model_s_per_pair": model_seconds(dataset, dev, timing, text_chars)}


def markdown(result: dict) -> str:
    """One dataset's table."""
    lines = [f"### {result['dataset']} (dev n={result['n_dev']}, fitted on {result['n_train']} train pairs; "
             f"labels {', '.join(result['labels'])}; probe item text {result.get('text_chars')} characters)", "",
             "| method | n | kappa [95% CI] | accuracy | McNemar vs embed-lr (b, c, p) | s/pair |",
             "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        mc = "-" if r["method"] == "embed-lr" else f"{r['mcnemar_b']}, {r['mcnemar_c']}, {number(r['p_value'])}"
        lines.append(f"| {r['method']} | {r['n']} | {with_ci(r['kappa'], r['kappa_ci'])} | {number(r['accuracy'])} | "
                     f"{mc} | {number(r['s_per_pair'], '.2f')} |")
    if result["model_s_per_pair"] is not None:
        lines += ["", f"Uncached hidden states, in batches: {result['model_s_per_pair']:.2f} s a pair."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    """Run the bench; write bench/results/probe.md and probe.json (probe_fake.* with --fake)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit-train", type=int, default=300)
    ap.add_argument("--limit-dev", type=int, default=300)
    ap.add_argument("--three-level", metavar="FOLDER", help="a Home Depot-format folder (homedepot: dataset)")
    ap.add_argument("--embedder", default="auto", help="the scorer's embedder (auto | lexical | a model id)")
    ap.add_argument("--timing", type=int, default=10, help="dev pairs embedded again without the cache, to time it")
    ap.add_argument("--text-chars", type=int, default=PROBE["text_chars"], help="item text in the probe's prompt")
    ap.add_argument("--fake", action="store_true", help="a hashed fake embedder instead of the model (plumbing only)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    datasets = [load_dataset("msrd")]
    if args.three_level:
        datasets.append(load_dataset(f"homedepot:{args.three_level}"))
    with probe_states.use_embedder(fake_embedder) if args.fake else nullcontext():
        results = [table(d, args.limit_train, args.limit_dev, args.embedder, args.timing, args.text_chars)
                   for d in datasets]
    out, stem = Path(args.out), "probe_fake" if args.fake else "probe"
    out.mkdir(parents=True, exist_ok=True)
    text = "".join(markdown(r) + "\n" for r in results)
    (out / f"{stem}.md").write_text(("Fake embedder: plumbing check, not a measurement.\n\n" if args.fake else "") + text)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(text)
    return {"results": results}


if __name__ == "__main__":
    main()
