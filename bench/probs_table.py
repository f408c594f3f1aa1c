"""Rows of bench/local_probs.py: one configuration's labels on the evaluated pairs -> kappa with its bootstrap CI,
accuracy, McNemar against embed-lr on the same pairs, median seconds and mean tokens per pair; and the markdown table.

`family_rows` builds the rows every labelled set gets (embed-lr, zero-shot, zero-shot+probs argmax and thresholds,
stacked fitted on train, cascades) from the judgments `eval.run` stored for the train and the evaluated pairs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from hiera_dspy.lm.label_probs import expected_relevance, label_for, tune_cuts
from hiera_dspy.methods.learned_scorer import tau_for_share, top
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.signals.stacking import Stacker

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
