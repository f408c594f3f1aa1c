"""Does the embedded LLM earn its cost beside the learned scorer? One table on the bundled MSRD dev split.

    python bench/local_probs.py --limit 300 --reasoning-limit 300      # the full dev split (hours on 2 busy cores)
    python bench/local_probs.py --limit 40 --lm openai/my-model --api-base http://127.0.0.1:8000/v1   # any server

Rows, all on the first --limit dev pairs (reasoning+probs on its first --reasoning-limit), each with Cohen's kappa and
its bootstrap 95% CI, accuracy, McNemar against embed-lr on the same pairs, median seconds and mean tokens per pair:

- embed-lr: the learned scorer alone (fitted on the 300 train pairs, no LM call);
- zero-shot: the Zero-Shot prompt's sampled label (the zero-shot+probs run: greedy decoding is not changed by reading
  log-probabilities, so this is exactly zero-shot's label);
- zero-shot+probs: the label distribution's argmax, and the label from a threshold on expected relevance tuned by
  5-fold cross-validation over queries of the judged dev pairs;
- reasoning+probs: one or two sentences of reasoning first, the distribution read after them;
- stacked: logistic regression over the scorer's and the LLM's distributions, 5-fold cross-validated over queries of the
  judged dev pairs (the `stacked` method fits it on train; the LLM's train distributions were not computed here);
- cascade@share: the scorer keeps the pairs it is surest of (tau by the share rule on dev, no labels), the stacked
  combination decides the rest.

LLM judgments go through `eval.run` (the resumable run store and DSPy's cache: a killed bench resumes, a larger
--limit judges only the new pairs). Writes bench/results/local_probs.md and bench/results/best_local.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np  # noqa: E402

from eval.metrics import bootstrap_ci, classification_metrics  # noqa: E402
from eval.stats import mcnemar  # noqa: E402
from hiera_dspy import settings  # noqa: E402
from hiera_dspy.data import load_dataset  # noqa: E402
from hiera_dspy.label_probs import expected_relevance, label_for, tune_cuts  # noqa: E402
from hiera_dspy.methods.signals import tau_for_share, top  # noqa: E402
from hiera_dspy.signals.stacking import Stacker  # noqa: E402

OUT = Path("bench/results")
RUNS = OUT / "local-probs"
GOAL = "beat embed-lr by >= 0.05 kappa with McNemar p < 0.05 at <= 10 s/pair"


def judged(method: str, n: int, lm_args: list[str], run_ids: dict[str, str] | None = None) -> dict[str, dict]:
    """Rows of `eval.run --method METHOD --limit n` on MSRD dev (resumes; judges only what is missing), by pair id;
    with `run_ids[method]`, the finished rows of that run in the run store, judging nothing."""
    import eval.run as run_cli

    if run_ids and method in run_ids:
        from hiera_dspy.cli import runs_dir
        from hiera_dspy.runs.store import RunStore

        rows = RunStore(runs_dir() / "store.sqlite").rows(run_ids[method])
        return {r["id"]: r for r in rows}

    out = RUNS / f"{method}-dev"
    saved = os.environ.get("HIERA_REFERENCE")
    os.environ["HIERA_REFERENCE"] = "none"  # the reference is computed once below
    try:
        run_cli.main(["--dataset", "msrd", "--split", "dev", "--method", method, "--limit", str(n), "--out", str(out),
                      *lm_args])
    finally:
        if saved is None:
            os.environ.pop("HIERA_REFERENCE", None)
        else:
            os.environ["HIERA_REFERENCE"] = saved
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in rows}


def scorer_dists(dataset) -> dict[str, dict]:
    """embed-lr's distribution for every dev pair (fitted on train once; cached beside the results)."""
    cache = RUNS / "embed-lr-dev.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    from hiera_dspy.signals import RelevanceScorer

    embedder = settings.reference_embedder()
    scorer = RelevanceScorer(dataset.scheme, embedder=None if embedder == "lexical" else embedder)
    scorer.fit(dataset.splits["train"])
    dev = dataset.splits["dev"]
    dists = dict(zip([p.id for p in dev], scorer.predict_proba_many(dev)))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(dists))
    return dists


def query_folds(pairs, folds: int = 5, seed: int = 0) -> list[int]:
    """A fold per pair, whole queries at a time (no query in two folds)."""
    queries = sorted({p.query_id for p in pairs})
    order = np.random.default_rng(seed).permutation(len(queries))
    fold_of = {queries[i]: k % folds for k, i in enumerate(order)}
    return [fold_of[p.query_id] for p in pairs]


def cross_fitted(pairs, folds, fit, predict) -> list:
    """predict(model, pair) for every pair with a model fitted on the other folds."""
    out = [None] * len(pairs)
    for k in sorted(set(folds)):
        model = fit([p for p, f in zip(pairs, folds) if f != k])
        for i, (p, f) in enumerate(zip(pairs, folds)):
            if f == k:
                out[i] = predict(model, p)
    return out


def row(name, pairs, pred, ref, seconds, tokens, labels, note=""):
    gold = [p.label for p in pairs]
    m = classification_metrics(gold, pred, labels)
    low, high = bootstrap_ci(gold, pred, labels, "kappa")
    test = mcnemar(gold, ref, pred) if name != "embed-lr" else None
    return {"name": name, "n": m["n"], "kappa": m["kappa"], "ci": (low, high), "accuracy": m["accuracy"],
            "mcnemar": test, "s_per_pair": statistics.median(seconds) if seconds else None,
            "tokens_per_pair": float(np.mean(tokens)) if tokens else 0.0, "note": note}


def fmt(r) -> str:
    k = "-" if r["kappa"] is None else f"{r['kappa']:.3f}"
    ci = "" if r["ci"][0] is None else f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
    t = r["mcnemar"]
    mc = "(reference)" if t is None else f"b={t['b']} c={t['c']} p={t['p_value']:.3f}"
    s = "-" if r["s_per_pair"] is None else f"{r['s_per_pair']:.2f}"
    return (f"| {r['name']} | {r['n']} | {k}{ci} | {r['accuracy']:.3f} | {mc} | {s} | {r['tokens_per_pair']:.0f} | "
            f"{r['note']} |")


def table(rows, title) -> str:
    head = ["", f"### {title}", "", "| configuration | n | kappa [95% CI] | accuracy | McNemar vs embed-lr | s/pair "
            "(median) | tokens/pair | note |", "|---|---|---|---|---|---|---|---|"]
    return "\n".join(head + [fmt(r) for r in rows])


def main(argv: list[str] | None = None) -> str:
    global OUT, RUNS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=300, help="first N dev pairs for zero-shot(+probs) and stacking")
    p.add_argument("--reasoning-limit", type=int, default=30, help="first N dev pairs for reasoning+probs (0: skip)")
    p.add_argument("--shares", default="0.3,0.5", help="cascade LLM shares")
    p.add_argument("--lm", default=None, help="model (default: the embedded local model)")
    p.add_argument("--api-base", default=None)
    p.add_argument("--runs", default="", help="METHOD=RUN_ID,...: read those methods' finished judgments from the run "
                   "store instead of judging (e.g. a run started by an earlier version, whose run id differs)")
    p.add_argument("--out-dir", default="bench/results", help="results folder (default bench/results)")
    args = p.parse_args(argv)
    OUT, RUNS = Path(args.out_dir), Path(args.out_dir) / "local-probs"
    lm_args = [*(["--lm", args.lm] if args.lm else []), *(["--api-base", args.api_base] if args.api_base else [])]
    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    dev = dataset.split("dev")
    scores = scorer_dists(dataset)
    run_ids = dict(item.split("=", 1) for item in args.runs.split(",") if item)
    zs = judged("zero-shot+probs", args.limit, lm_args, run_ids)
    pairs = [q for q in dev[:args.limit] if q.id in zs and not zs[q.id]["error"]]
    ref = [top(scores[q.id])[0] for q in pairs]
    fields = [zs[q.id]["fields"] for q in pairs]
    secs = [zs[q.id]["seconds"] for q in pairs]
    toks = [zs[q.id]["tokens"] for q in pairs]
    llm = [f.get("label_probs") for f in fields]
    folds = query_folds(pairs)
    rows = [row("embed-lr", pairs, ref, ref, [0.09] * len(pairs), [], labels, "no LM call")]
    rows.append(row("zero-shot", pairs, [f.get("sampled_label") or f.get("label") for f in fields], ref, secs, toks,
                    labels, "sampled label"))
    argmax = [top(d)[0] if d else f.get("label") for d, f in zip(llm, fields)]
    rows.append(row("zero-shot+probs (argmax)", pairs, argmax, ref, secs, toks, labels,
                    f"{sum(d is not None for d in llm)}/{len(pairs)} with a distribution"))
    relevance = {q.id: (expected_relevance(d, labels) if d else float(labels.index(f["label"])))
                 for q, d, f in zip(pairs, llm, fields)}
    cut = cross_fitted(pairs, folds, lambda tr: tune_cuts([relevance[q.id] for q in tr], [q.label for q in tr], labels),
                       lambda cuts, q: label_for(relevance[q.id], labels, cuts))
    rows.append(row("zero-shot+probs (threshold, 5-fold CV)", pairs, cut, ref, secs, toks, labels,
                    "cut on expected relevance"))
    llm_of = dict(zip([q.id for q in pairs], llm))

    def fit_stack(train):
        return Stacker(labels).fit([scores[q.id] for q in train], [llm_of[q.id] for q in train],
                                   [q.label for q in train])

    stacked = cross_fitted(pairs, folds, fit_stack,
                           lambda s, q: top(s.predict_proba(scores[q.id], llm_of[q.id]))[0])
    rows.append(row("stacked (scorer + zero-shot probs, 5-fold CV)", pairs, stacked, ref,
                    [s + 0.09 for s in secs], toks, labels, "every pair to the LLM"))
    top_dev = [top(scores[q.id])[1] for q in dev]
    for share in [float(s) for s in args.shares.split(",") if s]:
        tau = tau_for_share(top_dev, share)
        routed = [top(scores[q.id])[1] < tau for q in pairs]
        pred = [s if r else y for s, r, y in zip(stacked, routed, ref)]
        rows.append(row(f"cascade@{share} (stacked on routed pairs)", pairs, pred, ref,
                        [s + 0.09 if r else 0.09 for s, r in zip(secs, routed)],
                        [t if r else 0 for t, r in zip(toks, routed)], labels,
                        f"tau {tau:.3f}; {sum(routed)}/{len(pairs)} to the LLM"))
    text = [f"# The embedded LLM beside the learned scorer: MSRD dev (first {len(pairs)} of 300 pairs judged)", "",
            f"Goal (issue 15): {GOAL}. Model: {lm_args or 'embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M'}; "
            "embed-lr fitted on the 300 train pairs. Seconds are wall-clock on a shared, heavily loaded 2-core "
            "machine. Stacked and threshold rows are 5-fold cross-validated over queries of the judged dev pairs.",
            table(rows, "zero-shot family")]
    if args.reasoning_limit:
        rp = judged("reasoning+probs", args.reasoning_limit, lm_args, run_ids)
        sub = [q for q in dev[:args.reasoning_limit] if q.id in rp and not rp[q.id]["error"]]
        sref = [top(scores[q.id])[0] for q in sub]
        sub_rows = [row("embed-lr", sub, sref, sref, [0.09] * len(sub), [], labels, "no LM call")]
        sub_rows.append(row("zero-shot", sub, [zs[q.id]["fields"].get("sampled_label") if q.id in zs else None
                                               for q in sub], sref, [zs[q.id]["seconds"] for q in sub if q.id in zs],
                            [zs[q.id]["tokens"] for q in sub if q.id in zs], labels, "same pairs"))
        rfields = [rp[q.id]["fields"] for q in sub]
        sub_rows.append(row("reasoning+probs (sampled)", sub, [f.get("sampled_label") or f.get("label")
                                                              for f in rfields], sref,
                            [rp[q.id]["seconds"] for q in sub], [rp[q.id]["tokens"] for q in sub], labels,
                            "reasoning first"))
        sub_rows.append(row("reasoning+probs (argmax)", sub, [top(f["label_probs"])[0] if f.get("label_probs")
                                                              else f.get("label") for f in rfields], sref,
                            [rp[q.id]["seconds"] for q in sub], [rp[q.id]["tokens"] for q in sub], labels,
                            "distribution read after the rationale"))
        text.append(table(sub_rows, f"reasoning first: first {len(sub)} dev pairs"))
    llm_rows = [r for r in rows if r["name"] != "embed-lr" and r["kappa"] is not None]
    best = max(llm_rows, key=lambda r: r["kappa"])
    base = rows[0]["kappa"]
    met = (best["kappa"] - base >= 0.05 and best["mcnemar"]["p_value"] < 0.05 and best["s_per_pair"] <= 10
           and len(pairs) == 300)
    text += ["", f"Best LLM configuration: **{best['name']}**, kappa {best['kappa']:.3f} vs embed-lr {base:.3f} "
             f"(McNemar p={best['mcnemar']['p_value']:.3f}, n={best['n']}). Goal met: **{'yes' if met else 'no'}**."]
    out = OUT / "local_probs.md"
    out.write_text("\n".join(text) + "\n")
    record_best(best, base, met, len(pairs))
    print("\n".join(text))
    return "\n".join(text)


RECIPES = {  # how to rebuild a row's configuration with optimize.compile (stacked is fitted on train there)
    "stacked": {"method": "stacked", "set": {"judge": "zero-shot"}, "compile": ["--optimizer", "none"]},
    "cascade@0.3": {"method": "stacked", "set": {"judge": "zero-shot", "llm_share": 0.3},
                    "compile": ["--optimizer", "none"]},
    "cascade@0.5": {"method": "stacked", "set": {"judge": "zero-shot", "llm_share": 0.5},
                    "compile": ["--optimizer", "none"]},
    "zero-shot+probs": {"method": "zero-shot+probs", "set": {}, "compile": ["--optimizer", "none"]},
    "zero-shot": {"method": "zero-shot", "set": {}, "compile": ["--optimizer", "none"]},
    "reasoning+probs": {"method": "reasoning+probs", "set": {}, "compile": ["--optimizer", "none"]},
}


def record_best(best: dict, base: float, met: bool, n: int) -> None:
    key = next(k for k in sorted(RECIPES, key=len, reverse=True) if best["name"].startswith(k))
    doc = {**RECIPES[key], "measured": {"row": best["name"], "n_dev_pairs": n, "kappa": best["kappa"],
                                        "kappa_ci": list(best["ci"]), "embed_lr_kappa": base,
                                        "mcnemar": best["mcnemar"], "s_per_pair_median": best["s_per_pair"],
                                        "goal": GOAL, "goal_met": met, "table": "bench/results/local_probs.md"}}
    (OUT / "best_local.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
