"""Graded judges on real Home Depot judgments: every learned method at 300 pairs and at the whole pool, three levels.

    python -m bench.graded --work /tmp/graded                  # fit what is not cached, then the table
    python -m bench.graded --work /tmp/graded --only table     # the table from the cached predictions

Data: the Home Depot Product Search Relevance judgments pool (22,140 pairs of 3,539 queries, product titles only,
the raters' mean on 1-3 binned as the `homedepot` scheme does), written back as the competition's `train.csv` and
read through `--dataset homedepot:FOLDER`, as a user would. It is read from `--pool` (default: the shared data
folder beside the checkout); nothing of it is bundled or read by the library or its tests.

Splits, by query (seed 42): 30% of the queries are held out; from their pairs a balanced test set of `--per-level`
pairs of each level (the paper's protocol: equal representation, seed 42). The other 70% is the train pool: the
300-pair methods learn from a balanced seeded 300 of it, the whole-pool ones from all of it. ce-blend chooses its
weight and thresholds on its own query-grouped dev split of what it is given (`dev_queries`), never on the test.

Rows: embed-lr 300 (the McNemar reference), ce-blend 300, the whole-pool scorer (hgb, query features, balanced
class weights: embed-lr's pool recipe), the cross-encoder alone (w = 1) and ce-blend on the whole pool (one epoch
of fine-tuning, and two: `-2ep`) with its thresholds chosen by kappa and by quadratic-weighted kappa; each with n,
Cohen's kappa and quadratic-weighted kappa with bootstrap 95% CIs, accuracy, McNemar against embed-lr 300 (b, c, p), s a pair (batched, end to end through the
method's `prefetch` and `forward`), fit time and the per-grade confusion (rows gold, columns predicted).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import time
from pathlib import Path

from hiera_dspy.data import load_dataset
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.methods.cross import blend_labels, choose_blend, dev_split
from hiera_dspy.methods.grades import distributions
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.format import with_ci
from hiera_dspy.metrics.significance import mcnemar

ROOT = Path(__file__).resolve().parents[1]
POOL = ROOT.parent / "shared" / "data" / "homedepot" / "judgments-pool.jsonl.gz"
OUT = ROOT / "bench" / "results"
CEILING_DRAWS = 20  # simulated judges per rho in `ceiling`
SCORER_POOL = {"model": "hgb", "features": "query", "class_weight": "balanced"}


def write_train_csv(pool: Path, folder: Path) -> Path:
    """The pool as the competition's train.csv (id, product_uid, product_title, search_term, relevance)."""
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(pool, "rt", encoding="utf-8") as src, open(folder / "train.csv", "w", newline="") as dst:
        out = csv.writer(dst)
        out.writerow(["id", "product_uid", "product_title", "search_term", "relevance"])
        for line in src:
            row = json.loads(line)
            out.writerow([row["id"].split(":", 1)[1], row["item_id"], row["item_title"], row["query"],
                          row["relevance"]])
    return folder


def splits(pairs, labels, per_level: int, seed: int = 42):
    """(train pool, balanced test): 30% of the queries (seeded) held out, `per_level` test pairs of each label."""
    queries = sorted({p.query_id for p in pairs})
    rng = random.Random(seed)
    held = set(rng.sample(queries, int(0.3 * len(queries))))
    test_pool = [p for p in pairs if p.query_id in held]
    test = [p for label in labels for p in rng.sample([q for q in test_pool if q.label == label], per_level)]
    return [p for p in pairs if p.query_id not in held], test


def balanced(pairs, labels, n: int, seed: int):
    """A seeded sample of n pairs, n / K of each label."""
    rng = random.Random(seed)
    return [p for label in labels for p in rng.sample([q for q in pairs if q.label == label], n // len(labels))]


def judged(program, test) -> tuple[list[str], float]:
    """Labels of the test pairs through the method's own prefetch and forward, and seconds a pair."""
    start = time.perf_counter()
    if hasattr(program, "prefetch"):
        program.prefetch(test)
    labels = [program(**p.inputs()).label for p in test]
    return labels, (time.perf_counter() - start) / len(test)


def fit_embed_lr(scheme, train, test, **options) -> dict:
    program = build("embed-lr", BuildContext(scheme, train=train), **options)
    start = time.perf_counter()
    program.prepare(train)
    fit_s = time.perf_counter() - start
    labels, s_pair = judged(program, test)
    return {"pred": labels, "fit_s": fit_s, "s_pair": s_pair, "train_pairs": len(train)}


def fit_ce_blend(scheme, train, test, **options) -> dict[str, dict]:
    """ce-blend fitted once; rows for its kappa choice, its weighted-kappa choice and the cross-encoder alone."""
    program = build("ce-blend", BuildContext(scheme, train=train), **options)
    start = time.perf_counter()
    program.prepare(train)
    fit_s = time.perf_counter() - start
    pred, s_pair = judged(program, test)
    labels = scheme.labels
    _, held = dev_split(train, labels, program.dev_queries, program.seed)

    def dists(pairs):
        scorer = distributions([program.scorer_state.score(p.query, p.item_title, p.item_text) for p in pairs], labels)
        return scorer, program.encoder.grade_probs([(p.query, p.item_title, p.item_text) for p in pairs])

    dev_s, dev_c = dists(held)
    test_s, test_c = dists(test)
    gold = [p.label for p in held]
    base = {"fit_s": fit_s, "s_pair": s_pair, "train_pairs": len(train), "blend": program.blend}
    evidence = {"dev_ids": [p.id for p in held], "dev_scorer": dev_s.tolist(), "dev_ce": dev_c.tolist(),
                "test_scorer": test_s.tolist(), "test_ce": test_c.tolist()}
    rows = {"kappa": {**base, "pred": pred}, "evidence": evidence}
    _, w, th = choose_blend(gold, dev_s, dev_c, labels, blend_objective="weighted_kappa")
    rows["weighted_kappa"] = {**base, "pred": blend_labels(test_s, test_c, w, th, labels), "weight": w,
                              "thresholds": list(th)}
    _, w, th = choose_blend(gold, dev_s, dev_c, labels, weights=(1.0,))
    rows["ce_alone"] = {**base, "pred": blend_labels(test_s, test_c, 1.0, th, labels), "thresholds": list(th)}
    return rows


def stage_fit(dataset, work: Path, args) -> None:
    scheme, labels = dataset.scheme, dataset.scheme.labels
    train, test = splits(dataset.split("all"), labels, args.per_level)
    small = balanced(train, labels, 300, seed=42)
    ce = {"embedder": "auto", "ce_max_len": args.max_len, "dev_queries": args.dev_queries, "ce_epochs": args.ce_epochs}
    jobs = {
        "embed-lr-300": lambda: fit_embed_lr(scheme, small, test),
        "ce-blend-300": lambda: fit_ce_blend(scheme, small, test, **{**ce, "dev_queries": 50}, ce_pairs=300),
        "scorer-pool": lambda: fit_embed_lr(scheme, train, test, **SCORER_POOL),
        "ce-blend-pool": lambda: fit_ce_blend(scheme, train, test, **ce, **SCORER_POOL, ce_pairs=args.ce_pairs),
        "ce-blend-pool-2ep": lambda: fit_ce_blend(scheme, train, test, **{**ce, "ce_epochs": 2}, **SCORER_POOL,
                                                  ce_pairs=args.ce_pairs),
    }
    (work / "test.json").write_text(json.dumps({"gold": [p.label for p in test], "ids": [p.id for p in test],
                                                "train_pool": len(train)}))
    for name, job in jobs.items():
        path = work / f"{name}.json"
        if path.exists() and name not in args.refit:
            continue
        print(f"fitting {name} ...", flush=True)
        path.write_text(json.dumps(job()))


def rows_of(work: Path) -> list[tuple[str, dict]]:
    out = []
    for name in ("embed-lr-300", "scorer-pool", "ce-blend-300", "ce-blend-pool", "ce-blend-pool-2ep"):
        path = work / f"{name}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        if "pred" in data:
            out.append((name, data))
        else:
            out += [(f"{name} ({key})", data[key]) for key in ("kappa", "weighted_kappa", "ce_alone")]
    return out


def stage_table(dataset, work: Path, args) -> dict:
    labels = list(dataset.scheme.labels)
    gold = json.loads((work / "test.json").read_text())["gold"]
    rows = rows_of(work)
    reference = dict(rows).get("embed-lr-300", {}).get("pred")
    table = []
    for name, data in rows:
        m = classification_metrics(gold, data["pred"], labels)
        row = {"method": name, "n": m["n"], "kappa": m["kappa"], "kappa_ci": bootstrap_ci(gold, data["pred"], labels,
                                                                                          "kappa"),
               "weighted_kappa": m["weighted_kappa"],
               "weighted_kappa_ci": bootstrap_ci(gold, data["pred"], labels, "weighted_kappa"),
               "accuracy": m["accuracy"], "confusion": [r[:-1] for r in m["confusion"]],
               "s_pair": data["s_pair"], "fit_s": data["fit_s"], "train_pairs": data["train_pairs"]}
        if reference is not None and name != "embed-lr-300":
            row["mcnemar"] = mcnemar(gold, data["pred"], reference)
        table.append(row)
    result = {"labels": labels, "rows": table, "per_level": args.per_level,
              "train_pool": json.loads((work / "test.json").read_text())["train_pool"],
              "title_noise": title_noise(args.pool), "ceiling": ceiling(args.pool, per_level=args.per_level)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "graded.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (OUT / "graded.md").write_text(text)
    print(text)
    return result


def markdown(result: dict) -> str:
    """The table as Markdown."""
    lines = [f"Home Depot, 3 levels: {result['per_level'] * 3} balanced held-out pairs (30% of the queries, seed 42); "
             f"train pool {result['train_pool']} pairs of the other queries.", "",
             "| method | train pairs | kappa [95% CI] | weighted kappa (quadratic) [95% CI] | accuracy | "
             "McNemar vs embed-lr 300 (b, c, p) | s a pair | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        mc = r.get("mcnemar")
        cell = f"{mc['b']}, {mc['c']}, {mc['p_value']:.2g}" if mc else "(reference)"
        lines.append(f"| {r['method']} | {r['train_pairs']} | {with_ci(r['kappa'], r['kappa_ci'])} | "
                     f"{with_ci(r['weighted_kappa'], r['weighted_kappa_ci'])} | {r['accuracy']:.3f} | {cell} | "
                     f"{r['s_pair'] * 1000:.1f} ms | {r['fit_s']:.0f} |")
    lines += ["", "Confusion (rows gold, columns predicted; " + " / ".join(result["labels"]) + "):", ""]
    lines += [f"- {r['method']}: {r['confusion']}" for r in result["rows"]]
    if result.get("title_noise"):
        lines += ["", "The raters against themselves where a title-only judge sees one input (`title_noise`: the same "
                  "query, two products of one title; one seeded pair a group; the whole pool, natural label mix):", "",
                  "| products of | groups | kappa | weighted kappa | agreement | labels 1 / 2 / 3 |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {t['key']} | {t['groups']} | {t['kappa']:.3f} | {t['weighted_kappa']:.3f} | "
                  f"{t['agreement']:.3f} | {' / '.join(str(t['labels'][g]) for g in ('1', '2', '3'))} |"
                  for t in result["title_noise"]]
    if result.get("ceiling"):
        lines += ["", "What this protocol gives a judge whose score correlates rho with the raters' mean (`ceiling`: a "
                  "simulated score, Gaussian copula; RMSE after a least-squares line on the whole pool, the "
                  f"competition's measure; kappa on {result['per_level']} test pairs a level after the product's "
                  f"threshold search on as many dev pairs; {CEILING_DRAWS} draws):", "",
                  "| rho | RMSE (natural mix) | kappa, median [5%, 95%] |", "|---|---|---|"]
        lines += [f"| {c['rho']:.2f} | {c['rmse']:.3f} | {c['kappa']:.3f} [{c['kappa_5_95'][0]:.3f}, "
                  f"{c['kappa_5_95'][1]:.3f}] |" for c in result["ceiling"]]
    return "\n".join(lines) + "\n"


def title_noise(pool: Path, seed: int = 42) -> list[dict]:
    """How far the raters' own labels agree where a title-only judge cannot tell two pairs apart: the same query
    with two products of the same title (and, looser, of the same title up to its first " in " / " with ": colour,
    finish, size), one seeded pair of products per such group, Cohen's kappa between their labels. A judge that reads
    (query, title) gives both the same label, so its agreement with these labels is bounded by theirs."""
    rows = [json.loads(line) for line in gzip.open(pool, "rt", encoding="utf-8")]

    def norm(text: str) -> str:
        return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()

    keys = {"same title": norm, "same title up to in/with": lambda t: re.sub(r"\b(in|with)\b.*$", "", norm(t)).strip()}
    out = []
    for name, key in keys.items():
        groups: dict[tuple[str, str], list[dict]] = {}
        for row in rows:
            groups.setdefault((row["query"].lower().strip(), key(row["item_title"])), []).append(row)
        rng = random.Random(seed)
        a, b = [], []
        for rs in groups.values():
            if len({r["item_id"] for r in rs}) >= 2:
                x, y = rng.sample([r for r in {r["item_id"]: r for r in rs}.values()], 2)
                a.append(str(x["label"]))
                b.append(str(y["label"]))
        m = classification_metrics(a, b, ["1", "2", "3"])
        out.append({"key": name, "groups": len(a), "kappa": m["kappa"], "weighted_kappa": m["weighted_kappa"],
                    "agreement": m["accuracy"], "labels": {g: a.count(g) + b.count(g) for g in ("1", "2", "3")}})
    return out


def ceiling(pool: Path, rhos=(0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8), reps: int = CEILING_DRAWS,
            per_level: int = 333, seed: int = 42) -> list[dict]:
    """What the balanced three-level protocol gives a judge whose score correlates rho with the raters' mean: a
    simulated score rho * z + sqrt(1 - rho^2) * noise (z: the normal scores of the raters' means over the whole pool,
    a Gaussian copula), its RMSE against the means after a least-squares line on the natural mix (the competition's
    measure), and Cohen's kappa on `per_level` test pairs a level after the product's own threshold search
    (`best_thresholds`, by kappa) on as many dev pairs; median and 5-95% range over `reps` draws. It maps a kappa
    goal to the RMSE a judge would need, to set beside what the competition's entries reached."""
    import numpy as np
    from scipy.stats import norm, rankdata

    from hiera_dspy.methods.cross import best_thresholds, cut, objective

    rows = [json.loads(line) for line in gzip.open(pool, "rt", encoding="utf-8")]
    mean = np.array([r["relevance"] for r in rows], dtype=float)
    grade = np.array([r["label"] for r in rows]) - 1
    z = norm.ppf((rankdata(mean) - 0.5) / len(mean))
    rng, score, out = np.random.default_rng(seed), objective("kappa"), []
    for rho in rhos:
        kappas, rmses = [], []
        for _ in range(reps):
            s = rho * z + np.sqrt(1 - rho ** 2) * rng.standard_normal(len(z))
            line = np.polyfit(s, mean, 1)
            rmses.append(float(np.sqrt(np.mean((np.polyval(line, s) - mean) ** 2))))
            picks = [rng.choice(np.flatnonzero(grade == g), 2 * per_level, replace=False) for g in range(3)]
            dev, test = (np.concatenate([p[i * per_level:(i + 1) * per_level] for p in picks]) for i in (0, 1))
            values = 2 * norm.cdf(s)  # the expected-grade scale (0-2) the threshold grid is on
            _, thresholds = best_thresholds(grade[dev], values[dev], 3, score)
            kappas.append(score(grade[test], cut(values[test], thresholds), 3))
        out.append({"rho": rho, "rmse": float(np.median(rmses)), "kappa": float(np.median(kappas)),
                    "kappa_5_95": [float(np.percentile(kappas, 5)), float(np.percentile(kappas, 95))]})
    return out


def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", type=Path, default=POOL)
    ap.add_argument("--work", type=Path, default=Path("/tmp/graded"))
    ap.add_argument("--only", choices=("fit", "table"))
    ap.add_argument("--refit", default="", help="comma-separated rows to fit again")
    ap.add_argument("--per-level", type=int, default=333)
    ap.add_argument("--ce-pairs", type=int, default=30000)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--ce-epochs", type=int, default=1)
    ap.add_argument("--dev-queries", type=int, default=400)
    args = ap.parse_args(argv)
    args.refit = set(filter(None, args.refit.split(",")))
    args.work.mkdir(parents=True, exist_ok=True)
    dataset = load_dataset(f"homedepot:{write_train_csv(args.pool, args.work / 'homedepot')}")
    if args.only != "table":
        stage_fit(dataset, args.work, args)
    if args.only != "fit":
        stage_table(dataset, args.work, args)


if __name__ == "__main__":
    main()
