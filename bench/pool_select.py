"""Choose the pool scorer on a query-grouped dev split of the pool, then fit the choice on the whole pool.

    python -m bench.pool_select --work /tmp/learn/select       # then: bench/probe_heldout.py table --pool-scorer ...

The pool here is bench/probe_heldout.py's: the MSRD pool split minus the held-out pairs' 200 queries (dev queries are
never in it). One feature matrix (`query+fields+prior`, the widest set, computed once by the library's
`RelevanceScorer._matrix`, the item priors leave-query-out) serves every configuration: a configuration is a feature
set (a prefix of those columns), the classifier and its class weighting. Each is fitted on 80% of the queries and
scored on the other 20% (`selection.query_grouped_split`, seed 0) as the protocol is: balanced pairs, one relevant
and one irrelevant judged movie of each dev query (10 seeded draws; mean kappa), plus ROC AUC over every dev pair.
The best mean kappa wins (ties: the narrower set). The winner is then fitted on every pool pair (`fit(pairs,
rows=...)`, the same matrix) and saved as `<work>/pool_scorer.json` with `pool_scorer.fit.json` (its options, fit
seconds and CPU seconds: the matrix plus the fit, peak memory). Nothing here reads the held-out pairs' labels.
Writes bench/results/pool_select.md.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import heldout_pairs
from hiera_dspy.data import load_dataset
from hiera_dspy.signals import RelevanceScorer
from hiera_dspy.signals.feature_sets import WIDE, wide_columns
from hiera_dspy.signals.selection import query_grouped_split

CONFIGS = [("lr", "base", "balanced"), ("hgb", "query", "balanced"), ("hgb", "query+fields", "balanced"),
           ("hgb", "query+prior", "balanced"), ("hgb", "query+fields+prior", "balanced")]


def wide_matrix(scheme, pool, embedder, work: Path) -> tuple[RelevanceScorer, np.ndarray, float]:
    """The wide feature rows of `pool` (cached in `work`; a cached matrix is checked on 50 recomputed rows) and the CPU
    seconds it took."""
    scorer = RelevanceScorer(scheme, embedder=embedder, features=WIDE, model="hgb")
    triples = [(p.query, p.item_title, p.item_text) for p in pool]
    scorer.features.fit(triples)
    from hiera_dspy.signals.item_prior import ItemPrior
    y = np.array([scheme.labels.index(p.label) for p in pool]) / max(1, len(scheme.labels) - 1)
    scorer.prior = ItemPrior().fit(triples, y)
    path = work / "wide.npz"
    if path.is_file():
        cached = np.load(path)
        sample = sorted(random.Random(1).sample(range(len(pool)), 50))
        if cached["x"].shape[0] != len(pool) or not np.allclose(scorer._matrix([pool[i] for i in sample]),
                                                                cached["x"][sample]):
            raise SystemExit(f"{path} does not match these pool pairs: delete it")
        return scorer, cached["x"], float(cached["cpu_s"])
    start = time.process_time()
    x = scorer._matrix(pool)
    cpu = time.process_time() - start
    np.savez(path, x=x, cpu_s=cpu)
    return scorer, x, cpu


def kappa_on_dev(fit_idx, dev_idx, x, pool, scheme, model, feature_set, weight) -> dict:
    """Fit on fit_idx, score dev_idx: mean balanced-draw kappa (10 draws), its sd, AUC, fit CPU s."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import cohen_kappa_score, roc_auc_score
    from sklearn.preprocessing import StandardScaler

    from hiera_dspy.signals.trees import fit_trees, predict_trees

    dev_pairs = [pool[i] for i in dev_idx]
    cols = wide_columns(feature_set)
    y = np.array([scheme.labels.index(pool[i].label) for i in fit_idx])
    xf, xd = x[np.ix_(fit_idx, cols)], x[np.ix_(dev_idx, cols)]
    start = time.process_time()  # the library's classifiers (RelevanceScorer.fit's), on the given rows
    if model == "hgb":
        p = predict_trees(fit_trees(xf, y, len(set(y.tolist())), weight), xd)[:, -1]
    else:
        scaler = StandardScaler().fit(xf)
        lr = LogisticRegression(max_iter=1000, random_state=0, class_weight=weight).fit(scaler.transform(xf), y)
        p = lr.predict_proba(scaler.transform(xd))[:, -1]
    cpu = time.process_time() - start
    gold = np.array([p_.label == scheme.labels[-1] for p_ in dev_pairs], int)
    by_query: dict[str, list[list[int]]] = {}
    for j, pair in enumerate(dev_pairs):
        by_query.setdefault(pair.query_id, [[], []])[gold[j]].append(j)
    both = [v for _, v in sorted(by_query.items()) if v[0] and v[1]]
    kappas = []
    for seed in range(10):
        rng = random.Random(100 + seed)
        idx = [j for v in both for j in (rng.choice(v[1]), rng.choice(v[0]))]
        kappas.append(cohen_kappa_score(gold[idx], (p[idx] > 0.5).astype(int)))
    return {"model": model, "features": feature_set, "class_weight": weight, "kappa": float(np.mean(kappas)),
            "kappa_sd": float(np.std(kappas)), "auc": float(roc_auc_score(gold, p)), "fit_cpu_s": cpu,
            "dev_pairs": len(dev_idx), "balanced_pairs": 2 * len(both), "fit_pairs": len(fit_idx)}


def main(argv=None):
    from hiera_dspy.signals.features import resolve_embedder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    dataset = load_dataset("msrd")
    heldq = {p.query_id for p in heldout_pairs(dataset, 200, 21)}
    pool = [p for p in dataset.split("pool") if p.query_id not in heldq]
    embedder = resolve_embedder("auto")
    wall = time.perf_counter()
    wide, x, matrix_cpu = wide_matrix(dataset.scheme, pool, embedder, work)
    fit_pairs, _ = query_grouped_split(pool, 0.2, 0)
    fit_ids = {p.id for p in fit_pairs}
    fit_idx = np.array([i for i, p in enumerate(pool) if p.id in fit_ids])
    dev_idx = np.array([i for i, p in enumerate(pool) if p.id not in fit_ids])
    rows = []
    done = work / "configs.jsonl"
    seen = [json.loads(line) for line in done.read_text().splitlines()] if done.is_file() else []
    for model, feature_set, weight in CONFIGS:
        row = next((r for r in seen if (r["model"], r["features"], r["class_weight"]) == (model, feature_set, weight)),
                   None)
        if row is None:
            row = kappa_on_dev(fit_idx, dev_idx, x, pool, dataset.scheme, model, feature_set, weight)
            with done.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    best = max(rows, key=lambda r: (round(r["kappa"], 3), -len(wide_columns(r["features"]))))
    # the winner on every pool pair, from the same matrix
    start, cpu = time.perf_counter(), time.process_time()
    final = RelevanceScorer(dataset.scheme, embedder=embedder, features=best["features"], model=best["model"],
                            class_weight=best["class_weight"])
    final.features = wide.features  # its idf table is the matrix's (fitted on these pairs)
    final.fit(pool, rows=x[:, wide_columns(best["features"])])
    fit_s, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    final.save(work / "pool_scorer.json")
    side = {"pairs": len(pool), "options": {"model": best["model"], "features": best["features"],
                                            "class_weight": best["class_weight"]},
            "fit_s": fit_s, "fit_cpu_s": matrix_cpu + fit_cpu, "matrix_cpu_s": matrix_cpu, "trees_cpu_s": fit_cpu,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "wall_s_this_run": time.perf_counter() - wall, "configs_tried": len(rows)}
    (work / "pool_scorer.fit.json").write_text(json.dumps(side, indent=1) + "\n")
    del wide
    lines = [f"### Choosing the pool scorer: query-grouped dev split of the pool ({len(pool)} pairs minus the "
             f"held-out queries; fit {len(fit_idx)} pairs, dev {len(dev_idx)})", "",
             f"{len(rows)} configurations tried; kappa = mean over 10 balanced draws (one relevant and one irrelevant "
             f"pair per dev query, {rows[0]['balanced_pairs']} pairs a draw) at threshold 0.5.", "",
             "| model | features | class_weight | dev kappa (sd over draws) | dev AUC | fit CPU s |", "|---|---|---|---|---|---|"]
    for r in rows:
        mark = "**" if r is best else ""
        lines.append(f"| {mark}{r['model']}{mark} | {r['features']} | {r['class_weight']} | {r['kappa']:.3f} "
                     f"({r['kappa_sd']:.3f}) | {r['auc']:.3f} | {r['fit_cpu_s']:.0f} |")
    lines += ["", f"Chosen: {best['model']}, {best['features']}, {best['class_weight']}; refitted on all {len(pool)} "
                  f"pool pairs: feature matrix {matrix_cpu:.0f} CPU s, trees {fit_cpu:.0f} CPU s, peak memory "
                  f"{side['peak_rss_mb']:.0f} MB."]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "pool_select.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
