"""The learned judges on TREC Deep Learning 2020 passages: query-grouped cross-validation, and hole filling.

    python -m bench.trecdl --data DL20 --work /tmp/trecdl                 # every stage not cached, then the tables
    python -m bench.trecdl --data DL20 --work /tmp/trecdl --only table    # the tables from the cached folds
    python -m bench.trecdl --data FOLDER --work W --folds 2 ...           # another TREC folder (topics.tsv,
                                                                          # qrels.txt, corpus.jsonl[.gz])

Data: `--data DL20`, a TREC folder you hold (not shipped: MS MARCO's terms are research use): the 54 judged queries
of the TREC DL 2020 passage task, their 11,386 NIST judgments (0-3, the `trec` scheme) and the judged passages' text, read with the
library's TREC readers. Nothing of it is bundled or read by the library or its tests.

**Cross-validation** (`cv`): the queries are split into `--folds` folds (seeded); for each fold the judges learn from
the other folds' queries and score the fold's pairs, so every pair is scored by a model that never saw its query:
- embed-lr, the product's defaults (lexical + MiniLM cosines, logistic regression, the most probable grade);
- ce-blend's two parts: the trees scorer on lexical and query features (no MiniLM pass: a new passage is not
  embedded; no item prior where the median item is judged for one query, `item_prior_choice`) and the cross-encoder
  fine-tuned at the token budget `pair_lengths.choose_max_len` picks from the train pairs' lengths, in
  length-bucketed batches, scored on the ONNX path its int8 check allows.
ce-blend's weight and three thresholds for a fold are chosen (`cross.choose_blend`, Cohen's kappa) on the
out-of-fold predictions of the other folds, all their pairs at their natural grade mix (each of those predictions
from a model that never saw its query; those models did learn from the fold being scored, never from its scores).

**Tables** (`table`): Cohen's kappa on the four grades, kappa binary (grade >= 2, the track's rule), Krippendorff's
alpha (ordinal, the `krippendorff` package) and quadratic-weighted kappa, each with a 95% bootstrap CI over queries
(1,000 resamples); the predicted grade distribution against the truth; ms a pair (the fold's scoring wall time over
its pairs, batched: features, MiniLM where the judge reads it, the cross-encoder) and fit time; kappa per pair length
(tokens of query + passage) for ce-blend.

**Hole filling** (`holes`): runs built over each query's judged passages (BM25 variants, MiniLM dense, the
cross-encoder and the scorers out of fold, fusion, random and length orders); the sparse qrels are the NIST
judgments of a shallow lexical pool (top `--pool-depth` of the four BM25-like runs); the holes of every run's top 10
are filled by ce-blend out of fold (no query judges itself). Kendall's tau of the nDCG@10 system ranking against
the full NIST qrels, before and after filling, and with qrels judged entirely by the machine (every top-10 pair),
through the library's retrieval evaluation (`conclude.retrieval`: trec_eval's nDCG@10, pool holes, tau-b).

**LLM judges on a sample** (`--only llm`, never in the default run: the local model takes seconds a pair):
`--llm-sample` pairs of each grade written as a TREC folder, judged by `hiera-dspy run --method M --lm LM` for
zero-shot and thomas (`--llm-methods`, `--llm`; work/llm.md).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np

from hiera_dspy.benchmark.pool import pool_holes
from hiera_dspy.conclude.retrieval import evaluate, kendall_tau
from hiera_dspy.data.trec import RunLine, read_corpus, read_qrels, read_topics
from hiera_dspy.labels import LabelScheme, get_scheme
from hiera_dspy.methods.cross import blend_labels, choose_blend
from hiera_dspy.methods.grades import distributions, expected_grade
from hiera_dspy.metrics.numbers import number
from hiera_dspy.records import Pair
from hiera_dspy.signals.pair_lengths import choose_max_len, pair_lengths

SCHEME = get_scheme("trec")
LABELS = list(SCHEME.labels)
LENGTH_BUCKETS = (64, 128, 160, 100_000)
# judges whose grades come from the blend machinery: (scorer distributions, weights tried; None: the product's grid),
# the weight and thresholds chosen on the other folds' out-of-fold pairs
VARIANTS = {"ce-blend": ("scorer", None), "cross-encoder alone": ("scorer", (1.0,)),
            "trees scorer alone": ("scorer", (0.0,)), "embed-lr, thresholds out of fold": ("embed_lr", (0.0,)),
            "ce-blend with embed-lr as its scorer": ("embed_lr", None)}
POOL_RUNS = ("bm25", "bm25-first30w", "tf-overlap", "bm25-noisy")
# systems built on all-MiniLM-L6-v2's vectors, as the MiniLM judges are: a judge tends to favour its own kind, so the
# ranking is also compared without them
LATE_SUFFIX = {"weighted_kappa": "", "kappa": ".k"}  # late-lr's grade objective -> its per-fold file's suffix
LATE_NAMES = {"weighted_kappa": "late-lr", "kappa": "late-lr, grade_objective=kappa"}
MINILM_KIN = ("dense-minilm", "fusion-rrf", "embed-lr")


# ------------------------------------------------------------------------------------------------------------ data

def load_pairs(folder: Path, work: Path) -> list[Pair]:
    """Every judged (query, passage) of a TREC folder as a labelled Pair (a gzipped corpus is unpacked into work)."""
    corpus = folder / "corpus.jsonl"
    if not corpus.is_file():
        corpus = work / "corpus.jsonl"
        if not corpus.is_file():
            with gzip.open(folder / "corpus.jsonl.gz", "rb") as src, open(corpus, "wb") as dst:
                shutil.copyfileobj(src, dst)
    topics, docs = read_topics(folder / "topics.tsv"), read_corpus(corpus)
    qrels = read_qrels(folder / "qrels.txt", SCHEME)
    return [Pair(f"{q}:{d}", topics[q], docs[d].title, docs[d].text, LABELS[g], q, d)
            for (q, d), g in sorted(qrels.items())]


def fold_of(pairs: list[Pair], folds: int, seed: int) -> dict[str, int]:
    """query id -> its fold (the sorted queries in a seeded order, dealt round-robin)."""
    queries = sorted({p.query_id for p in pairs})
    random.Random(seed).shuffle(queries)
    return {q: i % folds for i, q in enumerate(queries)}


def item_prior_choice(pairs: list[Pair]) -> dict:
    """Whether an item prior can help: the median number of train queries judging an item (a prior needs >= 2)."""
    per_item = Counter(p.item_id for p in pairs)
    median = float(np.median(list(per_item.values())))
    return {"median_judgments_per_item": median, "items": len(per_item),
            "features": "query+prior" if median >= 2 else "query"}


# ------------------------------------------------------------------------------------------------------------ cv

def run_fold(f: int, pairs: list[Pair], folds: dict[str, int], args) -> dict:
    """Fit embed-lr, the trees scorer and the cross-encoder on the other folds; score fold f (cached)."""
    from transformers import AutoTokenizer

    from hiera_dspy.signals import RelevanceScorer
    from hiera_dspy.signals.cross_encoder import base_folder, fine_tune

    out = args.work / f"fold{f}.json"
    if out.is_file():
        return json.loads(out.read_text())
    train = [p for p in pairs if folds[p.query_id] != f]
    test = [p for p in pairs if folds[p.query_id] == f]
    triples = [(p.query, p.item_title, p.item_text) for p in test]
    row: dict = {"fold": f, "train_pairs": len(train), "test_pairs": len(test), "ids": [p.id for p in test]}

    start = time.perf_counter()
    embed_lr = RelevanceScorer(SCHEME, embedder=None if args.embedder == "lexical" else args.embedder).fit(train)
    row["embed_lr_fit_s"] = time.perf_counter() - start
    start = time.perf_counter()
    row["embed_lr"] = distributions(embed_lr.predict_proba_many(test), LABELS).tolist()
    row["embed_lr_score_s"] = time.perf_counter() - start

    prior = item_prior_choice(train)
    row["item_prior"] = prior
    start = time.perf_counter()
    scorer = RelevanceScorer(SCHEME, embedder=None, model="hgb", features=prior["features"],
                             class_weight="balanced").fit(train)
    row["scorer_fit_s"] = time.perf_counter() - start
    start = time.perf_counter()
    row["scorer"] = distributions(scorer.predict_proba_many(test), LABELS).tolist()
    row["scorer_score_s"] = time.perf_counter() - start

    tokenizer = AutoTokenizer.from_pretrained(base_folder())
    budget = choose_max_len(train, tokenizer) if args.max_len == "auto" else {"max_len": int(args.max_len)}
    row["budget"] = budget
    start = time.perf_counter()
    encoder = fine_tune(train, SCHEME, train_pairs=args.ce_pairs, max_len=budget["max_len"], epochs=args.epochs,
                        seed=args.seed, bucketed=True, progress=args.progress)
    row["ce_fit_s"] = time.perf_counter() - start
    if args.accelerate:
        check = random.Random(args.seed).sample(train, min(300, len(train)))
        manifest = encoder.accelerate([(p.query, p.item_title, p.item_text) for p in check])
        if manifest is not None:
            encoder.use_path(manifest["use"], encoder.max_len)
            row["ce_path"] = manifest["use"]
    row["ce_fit_s"] = time.perf_counter() - start
    start = time.perf_counter()
    row["ce"] = encoder.grade_probs(triples).tolist()
    row["ce_score_s"] = time.perf_counter() - start
    out.write_text(json.dumps(row))
    return row


def run_late_fold(f: int, pairs: list[Pair], folds: dict[str, int], args, objective: str = "weighted_kappa") -> dict:
    """late-lr, the product's method (`methods/late.py`): compiled on the other folds, judging fold f (cached in
    work/late{f}.json). Its train features are read from a table of every pair's late-interaction features computed
    once (work/late_features.npy: the same numbers `late_features` gives, computed in one pass, not once a fold); the
    fold's own pairs are scored from scratch (a fresh encoder session, no cache), which is what `ms a pair` times."""
    from hiera_dspy.signals import late_interaction

    out = args.work / f"late{f}{LATE_SUFFIX[objective]}.json"
    if out.is_file():
        return json.loads(out.read_text())
    table_of = late_table(pairs, args.work)
    train = [p for p in pairs if folds[p.query_id] != f]
    test = [p for p in pairs if folds[p.query_id] == f]
    with late_from_table(table_of):
        start = time.perf_counter()
        program = compiled_late(train, seed=args.seed, grade_objective=objective)
        fit_s = time.perf_counter() - start
    late_interaction.late_interaction.cache_clear()
    start = time.perf_counter()
    grades = late_grades(program, test)
    score_s = time.perf_counter() - start
    row = {"fold": f, "ids": [p.id for p in test], "late_lr": grades,
           "late_lr_fit_s": fit_s, "late_lr_score_s": score_s, "grading": program.grading}
    out.write_text(json.dumps(row))
    return row


def compiled_late(train: list[Pair], scheme: LabelScheme = SCHEME, **config):
    """late-lr compiled on `train` (labels of `scheme`) with `config` (its threshold folds: 5, or the train queries
    if fewer)."""
    from hiera_dspy.methods import BuildContext, build

    folds = min(5, len({p.query_id for p in train}))
    return build("late-lr", BuildContext(scheme, train=train), threshold_folds=folds, **config).prepare(train)


def late_grades(program, pairs: list[Pair]) -> list[int]:
    """The grade codes (indices of the judge's scheme's labels) `program` gives `pairs`, scored in one batch first
    (`prefetch`), as `hiera-dspy run` does."""
    labels = list(program.scheme.labels)
    program.prefetch(pairs)
    return [labels.index(program(query=p.query, item_title=p.item_title, item_text=p.item_text).label) for p in pairs]


@contextlib.contextmanager
def late_from_table(table_of: dict[tuple[str, str, str], np.ndarray]):
    """Inside: every late-interaction feature block reads `late_table`'s rows instead of running the encoder."""
    from hiera_dspy.signals import feature_sets

    real = feature_sets._late
    feature_sets._late = lambda triples: np.array([table_of[t] for t in triples])
    try:
        yield
    finally:
        feature_sets._late = real


def late_table(pairs: list[Pair], work: Path) -> dict[tuple[str, str, str], np.ndarray]:
    """(query, title, text) in the scorer's canonical item form -> its LATE_COLUMNS, computed once into work (again
    when the table there has other columns)."""
    from hiera_dspy.signals.item_form import canonical_triples
    from hiera_dspy.signals.late_interaction import LATE_COLUMNS, late_features

    triples = canonical_triples([(p.query, p.item_title, p.item_text) for p in pairs], True)
    path = work / "late_features.npy"
    if not path.is_file() or np.load(path).shape != (len(triples), len(LATE_COLUMNS)):
        np.save(path, late_features(triples))
    return dict(zip(triples, np.load(path)))


# ------------------------------------------------------------------------------------------------------------ measures

def agreement(gold: np.ndarray, pred: np.ndarray, scheme: LabelScheme = SCHEME) -> dict:
    """kappa on the scheme's grades (TREC: 4), kappa binary at its cut (`binary_from`, TREC: >= 2), Krippendorff's
    alpha (ordinal), quadratic kappa of grade codes (a two-grade scheme: the three kappas are one)."""
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    grades, cut = len(scheme.labels), scheme.binary_from
    binary = cohen_kappa_score(gold >= cut, pred >= cut)
    alpha = krippendorff.alpha(reliability_data=np.vstack([gold, pred]).astype(float),
                               level_of_measurement="ordinal", value_domain=list(range(grades)))
    return {"kappa": float(cohen_kappa_score(gold, pred, labels=range(grades))), "kappa_binary": float(binary),
            "alpha": float(alpha), "weighted_kappa": float(cohen_kappa_score(gold, pred, weights="quadratic"))}


def with_query_ci(gold: np.ndarray, pred: np.ndarray, queries: np.ndarray, n: int = 1000, seed: int = 42) -> dict:
    """`agreement` and its 95% percentile bootstrap CI, resampling whole queries."""
    point = agreement(gold, pred)
    names = sorted(set(queries.tolist()))
    members = [np.flatnonzero(queries == q) for q in names]
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(n):
        idx = np.concatenate([members[i] for i in rng.integers(0, len(names), len(names))])
        for k, v in agreement(gold[idx], pred[idx]).items():
            if np.isfinite(v):
                draws[k].append(v)
    return {k: {"value": v, "ci": [float(np.percentile(draws[k], 2.5)), float(np.percentile(draws[k], 97.5))]}
            for k, v in point.items()}


def shares(codes: np.ndarray) -> list[float]:
    """The share of each grade, 0 .. 3."""
    return (np.bincount(codes, minlength=len(LABELS)) / max(1, len(codes))).tolist()


# ------------------------------------------------------------------------------------------------------------ table

def predictions(rows: list[dict], pairs: list[Pair]) -> dict:
    """Out-of-fold grade codes of every judge for every pair, and ce-blend's per-fold blends."""
    by_id = {p.id: p for p in pairs}
    ids = [i for r in rows for i in r["ids"]]
    fold = np.array([r["fold"] for r in rows for _ in r["ids"]])
    gold = np.array([LABELS.index(by_id[i].label) for i in ids])
    dists = {k: np.array([d for r in rows for d in r[k]]) for k in ("embed_lr", "scorer", "ce")}
    out = {"ids": ids, "gold": gold, "fold": fold, "embed-lr": dists["embed_lr"].argmax(axis=1), "blends": []}
    for name, (scorer, w_grid) in VARIANTS.items():
        codes = np.zeros(len(ids), dtype=int)
        for r in rows:
            mine, rest = fold == r["fold"], fold != r["fold"]
            kw = {} if w_grid is None else {"weights": w_grid}
            value, w, cuts = choose_blend([LABELS[g] for g in gold[rest]], dists[scorer][rest], dists["ce"][rest],
                                          LABELS, **kw)
            labels = blend_labels(dists[scorer][mine], dists["ce"][mine], w, cuts, LABELS)
            codes[mine] = [LABELS.index(x) for x in labels]
            if name == "ce-blend":
                out["blends"].append({"fold": r["fold"], "weight": w, "thresholds": list(cuts), "oof_kappa": value})
        out[name] = codes
    for name in LATE_NAMES.values():
        late = {i: g for r in rows for i, g in zip(r.get("late", {}).get(name, {}).get("ids", ()),
                                                    r.get("late", {}).get(name, {}).get("late_lr", ()))}
        if len(late) == len(ids):
            out[name] = np.array([late[i] for i in ids])
    out["ce_expected"] = expected_grade(dists["ce"])
    out["scorer_expected"] = expected_grade(dists["scorer"])
    out["embed_lr_expected"] = expected_grade(dists["embed_lr"])
    return out


def table(rows: list[dict], pairs: list[Pair], args) -> dict:
    """The agreement table, grade shares, speed and kappa per length bucket (written to work/trecdl.{json,md})."""
    from transformers import AutoTokenizer

    from hiera_dspy.signals.cross_encoder import base_folder

    pred = predictions(rows, pairs)
    by_id = {p.id: p for p in pairs}
    queries = np.array([by_id[i].query_id for i in pred["ids"]])
    n = len(pred["ids"])
    speed = {"embed-lr": (sum(r["embed_lr_score_s"] for r in rows), sum(r["embed_lr_fit_s"] for r in rows)),
             "ce-blend": (sum(r["scorer_score_s"] + r["ce_score_s"] for r in rows),
                          sum(r["scorer_fit_s"] + r["ce_fit_s"] for r in rows))}
    speed["cross-encoder alone"] = (sum(r["ce_score_s"] for r in rows), sum(r["ce_fit_s"] for r in rows))
    speed["trees scorer alone"] = (sum(r["scorer_score_s"] for r in rows), sum(r["scorer_fit_s"] for r in rows))
    speed["embed-lr, thresholds out of fold"] = speed["embed-lr"]
    speed["ce-blend with embed-lr as its scorer"] = (
        sum(r["embed_lr_score_s"] + r["ce_score_s"] for r in rows), sum(r["embed_lr_fit_s"] + r["ce_fit_s"] for r in rows))
    result = {"pairs": n, "queries": len(set(queries.tolist())), "folds": len(rows), "truth_shares":
              shares(pred["gold"]), "judges": [], "blends": pred["blends"], "budgets": [r["budget"] for r in rows],
              "item_prior": [r["item_prior"] for r in rows], "ce_paths": [r.get("ce_path") for r in rows],
              "embed_lr_ms_fold0": 1000 * rows[0]["embed_lr_score_s"] / rows[0]["test_pairs"]}
    lates = [name for name in LATE_NAMES.values() if name in pred]
    for name in lates:
        speed[name] = (sum(r["late"][name]["late_lr_score_s"] for r in rows),
                       sum(r["late"][name]["late_lr_fit_s"] for r in rows))
    for name in ("embed-lr", *VARIANTS, *lates):
        score_s, fit_s = speed[name]
        result["judges"].append({"name": name, **with_query_ci(pred["gold"], pred[name], queries, args.resamples),
                                 "shares": shares(pred[name]), "ms_a_pair": 1000 * score_s / n,
                                 "fit_s_per_fold": fit_s / len(rows)})
    if (args.work / "late_features.npy").is_file():  # each late-interaction feature against the NIST grade
        from scipy.stats import spearmanr

        from hiera_dspy.signals.item_form import canonical_triples
        from hiera_dspy.signals.late_interaction import LATE_COLUMNS

        table_of = late_table(pairs, args.work)
        x = np.array([table_of[t] for t in canonical_triples([(p.query, p.item_title, p.item_text) for p in pairs])])
        y = np.array([LABELS.index(p.label) for p in pairs])
        result["late_spearman"] = {name: float(spearmanr(x[:, j], y).correlation)
                                   for j, name in enumerate(LATE_COLUMNS)}
    tokenizer = AutoTokenizer.from_pretrained(base_folder())
    lengths = pair_lengths([by_id[i] for i in pred["ids"]], tokenizer)
    result["by_length"] = []
    low = 0
    for high in LENGTH_BUCKETS:
        mask = (lengths > low) & (lengths <= high)
        if mask.sum() > 1:
            result["by_length"].append({"tokens": f"{low + 1}-{high}" if high < 100_000 else f"> {low}",
                                        "pairs": int(mask.sum()),
                                        **{k: v for k, v in agreement(pred["gold"][mask], pred["ce-blend"][mask])
                                           .items() if k in ("kappa", "alpha")}})
        low = high
    (args.work / "predictions.json").write_text(json.dumps(
        {"ids": pred["ids"], **{k: np.asarray(pred[k]).tolist() for k in
                                ("gold", "fold", "ce-blend", "ce_expected", "scorer_expected", "embed_lr_expected")},
         "labels": {name: np.asarray(pred[name]).tolist() for name in (*VARIANTS, *LATE_NAMES.values())
                    if name in pred}}))
    (args.work / "trecdl.json").write_text(json.dumps(result, indent=1))
    (args.work / "trecdl.md").write_text(table_markdown(result, args))
    return result


def cell(m: dict) -> str:
    """value [low, high]"""
    return f"{m['value']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]"


def table_markdown(r: dict, args) -> str:
    """The table as Markdown."""
    share = " / ".join(f"{100 * s:.1f}" for s in r["truth_shares"])
    lines = [(f"TREC DL 2020 passages: {r['pairs']:,} judged pairs of {r['queries']} queries, {r['folds']}-fold "
              f"cross-validation grouped by query (seed {args.seed}); truth grade shares 0/1/2/3 (%): {share}."), "",
             ("| judge | kappa (4 grades) [95% CI] | kappa binary (>= 2) | Krippendorff alpha (ordinal) | "
              "quadratic kappa | predicted grades 0/1/2/3 (%) | ms a pair | fit s a fold |"),
             "|---|---|---|---|---|---|---|---|"]
    for j in r["judges"]:
        grades = " / ".join(f"{100 * s:.1f}" for s in j["shares"])
        lines.append(f"| {j['name']} | {cell(j['kappa'])} | {cell(j['kappa_binary'])} | {cell(j['alpha'])} | "
                     f"{cell(j['weighted_kappa'])} | {grades} | {j['ms_a_pair']:.1f} | {j['fit_s_per_fold']:.0f} |")
    lines += ["", "ce-blend per fold (weight, thresholds on the expected grade, kappa on the other folds' "
              "out-of-fold pairs): " + "; ".join(
                  f"{b['fold']}: w {b['weight']:.1f}, " + ", ".join(f"{t:.2f}" for t in b["thresholds"])
                  + f" ({b['oof_kappa']:.3f})" for b in r["blends"]), "",
              "Token budget per fold: " + "; ".join(
                  f"{b['max_len']} ({100 * b.get('truncated', 0):.1f}% of the pairs cut)" for b in r["budgets"])
              + f"; cross-encoder path: {', '.join(str(p) for p in r['ce_paths'])}.",
              "Item prior: median judgments per passage " + ", ".join(
                  f"{p['median_judgments_per_item']:.0f}" for p in r["item_prior"]) + f" -> features "
              f"{r['item_prior'][0]['features']}.", "",
              "| pair length (tokens) | pairs | ce-blend kappa | alpha |", "|---|---|---|---|"]
    if "late_spearman" in r:
        lines[-3:-3] = ["Late interaction against the NIST grade, every pair (Spearman): " + ", ".join(
            f"{name} {value:.3f}" for name, value in r["late_spearman"].items()) + ".", ""]
    lines += [f"| {b['tokens']} | {b['pairs']} | {b['kappa']:.3f} | {b['alpha']:.3f} |" for b in r["by_length"]]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------------ holes

def lexical_scores(pairs: list[Pair], by_query: dict[str, list[Pair]], index: dict[str, int],
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The lexical systems' scores of every pair (`POOL_RUNS`: BM25 over the passage and over its first 30 words,
    query-term overlap, BM25 blurred by `rng`'s noise); a passage is its title and text (TREC's have no title), and a
    query of stop words only scores 0."""
    import bm25s

    texts = ["\n".join(filter(None, (p.item_title, p.item_text))) for p in pairs]
    first30 = [" ".join(t.split()[:30]) for t in texts]
    scores: dict[str, np.ndarray] = {}
    for name, docs in (("bm25", texts), ("bm25-first30w", first30)):
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
        scores[name] = np.zeros(len(pairs))
        for q, members in by_query.items():
            tokens = bm25s.tokenize([members[0].query], stopwords="en", show_progress=False, return_ids=False)[0]
            if not tokens:  # a query of stop words only ("for all"): BM25 scores it 0 everywhere
                continue
            all_scores = retriever.get_scores(tokens)
            for p in members:
                scores[name][index[p.id]] = all_scores[index[p.id]]
    scores["tf-overlap"] = np.array([len(set(p.query.lower().split()) & set(t.lower().split()))
                                     for p, t in zip(pairs, texts)], dtype=float)
    scores["bm25-noisy"] = scores["bm25"] * rng.lognormal(0, 0.6, len(pairs))
    return scores


def build_runs(pairs: list[Pair], pred: dict, embedder: str, seed: int) -> dict[str, list[RunLine]]:
    """Systems over each query's judged passages, of different strength (see the module doc)."""
    by_query: dict[str, list[Pair]] = {}
    for p in pairs:
        by_query.setdefault(p.query_id, []).append(p)
    index = {p.id: i for i, p in enumerate(pairs)}
    oof = {name: dict(zip(pred["ids"], pred[key])) for name, key in
           (("cross-encoder", "ce_expected"), ("trees-scorer", "scorer_expected"), ("embed-lr", "embed_lr_expected"))}
    texts = [p.item_text for p in pairs]
    rng = np.random.default_rng(seed)
    scores = lexical_scores(pairs, by_query, index, rng)
    if embedder != "lexical":
        from hiera_dspy.signals.features import item_document, resolve_embedder

        model = resolve_embedder(embedder)
        queries = sorted({p.query for p in pairs})
        qv = dict(zip(queries, model.encode(queries)))
        dv = model.encode([item_document(p.item_title, p.item_text) for p in pairs])  # as the scorer embeds them
        scores["dense-minilm"] = np.array([float(qv[p.query] @ dv[i]) for i, p in enumerate(pairs)])
    for name, values in oof.items():
        scores[name] = np.array([values[p.id] for p in pairs])
    ranks = {name: np.argsort(np.argsort(-v)) for name, v in scores.items() if name in ("bm25", "dense-minilm")}
    if ranks:
        scores["fusion-rrf"] = sum(1.0 / (60 + r) for r in ranks.values())
    scores["random"] = rng.random(len(pairs))
    scores["longest-first"] = np.array([len(t) for t in texts], dtype=float)
    return as_runs(scores, by_query, index)


def as_runs(scores: dict[str, np.ndarray], by_query: dict[str, list[Pair]], index: dict[str, int]
            ) -> dict[str, list[RunLine]]:
    """Each system's run: every query's pairs ranked by its score (ties by passage id)."""
    runs = {}
    for name, values in scores.items():
        lines = []
        for q, members in by_query.items():
            order = sorted(members, key=lambda p: (-values[index[p.id]], p.item_id))
            lines += [RunLine(q, p.item_id, r + 1, float(values[index[p.id]]), name, 0) for r, p in enumerate(order)]
        runs[name] = lines
    return runs


def holes(pairs: list[Pair], args) -> dict:
    """Tau of the nDCG@10 system ranking: sparse pool, filled, fully machine-judged (work/holes.{json,md})."""
    pred = json.loads((args.work / "predictions.json").read_text())
    runs = build_runs(pairs, pred, args.embedder, args.seed)
    full = {(p.query_id, p.item_id): LABELS.index(p.label) for p in pairs}
    machine_of = {(i.split(":", 1)[0], i.split(":", 1)[1]): int(g) for i, g in zip(pred["ids"],
                                                                               pred["labels"][args.filler])}
    pool = {k for name in POOL_RUNS if name in runs for q, ls in group(runs[name]).items()
            for k in ((q, rl.docid) for rl in ls[:args.pool_depth])}
    sparse = {k: full[k] for k in pool}
    hole_keys = pool_holes(runs, sparse, 10)
    filled = {**sparse, **{k: machine_of[k] for k in hole_keys}}
    top10 = {(q, rl.docid) for run in runs.values() for q, ls in group(run).items() for rl in ls[:10]}
    machine = {k: machine_of[k] for k in top10}
    qrels = {"full": full, "sparse": sparse, "filled": filled, "machine": machine}
    scores = {name: {k: evaluate(run, q, SCHEME, 10) for k, q in qrels.items()} for name, run in runs.items()}
    truth = [scores[n]["full"]["ndcg@10"] for n in runs]
    result = {"runs": {n: {k: s[k]["ndcg@10"] for k in qrels} for n, s in scores.items()}, "pool_depth":
              args.pool_depth, "pool_pairs": len(sparse), "holes": len(hole_keys), "top10_pairs": len(top10)}
    for k in ("sparse", "filled", "machine"):
        values = [scores[n][k]["ndcg@10"] for n in runs]
        result[f"tau_{k}"] = kendall_tau(truth, values)
        result[f"tau_p10_{k}"] = kendall_tau([scores[n]["full"]["p@10"] for n in runs],
                                             [scores[n][k]["p@10"] for n in runs])
        result[f"mae_{k}"] = float(np.mean(np.abs(np.array(truth) - np.array(values))))
    others = [n for n in runs if n not in MINILM_KIN]  # systems that do not share the judge's MiniLM vectors
    for k in ("sparse", "filled", "machine"):
        result[f"tau_{k}_without_kin"] = kendall_tau([scores[n]["full"]["ndcg@10"] for n in others],
                                                     [scores[n][k]["ndcg@10"] for n in others])
    result["without_kin"] = others
    gold = np.array([full[k] for k in hole_keys])
    judged = np.array([machine_of[k] for k in hole_keys])
    result["holes_agreement"] = agreement(gold, judged) if len(hole_keys) > 1 else {}
    result["filler"] = args.filler
    stem = "holes" if args.filler == "late-lr" else "holes-" + args.filler.split(",")[0].replace(" ", "-")
    (args.work / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (args.work / f"{stem}.md").write_text(holes_markdown(result))
    print(holes_markdown(result))
    return result


def group(run: list[RunLine]) -> dict[str, list[RunLine]]:
    """qid -> its lines in rank order."""
    out: dict[str, list[RunLine]] = {}
    for rl in run:
        out.setdefault(rl.qid, []).append(rl)
    return out


def holes_markdown(r: dict) -> str:
    """The hole-filling table as Markdown."""
    a = r["holes_agreement"]
    lines = [(f"{len(r['runs'])} systems over the judged passages; sparse qrels: the NIST judgments of the top "
              f"{r['pool_depth']} of {', '.join(POOL_RUNS)} ({r['pool_pairs']:,} pairs); {r['holes']:,} holes in the "
              f"systems' top 10, filled by {r['filler']} out of fold; {r['top10_pairs']:,} top-10 pairs in all."), "",
             "| qrels | Kendall tau nDCG@10 vs full NIST | tau P@10 | mean abs nDCG@10 error |", "|---|---|---|---|"]
    for k, name in (("sparse", "shallow lexical pool (holes count as not relevant)"),
                    ("filled", f"pool + holes filled by {r['filler']}"),
                    ("machine", f"every top-10 pair by {r['filler']} only")):
        lines.append(f"| {name} | {number(r[f'tau_{k}'])} | {number(r[f'tau_p10_{k}'])} | {number(r[f'mae_{k}'])} |")
    if "without_kin" in r:
        lines += ["", (f"Without the systems built on MiniLM's vectors ({', '.join(MINILM_KIN)}; {len(r['without_kin'])} "
                       f"systems left), Kendall tau nDCG@10: pool {number(r['tau_sparse_without_kin'])}, filled "
                       f"{number(r['tau_filled_without_kin'])}, machine only {number(r['tau_machine_without_kin'])}.")]
    if a:
        lines += ["", (f"{r['filler']} on the {r['holes']:,} holes: kappa {a['kappa']:.3f} (4 grades), "
                       f"{a['kappa_binary']:.3f} (binary), alpha {a['alpha']:.3f}.")]
    lines += ["", "| system | nDCG@10 full | sparse | filled | machine |", "|---|---|---|---|---|"]
    for name, s in sorted(r["runs"].items(), key=lambda kv: -kv[1]["full"]):
        lines.append(f"| {name} | " + " | ".join(f"{s[k]:.3f}" for k in ("full", "sparse", "filled", "machine"))
                     + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------------ llm

def llm_sample(pairs: list[Pair], args) -> str:
    """The LLM judges on a sample: `--llm-sample` pairs of each grade (seeded), written as a TREC folder into work,
    judged by the product's own `hiera-dspy run --method M --lm LM` for each of `--llm-methods` (work/llm-M/)."""
    from hiera_dspy.cli import main as console

    rng = random.Random(args.seed)
    chosen = [p for g in LABELS for p in rng.sample([p for p in pairs if p.label == g], args.llm_sample)]
    folder = args.work / "llm-sample"
    folder.mkdir(exist_ok=True)
    (folder / "topics.tsv").write_text("".join(sorted({f"{p.query_id}\t{p.query}\n" for p in chosen})))
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": p.item_id, "text": p.item_text}) + "\n"
                                                 for p in chosen))
    (folder / "qrels.txt").write_text("".join(f"{p.query_id} 0 {p.item_id} {LABELS.index(p.label)}\n"
                                              for p in chosen))
    lines = [f"{len(chosen)} pairs ({args.llm_sample} of each grade, seed {args.seed}), LM {args.llm}, no knowledge; "
             "`hiera-dspy run` on the sample's TREC folder.", "",
             "| method | kappa (4 grades) | binary kappa (>= 2) | alpha | predicted grades 0/1/2/3 | errors | s a pair |",
             "|---|---|---|---|---|---|---|"]
    for method in args.llm_methods.split(","):
        out = args.work / f"llm-{method}"
        console.main(["run", "--dataset", f"trec:{folder}", "--split", "all", "--method", method, "--lm", args.llm,
                      "--knowledge", "none", "--out", str(out)])
        m = json.loads((out / "metrics.json").read_text())
        predicted = " / ".join(str(int(sum(row[j] for row in m["confusion"]))) for j in range(len(LABELS)))
        lines.append(f"| {method} | {number(m['kappa'])} | {number(m['binary_kappa'])} | "
                     f"{number(m['krippendorff_alpha'])} | {predicted} | {m['errors']} | "
                     f"{number(m['wall_ms_per_pair'] / 1000, '.1f')} |")
    text = "\n".join(lines) + "\n"
    (args.work / "llm.md").write_text(text)
    return text


# ------------------------------------------------------------------------------------------------------------ main

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True,
                   help="a TREC folder: topics.tsv, qrels.txt, corpus.jsonl[.gz] (e.g. TREC DL 2020 passages)")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--only", choices=("cv", "table", "holes", "llm"), default=None,
                   help="one stage (llm: only when asked, never in the default run)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-len", default="auto", help="the cross-encoder's token budget: auto (from the lengths) or N")
    p.add_argument("--ce-pairs", type=int, default=12000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--embedder", default="auto", help="embed-lr's and the dense run's embedder (lexical: none)")
    p.add_argument("--no-accelerate", dest="accelerate", action="store_false", help="score with torch, no ONNX")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--pool-depth", type=int, default=5)
    p.add_argument("--filler", default="late-lr", choices=[*VARIANTS, *LATE_NAMES.values()],
                   help="holes: the judge filling them")
    p.add_argument("--judges", default="ce,late", help="cv: ce (embed-lr, the trees scorer, the cross-encoder and "
                   "their blends), late (late-lr, its default grade_objective=weighted_kappa), late-k (late-lr with "
                   "grade_objective=kappa)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--llm", default="local", help="llm: the LM of the sampled LLM judges (any dspy.LM string)")
    p.add_argument("--llm-methods", default="zero-shot,thomas", help="llm: the methods judged on the sample")
    p.add_argument("--llm-sample", type=int, default=5, help="llm: pairs of each grade")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--fold-list", default=None, help="cv: only these folds, e.g. 0,2,4 (to run folds side by side)")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    pairs = load_pairs(args.data, args.work)
    folds = fold_of(pairs, args.folds, args.seed)
    if args.only in (None, "cv"):
        todo = range(args.folds) if args.fold_list is None else [int(f) for f in args.fold_list.split(",")]
        for f in todo:
            start = time.perf_counter()
            judges = set(args.judges.split(","))
            if "ce" in judges:
                run_fold(f, pairs, folds, args)
            if "late" in judges:
                run_late_fold(f, pairs, folds, args)
            if "late-k" in judges:
                run_late_fold(f, pairs, folds, args, "kappa")
            print(f"fold {f}: {time.perf_counter() - start:.0f} s", flush=True)
    if args.only in (None, "table"):
        rows = [json.loads((args.work / f"fold{f}.json").read_text()) for f in range(args.folds)]
        for row in rows:
            for objective, suffix in LATE_SUFFIX.items():
                late = args.work / f"late{row['fold']}{suffix}.json"
                if late.is_file():
                    row.setdefault("late", {})[LATE_NAMES[objective]] = json.loads(late.read_text())
        table(rows, pairs, args)
        print((args.work / "trecdl.md").read_text())
    if args.only in (None, "holes"):
        holes(pairs, args)
    if args.only == "llm":
        print(llm_sample(pairs, args))


if __name__ == "__main__":
    main()
