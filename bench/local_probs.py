"""Does the embedded LLM earn its cost beside the learned scorer? One table on the bundled MSRD dev split.

    python -m bench.local_probs --limit 300 --reasoning-limit 300      # the full dev split (hours on 2 busy cores)
    python -m bench.local_probs --compiled artifacts/msrd/stacked.json # + a "compiled best" row: eval.run --judge ART
    python -m bench.local_probs --three-level bench/data/three_level  # the 3-level set (bench/make_three_level.py)
    python -m bench.local_probs --limit 40 --lm openai/my-model --api-base http://127.0.0.1:8000/v1   # any server

Rows, all on the first --limit dev pairs (reasoning+probs on its first --reasoning-limit), each with Cohen's kappa and
its bootstrap 95% CI, accuracy, McNemar against embed-lr on the same pairs, median seconds and mean tokens per pair:

- embed-lr: the learned scorer alone (fitted on the train pairs, no LM call);
- zero-shot: the Zero-Shot prompt's sampled label (the zero-shot+probs run: greedy decoding is not changed by reading
  log-probabilities, so this is exactly zero-shot's label);
- zero-shot+probs: the label distribution's argmax, and the label from cuts on expected relevance tuned on the train
  pairs' distributions;
- reasoning+probs: one or two sentences of reasoning first, the distribution read after them;
- stacked: logistic regression over the scorer's and the LLM's distributions fitted on the train pairs exactly as the
  `stacked` method fits it (out-of-fold scorer distributions, the LLM's distribution of every train pair);
- cascade@share: the scorer keeps the pairs it is surest of (tau by the share rule on dev, no labels), the stacked
  combination decides the rest;
- compiled best (--compiled ART): `eval.run --judge ART` on the same dev pairs.
With --cv, secondary rows cross-validate thresholds and stacker over queries of the judged dev pairs (never "best").

The LLM's train distributions come from `eval.run --split train --method zero-shot+probs`: the same prompts, byte for
byte, as the `stacked` method's train calls (tests/signals/test_bench_probs.py checks it), so after
`optimize.compile --method stacked` they are answered by DSPy's cache. Every LLM judgment goes through `eval.run` (the
resumable run store and DSPy's cache: a killed bench resumes, a larger --limit judges only the new pairs).
Writes bench/results/local_probs.md and bench/results/best_local.json (goal_met only when all 300 dev pairs are judged);
--three-level writes bench/results/local_probs_three_level.md and adds its summary to best_local.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hiera_dspy import settings
from hiera_dspy.data import load_dataset
from hiera_dspy.methods.label_probs import expected_relevance, label_for, tune_cuts
from hiera_dspy.methods.learned_scorer import ScorerState, tau_for_share, top
from hiera_dspy.methods.probs import out_of_fold_scores
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.signals.stacking import Stacker

# ---- the table's rows (one configuration's labels -> kappa with its bootstrap CI, McNemar against the
# reference)

HEAD = ("| configuration | n | kappa [95% CI] | accuracy | McNemar vs embed-lr | s/pair (median) | tokens/pair "
        "| note |",
        "|---|---|---|---|---|---|---|---|")


def row(name, pairs, pred, ref, seconds, tokens, labels, note="", eligible=True) -> dict:
    """One table row; `eligible` False for rows that may not be picked as the best configuration (cross-validated on
    the evaluated pairs, or the reference itself)."""
    gold = [p.label for p in pairs]
    m = classification_metrics(gold, list(pred), labels)
    low, high = bootstrap_ci(gold, list(pred), labels, "kappa")
    test = mcnemar(gold, list(ref), list(pred)) if name != "embed-lr" else None
    return {"name": name, "n": m["n"], "kappa": m["kappa"], "ci": (low, high), "accuracy": m["accuracy"],
            "mcnemar": test, "s_per_pair": statistics.median(seconds) if seconds else None,
            "tokens_per_pair": float(np.mean(tokens)) if tokens else 0.0, "note": note,
            "eligible": eligible and name != "embed-lr"}


def fmt(r: dict) -> str:
    """A row as a markdown table line."""
    k = "-" if r["kappa"] is None else f"{r['kappa']:.3f}"
    ci = "" if r["ci"][0] is None else f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
    t = r["mcnemar"]
    mc = "(reference)" if t is None else f"b={t['b']} c={t['c']} p={t['p_value']:.3f}"
    s = "-" if r["s_per_pair"] is None else f"{r['s_per_pair']:.2f}"
    acc = "-" if r["accuracy"] is None else f"{r['accuracy']:.3f}"
    return f"| {r['name']} | {r['n']} | {k}{ci} | {acc} | {mc} | {s} | {r['tokens_per_pair']:.0f} | {r['note']} |"


def table(rows: Sequence[dict], title: str) -> str:
    """A titled markdown table of rows."""
    return "\n".join(["", f"### {title}", "", *HEAD, *(fmt(r) for r in rows)])


def llm_dist(judgment: dict | None) -> dict | None:
    """The LLM's label distribution in a stored judgment (None: failed, or the endpoint gave no log-probabilities)."""
    if not judgment or judgment.get("error"):
        return None
    return judgment["fields"].get("label_probs")


def llm_label(judgment: dict | None, field: str = "label") -> str | None:
    """A stored judgment's label (None when it failed: a failure is wrong, never a label)."""
    if not judgment or judgment.get("error"):
        return None
    fields = judgment.get("fields") or {}
    return fields.get(field) or judgment.get("label") or fields.get("label")  # label: top level since the Judgment


def relevance(judgment: dict | None, labels: Sequence[str]) -> float | None:
    """Expected relevance of a judgment (its label's grade when it has no distribution; None when it failed)."""
    dist, label = llm_dist(judgment), llm_label(judgment)
    if dist:
        return expected_relevance(dist, labels)
    return float(labels.index(label)) if label in labels else None


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


def family_rows(labels, train, pairs, scores, oof, zs_train, zs, *, scorer_seconds: float, all_scores=(),
                shares=(), cv: bool = False) -> tuple[list[dict], Stacker]:
    """The zero-shot family's rows on `pairs` (the evaluated pairs with a judgment), fitted on `train`.

    scores: the scorer's distribution by pair id (fitted on train); oof: the train pairs' out-of-fold scorer
    distributions; zs_train/zs: eval.run's zero-shot+probs judgments by pair id; all_scores: the scorer's top
    probability on every evaluated-split pair (the cascade's tau by the share rule, as the `stacked` method picks it).
    """
    ref = [top(scores[q.id])[0] for q in pairs]
    secs = [zs[q.id]["seconds"] for q in pairs]
    toks = [zs[q.id]["tokens"] for q in pairs]
    llm = [llm_dist(zs[q.id]) for q in pairs]
    errors = sum(bool(zs[q.id].get("error")) for q in pairs)
    failed = f"; {errors} failed (wrong)" if errors else ""
    rows = [row("embed-lr", pairs, ref, ref, [scorer_seconds] * len(pairs), [], labels, "no LM call")]
    rows.append(row("zero-shot", pairs, [llm_label(zs[q.id], "sampled_label") for q in pairs], ref, secs, toks,
                    labels, "sampled label" + failed))
    argmax = [top(d)[0] if d else llm_label(zs[q.id]) for d, q in zip(llm, pairs)]
    rows.append(row("zero-shot+probs (argmax)", pairs, argmax, ref, secs, toks, labels,
                    f"{sum(d is not None for d in llm)}/{len(pairs)} with a distribution"))
    fit_train = [q for q in train if relevance(zs_train.get(q.id), labels) is not None]
    rel = {q.id: relevance(zs[q.id], labels) for q in pairs}
    cuts = tune_cuts([relevance(zs_train[q.id], labels) for q in fit_train], [q.label for q in fit_train], labels)
    cut_pred = [label_for(rel[q.id], labels, cuts) if rel[q.id] is not None else None for q in pairs]
    rows.append(row("zero-shot+probs (thresholds tuned on train)", pairs, cut_pred, ref, secs, toks, labels,
                    "cuts " + ", ".join(f"{c:.2f}" for c in cuts) + " on expected relevance"))
    rows[-1]["cuts"] = cuts
    if cv:
        judged = [q for q in pairs if rel[q.id] is not None]
        folds = query_folds(judged)
        cv_pred = dict(zip([q.id for q in judged], cross_fitted(
            judged, folds, lambda tr: tune_cuts([rel[q.id] for q in tr], [q.label for q in tr], labels),
            lambda c, q: label_for(rel[q.id], labels, c))))
        rows.append(row("zero-shot+probs (thresholds, 5-fold CV on the evaluated pairs)", pairs,
                        [cv_pred.get(q.id) for q in pairs], ref, secs, toks, labels, "secondary", eligible=False))
    train_llm = [llm_dist(zs_train.get(q.id)) for q in train]
    stacker = Stacker(labels).fit([oof[q.id] for q in train], train_llm, [q.label for q in train])
    combined = [top(stacker.predict_proba(scores[q.id], d))[0] if not zs[q.id].get("error") else None
                for q, d in zip(pairs, llm)]
    stacked_secs = [s + scorer_seconds for s in secs]
    rows.append(row("stacked (fitted on train)", pairs, combined, ref, stacked_secs, toks, labels,
                    f"every pair to the LLM; {sum(d is not None for d in train_llm)}/{len(train)} train pairs with "
                    "an LLM distribution"))
    if cv:
        llm_of = dict(zip([q.id for q in pairs], llm))
        folds = query_folds(pairs)
        cv_stack = cross_fitted(pairs, folds, lambda tr: Stacker(labels).fit(
            [scores[q.id] for q in tr], [llm_of[q.id] for q in tr], [q.label for q in tr]),
            lambda s, q: top(s.predict_proba(scores[q.id], llm_of[q.id]))[0])
        rows.append(row("stacked (5-fold CV on the evaluated pairs)", pairs, cv_stack, ref, stacked_secs, toks,
                        labels, "secondary: fitted on evaluated pairs of other queries", eligible=False))
    for share in shares:
        tau = tau_for_share(list(all_scores), share)
        routed = [top(scores[q.id])[1] < tau for q in pairs]
        pred = [s if r else y for s, r, y in zip(combined, routed, ref)]
        rows.append(row(f"cascade@{share} (stacked on routed pairs)", pairs, pred, ref,
                        [s if r else scorer_seconds for s, r in zip(stacked_secs, routed)],
                        [t if r else 0 for t, r in zip(toks, routed)], labels,
                        f"tau {tau:.3f}; {sum(routed)}/{len(pairs)} to the LLM"))
    return rows, stacker

OUT = Path("bench/results")
RUNS = OUT / "local-probs"
MODEL = "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
GOAL = "beat embed-lr by >= 0.05 kappa with McNemar p < 0.05 at <= 10 s/pair"


THREE_LEVEL_NOTE = ("3-level set: query-disjoint train/ and eval/ Home Depot-format folders built from the bundled "
                    "MSRD sample by bench/make_three_level.py; its middle level is constructed, not human-judged")


def judged(method: str | None, dataset: str, split: str, n: int, lm_args: list[str],
           run_ids: dict[str, str] | None = None, judge: str | None = None) -> dict[str, dict]:
    """Rows of `eval.run --dataset D --split S --method M --limit n` (or `--judge ART`) by pair id; resumes and judges
    only what is missing. With `run_ids[method]`, the finished rows of that run in the run store, judging nothing."""
    import eval.run as run_cli

    if run_ids and method in run_ids:
        from hiera_dspy.cli.options import runs_dir
        from hiera_dspy.store.run_store import RunStore

        return {r["id"]: r for r in RunStore(runs_dir() / "store.sqlite").rows(run_ids[method])}
    what = ["--method", method] if method else ["--judge", judge]
    name = method or "compiled-" + hashlib.sha256(str(Path(judge).resolve()).encode()).hexdigest()[:8]
    out = RUNS / (("" if dataset == "msrd" else slug(dataset) + "-") + f"{name}-{split}")
    saved = os.environ.get("HIERA_REFERENCE")
    os.environ["HIERA_REFERENCE"] = "none"  # the reference is computed once below
    try:
        run_cli.main(["--dataset", dataset, "--split", split, *what, "--limit", str(n), "--out", str(out), *lm_args])
    finally:
        if saved is None:
            os.environ.pop("HIERA_REFERENCE", None)
        else:
            os.environ["HIERA_REFERENCE"] = saved
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in rows}


def slug(text: str) -> str:
    """A file-name-safe form of a dataset spec."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text).strip("_")


def scorer_features(key: str, scheme, train, evaluated) -> dict:
    """The scorer fitted on `train`: its distribution of every evaluated pair ("scores"), the train pairs'
    out-of-fold distributions ("oof", the stacker's features) and seconds per pair; cached beside the results."""
    embedder = settings.reference_embedder()
    cache = RUNS / f"scorer-{slug(key)}-{embedder}.json"
    wanted = sorted(p.id for p in [*train, *evaluated])
    if cache.is_file():
        doc = json.loads(cache.read_text())
        if doc.get("ids") == wanted:
            return doc
    state = ScorerState(scheme, train, embedder)
    start = time.perf_counter()
    scores = state.scorer.predict_proba_many(list(evaluated))
    seconds = (time.perf_counter() - start) / max(1, len(evaluated))
    oof = out_of_fold_scores(scheme, train, embedder)
    doc = {"ids": wanted, "scores": dict(zip([p.id for p in evaluated], scores)),
           "oof": dict(zip([p.id for p in train], oof)), "seconds_per_pair": seconds}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(doc))
    return doc


def main(argv: list[str] | None = None) -> str:
    global OUT, RUNS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=300, help="first N evaluated pairs (MSRD dev; 3-level eval)")
    p.add_argument("--train-limit", type=int, default=300, help="first N train pairs the stacker is fitted on")
    p.add_argument("--reasoning-limit", type=int, default=30, help="first N dev pairs for reasoning+probs (0: skip)")
    p.add_argument("--shares", default="0.3,0.5", help="cascade LLM shares")
    p.add_argument("--compiled", metavar="ART", help="a compiled artifact judged on the same dev pairs "
                   "(eval.run --judge)")
    p.add_argument("--three-level", metavar="FOLDER", help="the 3-level set (FOLDER/train and FOLDER/eval, "
                   "bench/make_three_level.py) instead of MSRD")
    p.add_argument("--cv", action="store_true", help="add secondary rows cross-validated over the judged pairs")
    p.add_argument("--lm", default=None, help="model (default: the embedded local model)")
    p.add_argument("--api-base", default=None)
    p.add_argument("--runs", default="", help="METHOD=RUN_ID,...: read those methods' finished dev judgments from the "
                   "run store instead of judging (e.g. a run started by an earlier version, whose run id differs)")
    p.add_argument("--out-dir", default="bench/results", help="results folder (default bench/results)")
    args = p.parse_args(argv)
    OUT, RUNS = Path(args.out_dir), Path(args.out_dir) / "local-probs"
    lm_args = [*(["--lm", args.lm] if args.lm else []), *(["--api-base", args.api_base] if args.api_base else [])]
    if args.three_level:
        return three_level(args, lm_args)
    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    dev, train = dataset.split("dev"), dataset.split("train")[:args.train_limit]
    feats = scorer_features("msrd", dataset.scheme, train, dev)
    scores, secs = feats["scores"], feats["seconds_per_pair"]
    run_ids = dict(item.split("=", 1) for item in args.runs.split(",") if item)
    zs_train = judged("zero-shot+probs", "msrd", "train", args.train_limit, lm_args)
    zs = judged("zero-shot+probs", "msrd", "dev", args.limit, lm_args, run_ids)
    pairs = [q for q in dev[:args.limit] if q.id in zs]
    shares = [float(s) for s in args.shares.split(",") if s]
    rows, _ = family_rows(labels, train, pairs, scores, feats["oof"], zs_train, zs, scorer_seconds=secs,
                          all_scores=[top(scores[q.id])[1] for q in dev], shares=shares, cv=args.cv)
    if args.compiled:
        done = judged(None, "msrd", "dev", args.limit, lm_args, judge=args.compiled)
        ref = [top(scores[q.id])[0] for q in pairs]
        got = [done.get(q.id) for q in pairs]
        rows.append(row(f"compiled best ({Path(args.compiled).name})", pairs, [llm_label(g) for g in got], ref,
                        [g["seconds"] for g in got if g], [g["tokens"] for g in got if g], labels,
                        "eval.run --judge " + args.compiled, ))
    text = [f"# The embedded LLM beside the learned scorer: MSRD dev (first {len(pairs)} of {len(dev)} pairs judged)",
            "", f"Goal (issue 15): {GOAL}. Model: {' '.join(lm_args) or MODEL}; "
            f"embed-lr, thresholds and stacker fitted on the first {len(train)} train pairs. Seconds are wall-clock "
            "on a shared, heavily loaded 2-core machine.", table(rows, "zero-shot family")]
    if args.reasoning_limit:
        text.append(reasoning_table(args, lm_args, dev, scores, zs, labels, secs))
    best = max((r for r in rows if r["eligible"] and r["kappa"] is not None), key=lambda r: r["kappa"])
    base = rows[0]["kappa"]
    met = (best["kappa"] - base >= 0.05 and best["mcnemar"]["p_value"] < 0.05 and best["s_per_pair"] <= 10
           and len(pairs) == len(dev) == 300)
    text += ["", f"Best LLM configuration: **{best['name']}**, kappa {best['kappa']:.3f} vs embed-lr {base:.3f} "
             f"(McNemar p={best['mcnemar']['p_value']:.3f}, n={best['n']}). Goal met: **{'yes' if met else 'no'}**"
             + ("" if len(pairs) == 300 else " (the goal is judged on all 300 dev pairs)") + "."]
    (OUT / "local_probs.md").write_text("\n".join(text) + "\n")
    record_best(best, base, met, len(pairs), args.compiled)
    print("\n".join(text))
    return "\n".join(text)


def reasoning_table(args, lm_args, dev, scores, zs, labels, secs) -> str:
    """reasoning+probs beside zero-shot and embed-lr on the first --reasoning-limit dev pairs."""
    rp = judged("reasoning+probs", "msrd", "dev", args.reasoning_limit, lm_args, None)
    sub = [q for q in dev[:args.reasoning_limit] if q.id in rp and q.id in zs]
    ref = [top(scores[q.id])[0] for q in sub]
    rows = [row("embed-lr", sub, ref, ref, [secs] * len(sub), [], labels, "no LM call"),
            row("zero-shot", sub, [llm_label(zs[q.id], "sampled_label") for q in sub], ref,
                [zs[q.id]["seconds"] for q in sub], [zs[q.id]["tokens"] for q in sub], labels, "same pairs")]
    rsec, rtok = [rp[q.id]["seconds"] for q in sub], [rp[q.id]["tokens"] for q in sub]
    rows.append(row("reasoning+probs (sampled)", sub, [llm_label(rp[q.id], "sampled_label") for q in sub], ref, rsec,
                    rtok, labels, "reasoning first"))
    argmax = [top(rp[q.id]["fields"]["label_probs"])[0] if llm_label(rp[q.id]) and rp[q.id]["fields"].get("label_probs")
              else llm_label(rp[q.id]) for q in sub]
    rows.append(row("reasoning+probs (argmax)", sub, argmax, ref, rsec, rtok, labels,
                    "distribution read after the rationale"))
    return table(rows, f"reasoning first: first {len(sub)} dev pairs")


def three_level(args, lm_args) -> str:
    """The same table on the 3-level set: fitted on FOLDER/train (every pair), evaluated on FOLDER/eval."""
    folder = Path(args.three_level)
    train_spec, eval_spec = f"homedepot:{folder / 'train'}", f"homedepot:{folder / 'eval'}"
    train_set, eval_set = load_dataset(train_spec), load_dataset(eval_spec)
    labels = list(eval_set.scheme.labels)
    train, evaluated = train_set.split("all")[:args.train_limit], eval_set.split("all")
    feats = scorer_features(f"three-level-{folder.name}", eval_set.scheme, train, evaluated)
    zs_train = judged("zero-shot+probs", train_spec, "all", args.train_limit, lm_args)
    zs = judged("zero-shot+probs", eval_spec, "all", args.limit, lm_args)
    pairs = [q for q in evaluated[:args.limit] if q.id in zs]
    rows, _ = family_rows(labels, train, pairs, feats["scores"], feats["oof"], zs_train, zs,
                          scorer_seconds=feats["seconds_per_pair"], cv=args.cv)
    model = " ".join(lm_args) or MODEL
    text = [f"# The embedded LLM beside the learned scorer: 3-level set ({len(pairs)} of {len(evaluated)} eval pairs "
            "judged)", "", f"{THREE_LEVEL_NOTE}. Model: {model}; embed-lr, thresholds and stacker fitted on the "
            f"{len(train)} train pairs; labels {', '.join(labels)}.", table(rows, "zero-shot family, 3 levels")]
    base = rows[0]
    stacked = next(r for r in rows if r["name"].startswith("stacked"))
    verdict = "loses to" if stacked["mcnemar"]["p_value"] < 0.05 and stacked["kappa"] < base["kappa"] else \
        "does not lose to"
    text += ["", f"stacked (fitted on train) {verdict} embed-lr on this set: kappa {stacked['kappa']:.3f} vs "
             f"{base['kappa']:.3f} (McNemar p={stacked['mcnemar']['p_value']:.3f}, n={stacked['n']})."]
    (OUT / "local_probs_three_level.md").write_text("\n".join(text) + "\n")
    summary = {"table": str(OUT / "local_probs_three_level.md"), "n_eval_pairs": len(pairs),
               "embed_lr_kappa": base["kappa"], "rows": {r["name"]: {"kappa": r["kappa"], "mcnemar": r["mcnemar"]}
                                                       for r in rows[1:]},
               "stacked_does_not_lose": verdict == "does not lose to", "note": THREE_LEVEL_NOTE}
    best_file = OUT / "best_local.json"
    if best_file.is_file():
        doc = json.loads(best_file.read_text())
        doc.setdefault("measured", {})["three_level"] = summary
        best_file.write_text(json.dumps(doc, indent=1) + "\n")
    print("\n".join(text))
    return "\n".join(text)


RECIPES = {  # how to rebuild a row's configuration with optimize.compile (stacked is fitted on train there)
    "stacked": {"method": "stacked", "set": {"judge": "zero-shot"}, "compile": ["--optimizer", "none"]},
    "cascade@0.3": {"method": "stacked", "set": {"judge": "zero-shot", "llm_share": 0.3},
                    "compile": ["--optimizer", "none"]},
    "cascade@0.5": {"method": "stacked", "set": {"judge": "zero-shot", "llm_share": 0.5},
                    "compile": ["--optimizer", "none"]},
    "zero-shot+probs (argmax)": {"method": "zero-shot+probs", "set": {}, "compile": ["--optimizer", "none"]},
    "zero-shot": {"method": "zero-shot", "set": {}, "compile": ["--optimizer", "none"]},
    "reasoning+probs": {"method": "reasoning+probs", "set": {}, "compile": ["--optimizer", "none"]},
}


def recipe(best: dict, compiled: str | None) -> dict:
    """{"method", "set", "compile"} that rebuilds a row's configuration with optimize.compile."""
    name = best["name"]
    if name.startswith("compiled best") and compiled:
        doc = json.loads(Path(compiled).read_text())
        metrics = doc.get("metrics") or {}
        extra = [*(["--optimizer", metrics["optimizer"]] if metrics.get("optimizer") else []),
                 *(["--budget", metrics["budget"]] if metrics.get("budget") else [])]
        return {"method": doc["method"], "set": doc.get("config") or {}, "compile": extra}
    if name.startswith("cascade@"):
        share = float(name.split("@", 1)[1].split(" ", 1)[0])
        return {"method": "stacked", "set": {"judge": "zero-shot", "llm_share": share},
                "compile": ["--optimizer", "none"]}
    if best.get("cuts"):  # expected-relevance cuts tuned on train
        return {"method": "zero-shot+probs", "set": {"cuts": best["cuts"]}, "compile": ["--optimizer", "none"]}
    key = next(k for k in sorted(RECIPES, key=len, reverse=True) if name.startswith(k))
    return dict(RECIPES[key])


def record_best(best: dict, base: float, met: bool, n: int, compiled: str | None) -> None:
    """Write best_local.json: the best row's recipe and what was measured (keeps an earlier 3-level summary)."""
    path = OUT / "best_local.json"
    previous = json.loads(path.read_text()).get("measured", {}) if path.is_file() else {}
    measured = {"row": best["name"], "n_dev_pairs": n, "kappa": best["kappa"], "kappa_ci": list(best["ci"]),
                "embed_lr_kappa": base, "mcnemar": best["mcnemar"], "s_per_pair_median": best["s_per_pair"],
                "tokens_per_pair": best["tokens_per_pair"], "goal": GOAL, "goal_met": met,
                "table": str(OUT / "local_probs.md")}
    if "three_level" in previous:
        measured["three_level"] = previous["three_level"]
    path.write_text(json.dumps({**recipe(best, compiled), "measured": measured}, indent=1) + "\n")


if __name__ == "__main__":
    main()
