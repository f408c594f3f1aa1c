"""The feedback stage: holes judged with and without their query's known judgments, on TREC DL 2020 passages, MSRD
hole cases and Home Depot.

    python -m bench.feedback --data DL20 --work /tmp/feedback --seeds 0,1,2            # DL20: a TREC folder you hold
    python -m bench.feedback --dataset msrd --data hiera_dspy/data/msrd --work /tmp/feedback-msrd --seeds 0
    python -m bench.feedback --dataset homedepot --data HOMEDEPOT --work /tmp/feedback-hd --seeds 0

`--dataset` names the collection (`COLLECTIONS`): `trec` (the default), a TREC folder (topics.tsv, qrels.txt,
corpus.jsonl[.gz]: `bench.trecdl.load_pairs`), every judged pair; `msrd`, a folder with MSRD's judgments-pool.tsv.gz
and movies-corpus.jsonl.gz (the bundled hiera_dspy/data/msrd holds both), read by the library's pool reader
(`data.msrd_pool.read_pool`: the item text built from the catalog row as the bundled pairs are), binary;
`homedepot`, a folder with Home Depot's judgments-pool.jsonl.gz, written back as the competition's train.csv into the
work folder and read by the library's `homedepot` loader (product titles only), three grades. MSRD and Home Depot are sampled: `--queries` queries drawn with `--sample-seed` among those
with at least `--min-judged` judgments and `--min-relevant` relevant ones (at the scheme's binary cut); the caption
says which. Keep one work folder per collection and sample: the tables there are of its pairs.

For each seed the queries are dealt into `--folds` folds (`bench.trecdl.fold_of`). For each fold, late-lr is
compiled on the other folds as the product compiles it (its feedback stage learned there on simulated known
judgments, `methods/feedback.py`), and the fold's queries are the target collection. On the target, known judgments
are made by each of the collection's policies: a shallow pool (the union of the top `depth` of the four lexical runs
of `bench.trecdl.POOL_RUNS`, as `bench.trecdl`'s hole filling pools) or k random pairs a query; every other judged
pair of the query is a hole. The judge reads the known judgments (`read_known`, its log-prior shift fitted on them)
and judges the holes; "without feedback" is the same judge reading none (its labels are today's late-lr's), and the
bench checks that its labels are those of the same judge without its stage (the no-regression check).

The stage is told what each policy's known judgments are (`KIND`: a pool, or a random sample) and reads them with
the fold's holes as the pairs to judge, so it estimates the holes' grade shares (`methods/shares.py`) and, for a
sample, cuts at them; "today's cut" (`fixed`) is the same stage at its compiled thresholds, "no lean" (`plain`) cuts
at the estimated shares themselves. A second table gives, per policy, the holes' estimated share of relevant pairs
against the truth (mean |error| over folds, how often the interval covered it, what `auto` took the known for), and
each system's P@10 and nDCG@10 error against the oracle fill (every hole with its true grade: the full qrels), mean
|error| and mean signed error over the systems; a third, per pool, the holes' share of relevant pairs by every estimator
the stage reports (its own, recalibrated on the pool; EM under label shift; the judge's own mean; what the compiled
cut calls) and each boundary's share of grade >= k. `--policies 'pool 5,random 5'` measures only those policies;
`--target-keep-relevant SHARE` under-samples the target's relevant pairs as `--target-keep` under-samples its
lowest grade.

Reports, per policy: kappa on the holes (the scheme's grades, and binary at its cut: TREC grade >= 2, Home Depot
Partially relevant and up; MSRD is binary, its three kappas are one), Krippendorff's alpha (ordinal) and quadratic
kappa, without and with feedback (and with today's cut and with no lean), their mean over the seeds and on how many
seeds feedback did better; Kendall's tau of the nDCG@10 ranking of `SYSTEMS` (the lexical runs, MiniLM's sentence
cosine, late-lr's own out-of-fold score, random and longest-first) under the filled qrels (known + judged holes)
against the full qrels, and the mean |nDCG@10 error|; fit time (compile with the stage, the stage alone) and ms a
pair (prefetch + forward through the product's judge on the fold's holes, with and without known judgments, the
late-interaction features read from a table: the pass itself is timed by bench/trecdl.py). A second table gives the
same agreement on the holes in the retrieval systems' top 10 only (`top_holes`): the pairs a benchmark's pool leaves
among its runs' top 10, which is what `hiera-dspy holes` fills, with the share of them each variant calls relevant.

`--target-keep SHARE` shifts the target's grade shares (`shifted_out`): each target fold keeps only SHARE of its
lowest-grade pairs, while the judge is compiled on the other folds' full shares. It is the failure the stage's
calibration is for: a judge compiled on one collection meets another whose grade shares differ (DL 2023 has 45%
irrelevant pairs where a judge compiled on DL 2020, with 68%, calls 65% irrelevant). Its tables are kept apart
(`feedback-keep0.4.md`). `--target-degrade SHARE` makes the judge weaker on the target (`weakened`): a share of each
target query's pairs take another of those pairs' judge's view, as late-lr's ranking carries less on DL 2023 than on
DL 2020. Both together are DL 2023 as late-lr meets it: kappa about 0.12 alone, 60% of pairs called irrelevant.

    python -m bench.feedback --data DL20 --work /tmp/feedback --seeds 0 --target-keep 0.4 --target-degrade 0.5

The late-interaction features and the passages' sentence vectors come from one pass over every pair, kept in the
work folder (`late_features.npy`, `vectors.npz`), so a run costs the fits.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bench import trecdl
from bench.trecdl import agreement, fold_of, late_from_table, late_table, load_pairs
from hiera_dspy.conclude.retrieval import evaluate, kendall_tau
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.labels import LabelScheme, get_scheme
from hiera_dspy.records import Pair

MEASURES = ("kappa", "kappa_binary", "alpha", "weighted_kappa")
TEST_POLICIES = (("pool", 1), ("pool", 3), ("pool", 5), ("pool", 10), ("random", 2), ("random", 5), ("random", 10))
VARIANTS = ("base", "feedback", "fixed", "plain")  # without known judgments; with them, cut at the holes'
# estimated shares leaning as learned (`methods/shares.py`); with them, cut at the thresholds chosen at compile time
# (as until 2026-12-07); with them, cut at the estimated shares themselves (no lean)
KIND = {"pool": "pool", "random": "sample"}  # what each policy's known judgments are (--known-kind)
TIMED_POLICY = ("random", 5)
CONTROLS = ("random", "longest-first")  # systems of `systems` that rank nothing: their top 10 are not a pool's holes
TOP = 10  # the depth of the systems' runs whose unpooled pairs are a benchmark's holes (`top_holes`)


# ------------------------------------------------------------------------------------------------ collections

def msrd_pairs(folder: Path, work: Path) -> list[Pair]:
    """Every judgment of MSRD's judgments-pool.tsv.gz as a pair, through the library's pool reader (a judged movie
    missing from the catalog is skipped, as the `pool` split skips it)."""
    from hiera_dspy.data.msrd_pool import POOL_FILE, read_catalog_rows, read_pool
    from hiera_dspy.data.msrd_sample import CATALOG_FIELDS

    pairs, _ = read_pool(folder / POOL_FILE, read_catalog_rows(folder / "movies-corpus.jsonl.gz"),
                         get_scheme("msrd"), CATALOG_FIELDS)
    return pairs


def homedepot_pairs(folder: Path, work: Path) -> list[Pair]:
    """Every judgment of Home Depot's judgments-pool.jsonl.gz as a pair: written back as the competition's train.csv
    (work/homedepot/) and read by the library's `homedepot` loader, as a user's `--dataset homedepot:FOLDER` is."""
    from hiera_dspy.data import load_dataset

    out = work / "homedepot"
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "judgments-pool.jsonl.gz", "rt", encoding="utf-8") as fh, \
            open(out / "train.csv", "w", encoding="utf-8", newline="") as dst:
        writer = csv.writer(dst)
        writer.writerow(("id", "product_uid", "product_title", "search_term", "relevance"))
        for row in map(json.loads, fh):
            writer.writerow((str(row["id"]).removeprefix("homedepot:"), row["item_id"], row["item_title"],
                             row["query"], row["relevance"]))
    return list(load_dataset(f"homedepot:{out}").splits["all"])


@dataclass(frozen=True)
class Collection:
    """A collection the bench measures: its name in the caption, its scheme, its reader (data folder, work folder ->
    labelled pairs), its known-judgment policies, the policy `ms a pair` is timed with, and its default sample
    (`queries` None: every query)."""

    title: str
    scheme: str
    read: Callable[[Path, Path], list[Pair]]
    policies: tuple[tuple[str, int], ...]
    timed: tuple[str, int]
    queries: int | None = None
    min_judged: int = 1
    min_relevant: int = 0
    note: str = ""


COLLECTIONS = {
    "trec": Collection("TREC DL 2020", "trec", load_pairs, TEST_POLICIES, TIMED_POLICY),
    "msrd": Collection("MSRD", "msrd", msrd_pairs, (("pool", 1), ("pool", 3), ("random", 2), ("random", 5)),
                       ("random", 5), queries=400, min_judged=15, min_relevant=1,
                       note=" MSRD is binary: kappa, binary kappa and quadratic kappa are one measure."),
    "homedepot": Collection("Home Depot", "homedepot", homedepot_pairs, (("random", 1), ("random", 2)),
                            ("random", 2), queries=1000, min_judged=5,
                            note=" Home Depot has three grades; binary kappa counts Partially relevant and up."),
}


def sample_queries(pairs: list[Pair], scheme: LabelScheme, queries: int | None, min_judged: int, min_relevant: int,
                   seed: int) -> tuple[list[Pair], str]:
    """The pairs of `queries` queries drawn with `seed` among those with >= `min_judged` judgments and >=
    `min_relevant` relevant ones (every query when `queries` is None), and the caption's words for the sample."""
    if queries is None:
        return pairs, ""
    by_query: dict[str, list[Pair]] = {}
    for p in pairs:
        by_query.setdefault(p.query_id, []).append(p)
    eligible = sorted(q for q, members in by_query.items() if len(members) >= min_judged
                      and sum(scheme.is_relevant(p.label) for p in members) >= min_relevant)
    chosen = set(random.Random(seed).sample(eligible, min(queries, len(eligible))))
    relevant = f" and >= {min_relevant} relevant" if min_relevant else ""
    return ([p for p in pairs if p.query_id in chosen],
            f" ({len(chosen):,} queries drawn with seed {seed} among the {len(eligible):,} of {len(by_query):,} with "
            f">= {min_judged} judged{relevant})")


# ------------------------------------------------------------------------------------------------ tables

def vector_table(pairs: list[Pair], work: Path) -> dict[str, np.ndarray]:
    """Passage (the stage's `document` form) and query text -> its MiniLM sentence vector, computed once into work
    (read from the late-interaction pass's memory when `late_table` just made it)."""
    from hiera_dspy.methods.feedback import document
    from hiera_dspy.signals.feedback import minilm_vectors

    path = work / "vectors.npz"
    texts = sorted({document(p.item_title, p.item_text) for p in pairs} | {p.query for p in pairs})
    if path.is_file():
        saved = np.load(path)
        table = dict(zip(saved["docs"].tolist(), saved["vectors"]))
        if all(t in table for t in texts):
            return table
    vectors = minilm_vectors(texts)
    np.savez(path, docs=np.array(texts), vectors=vectors.astype(np.float32))
    return dict(zip(texts, vectors))


@contextlib.contextmanager
def vectors_from_table(table: dict[str, np.ndarray]):
    """Inside: the feedback stage's passage vectors are read from `vector_table`'s rows."""
    from hiera_dspy.signals import feedback

    real = feedback._vectors
    feedback._vectors = lambda kind, docs: np.array([table[d] for d in docs], dtype=float)
    try:
        yield
    finally:
        feedback._vectors = real


# ------------------------------------------------------------------------------------------------ target side

def pool_scores(pairs: list[Pair], seed: int) -> dict[str, np.ndarray]:
    """The lexical runs' scores of every pair (`bench.trecdl.lexical_scores`)."""
    by_query: dict[str, list[Pair]] = {}
    for p in pairs:
        by_query.setdefault(p.query_id, []).append(p)
    return trecdl.lexical_scores(pairs, by_query, {p.id: i for i, p in enumerate(pairs)},
                                 np.random.default_rng(seed))


def known_of(policy: tuple[str, int], members: list[int], lexical: dict[str, np.ndarray],
             rng: np.random.Generator) -> list[int]:
    """The judged pairs of one target query: the top `depth` of each lexical run, or k random ones."""
    name, k = policy
    if name == "pool":
        return sorted({members[i] for run in trecdl.POOL_RUNS
                       for i in np.argsort(-lexical[run][members], kind="stable")[:k]})
    return sorted(rng.choice(members, size=min(k, len(members)), replace=False).tolist())


def known_table(pairs: list[Pair], chosen: list[int], scheme: LabelScheme) -> Known:
    """The chosen pairs as known judgments (grades from their gold labels, their text given)."""
    return Known.of(scheme, [KnownJudgment(pairs[i].query_id, pairs[i].item_id, scheme.labels.index(pairs[i].label),
                                           pairs[i].item_title, pairs[i].item_text, pairs[i].query, f"qrels:{i}")
                             for i in chosen])


def judged_holes(program, pairs: list[Pair], holes: list[int], base: np.ndarray, known: Known,
                 kind: str | None) -> np.ndarray:
    """The grade of each hole when `program` has read `known`, through its stage (`FeedbackStage.judge`, as
    `forward` calls it), cut at the holes' estimated shares (the known being `kind`) or, with `kind` None, at the
    compiled thresholds; a hole with no other known judgment keeps `base`."""
    from hiera_dspy.methods.feedback import document
    from hiera_dspy.methods.grades import expected_grade

    stage = program.feedback
    program.read_known(known, targets=None if kind is None else [pairs[i] for i in holes], kind=kind or "auto")
    expected = expected_grade(program.base_distributions([pairs[i] for i in holes]))
    docs = [document(pairs[i].item_title, pairs[i].item_text) for i in holes]
    stage.warm(docs)
    out = base[holes].copy()
    for n, (i, e, doc) in enumerate(zip(holes, expected, docs)):
        found = stage.judge(float(e), stage.vector(doc), doc, pairs[i].query, pairs[i].item_id)
        if found is not None:
            out[n] = found[0]
    return out


def ms_a_pair(program, pairs: list[Pair], known: Known | None, kind: str = "auto") -> float:
    """Wall ms a pair of judging `pairs` through the product's path (read_known with the pairs to judge, prefetch,
    forward)."""
    start = time.perf_counter()
    if known is not None:
        program.read_known(known, targets=pairs, kind=kind)
    trecdl.late_grades(program, pairs)
    return 1000 * (time.perf_counter() - start) / max(1, len(pairs))


def shifted_out(pairs: list[Pair], labels: list[str], keep_lowest: float, seed: int, keep_relevant: float = 1.0,
                binary_from: int = 2) -> np.ndarray:
    """(n,) bool: the pairs a target with shifted grade shares leaves out (`--target-keep`, `--target-keep-relevant`):
    each pair of the lowest grade is kept with probability `keep_lowest`, each relevant one (grade >= `binary_from`)
    with `keep_relevant` (seeded), every other pair is kept. Only the target folds lose them: the judge is compiled on
    the full shares, as a judge compiled on one collection meets another."""
    draw = np.random.default_rng(7000 + seed).random(len(pairs))
    grade = np.array([labels.index(p.label) for p in pairs])
    return (((grade == 0) & (draw >= keep_lowest)) | ((grade >= binary_from) & (draw >= keep_relevant)))


def weakened(held: list[int], pairs: list[Pair], share: float, seed: int) -> dict[int, int]:
    """`--target-degrade`: for a share of each target query's pairs (seeded), the pair whose judge's view each takes
    (a permutation among them): the judge's scores then carry less of the target's ranking, as late-lr's carry
    less on DL 2023 (Spearman 0.38 with the grade) than on DL 2020. {} for share 0."""
    if share <= 0.0:
        return {}
    rng = np.random.default_rng(9000 + seed)
    by_query: dict[str, list[int]] = {}
    for i in held:
        by_query.setdefault(pairs[i].query_id, []).append(i)
    out: dict[int, int] = {}
    for members in by_query.values():
        picked = [i for i in members if rng.random() < share]
        out.update(zip(picked, rng.permutation(picked).tolist()))
    return out


def weaken(program, pairs: list[Pair], base: np.ndarray, held: list[int], view: dict[int, int]) -> None:
    """The target's judge as weak as `weakened` made it: its labels without known judgments (`base`, in place) and
    its grade distributions (what the stage reads, of holes and known pairs alike) are those of the pair `view`
    names."""
    if not view:
        return
    where = {(p.query_id, p.item_id): i for i, p in enumerate(pairs)}
    real = program.base_distributions
    base[held] = base[[view.get(i, i) for i in held]]

    def distributions(asked):
        return real([pairs[view.get(where[p.query_id, p.item_id], where[p.query_id, p.item_id])] for p in asked])

    program.base_distributions = distributions


def run_seed(pairs: list[Pair], seed: int, folds: int, lexical: dict[str, np.ndarray], collection: Collection,
             keep_lowest: float = 1.0, degrade: float = 0.0, keep_relevant: float = 1.0) -> dict:
    """Every policy's known and judged grades for every pair, each fold judged by a late-lr compiled without it (on
    a target that keeps `keep_lowest` of its lowest-grade pairs, `shifted_out`, and where a `degrade` share of the
    judge's views are another pair's, `weakened`)."""
    scheme = get_scheme(collection.scheme)
    labels = list(scheme.labels)
    fold = fold_of(pairs, folds, seed)
    out_of_target = shifted_out(pairs, labels, keep_lowest, seed, keep_relevant, scheme.binary_from)
    n = len(pairs)
    base = np.zeros(n, dtype=int)
    expected = np.zeros(n)
    grades = {(p, v): np.zeros(n, dtype=int) for p in collection.policies for v in VARIANTS}
    known_mask = {p: np.zeros(n, dtype=bool) for p in collection.policies}
    fits, stage_fits, ms_base, ms_feedback, learned = [], [], [], [], []
    shares: dict[str, list[dict]] = {f"{p[0]} {p[1]}": [] for p in collection.policies}  # per fold (`share_row`)
    differ = 0  # pairs whose label without known judgments is not the judge's own without its stage
    rng = np.random.default_rng(1000 + seed)
    for f in range(folds):
        held = [i for i, p in enumerate(pairs) if fold[p.query_id] == f and not out_of_target[i]]
        start = time.perf_counter()
        program = trecdl.compiled_late([p for p in pairs if fold[p.query_id] != f], scheme, seed=0)
        fits.append(time.perf_counter() - start)
        stage_fits.append(program.feedback.learned["fit_s"])
        learned.append(program.feedback.learned)
        test = [pairs[i] for i in held]
        program.read_known(Known.of(scheme, []))
        start = time.perf_counter()
        base[held] = trecdl.late_grades(program, test)
        ms_base.append(1000 * (time.perf_counter() - start) / len(test))
        stage, program.feedback = program.feedback, None  # the same judge without its stage
        differ += int((np.array(trecdl.late_grades(program, test)) != base[held]).sum())
        program.feedback = stage
        from hiera_dspy.methods.grades import expected_grade

        expected[held] = expected_grade(program.base_distributions(test))
        weaken(program, pairs, base, held, weakened(held, pairs, degrade, seed + 100 * f))
        by_query: dict[str, list[int]] = {}
        for i in held:
            by_query.setdefault(pairs[i].query_id, []).append(i)
        for policy in collection.policies:
            chosen = sorted(i for members in by_query.values() for i in known_of(policy, members, lexical, rng))
            known_mask[policy][chosen] = True
            holes = [i for i in held if not known_mask[policy][i]]
            known = known_table(pairs, chosen, scheme)
            for variant in VARIANTS:
                g = grades[policy, variant]
                g[chosen] = [labels.index(pairs[i].label) for i in chosen]
                lean = program.feedback.offsets
                if variant == "plain":
                    program.feedback.offsets = np.zeros_like(lean)
                g[holes] = base[holes] if variant == "base" else judged_holes(
                    program, pairs, holes, base, known, None if variant == "fixed" else KIND[policy[0]])
                program.feedback.offsets = lean
                if variant == "feedback":
                    shares[f"{policy[0]} {policy[1]}"].append(share_row(program, pairs, holes, known, scheme))
            if policy == collection.timed:
                ms_feedback.append(ms_a_pair(program, [pairs[i] for i in holes], known, KIND[policy[0]]))
    return {"seed": seed, "gold": [labels.index(p.label) for p in pairs], "base": base.tolist(),
            "expected": expected.tolist(),
            "grades": {f"{p[0]} {p[1]}|{v}": g.tolist() for (p, v), g in grades.items()},
            "known": {f"{p[0]} {p[1]}": m.tolist() for p, m in known_mask.items()},
            "fit_s": fits, "stage_fit_s": stage_fits, "ms_base": ms_base, "ms_feedback": ms_feedback,
            "learned": learned, "differ_without_stage": differ, "keep_lowest": keep_lowest, "degrade": degrade,
            "out_of_target": out_of_target.tolist(), "keep_relevant": keep_relevant, "shares": shares}


def share_row(program, pairs: list[Pair], holes: list[int], known: Known, scheme: LabelScheme) -> dict:
    """A fold's estimate of the holes' share of relevant pairs (grade >= the scheme's binary cut) and its interval,
    the truth over the holes the stage judged (their query has known judgments), and what `auto` would have taken
    the known judgments for; {} where the stage did not cut at estimated shares."""
    found = program.known_shares()
    if not found:
        return {}
    queries = {j.query for j in known}
    gold = np.array([scheme.labels.index(pairs[i].label) for i in holes if pairs[i].query in queries])
    b = scheme.binary_from - 1
    others = found.get("other_estimates", {})
    return {"estimate": found["at_least"][b], "low": found["low"][b], "high": found["high"][b],
            "truth": float(np.mean(gold >= scheme.binary_from)), "known": found["known_at_least"][b],
            "auto": found["check"]["kind"], "auc": found["check"]["auc"], "cut": found.get("cut", True),
            "compiled": found["compiled_cut_at_least"][b], **{name: v[b] for name, v in others.items()},
            "truth_at_least": [float(np.mean(gold >= g)) for g in range(1, len(scheme.labels))],
            "estimate_at_least": found["at_least"], "low_at_least": found["low"], "high_at_least": found["high"]}


# ------------------------------------------------------------------------------------------------ measures

def systems(pairs: list[Pair], lexical: dict[str, np.ndarray], vectors: dict[str, np.ndarray],
            expected: np.ndarray, seed: int) -> dict:
    """The systems whose nDCG@10 ranking the filled qrels must keep (see the module doc)."""
    from hiera_dspy.methods.feedback import document

    scores = dict(lexical)
    scores["dense-minilm"] = np.array([float(vectors[p.query] @ vectors[document(p.item_title, p.item_text)])
                                       for p in pairs])
    scores["late-lr"] = np.asarray(expected, dtype=float)
    scores["random"] = np.random.default_rng(seed).random(len(pairs))
    scores["longest-first"] = np.array([len(p.item_title) + len(p.item_text) for p in pairs], dtype=float)
    by_query: dict[str, list[Pair]] = {}
    for p in pairs:
        by_query.setdefault(p.query_id, []).append(p)
    return trecdl.as_runs(scores, by_query, {p.id: i for i, p in enumerate(pairs)})


def ranking(runs: dict, pairs: list[Pair], grades: np.ndarray, truth: dict[str, dict], scheme: LabelScheme) -> dict:
    """Kendall's tau of nDCG@10 under qrels `grades` against `truth` (each system's measures under the full qrels:
    the oracle fill, every hole with its true grade), and the mean |error| and mean signed error (the fill's bias)
    of nDCG@10 and P@10 over the systems."""
    qrels = {(p.query_id, p.item_id): int(g) for p, g in zip(pairs, grades)}
    values = {name: evaluate(run, qrels, scheme, 10) for name, run in runs.items()}
    names = sorted(runs)
    out = {"tau": kendall_tau([truth[n]["ndcg@10"] for n in names], [values[n]["ndcg@10"] for n in names])}
    for key, measure in (("ndcg", "ndcg@10"), ("p", "p@10")):
        errors = np.array([values[n][measure] - truth[n][measure] for n in names])
        out[f"{key}_error"], out[f"{key}_bias"] = float(np.mean(np.abs(errors))), float(np.mean(errors))
    return out


def top_holes(runs: dict, pairs: list[Pair], depth: int = TOP) -> np.ndarray:
    """(n,) bool: the pairs in some retrieval system's top `depth` (every system of `systems` but the `CONTROLS`).
    A benchmark's holes are these pairs less its pool: filling them is what `hiera-dspy holes` does."""
    index = {(p.query_id, p.item_id): i for i, p in enumerate(pairs)}
    out = np.zeros(len(pairs), dtype=bool)
    for name, run in runs.items():
        if name not in CONTROLS:
            for lines in trecdl.group(run).values():
                out[[index[(rl.qid, rl.docid)] for rl in lines[:depth]]] = True
    return out


def in_target(row: dict, pairs: list[Pair], lexical: dict[str, np.ndarray]
              ) -> tuple[dict, list[Pair], dict[str, np.ndarray]]:
    """A seed's row, the pairs and the lexical runs' scores restricted to its target's (those `shifted_out` left out
    are not in the collection the measures see: its holes, its full qrels and its systems' runs)."""
    out = row.get("out_of_target")
    if not out or not any(out):
        return row, pairs, lexical
    keep = ~np.array(out, dtype=bool)
    pick = lambda values: np.asarray(values)[keep].tolist()  # noqa: E731
    kept = {**row, "base": pick(row["base"]), "expected": pick(row["expected"]),
            "grades": {k: pick(v) for k, v in row["grades"].items()},
            "known": {k: pick(v) for k, v in row["known"].items()}}
    return kept, [p for p, k in zip(pairs, keep) if k], {name: v[keep] for name, v in lexical.items()}


def summarise(pairs: list[Pair], rows: list[dict], lexical, vectors, scheme: LabelScheme) -> dict:
    """Per seed and policy: each variant's agreement on the holes and its ranking of the systems."""
    out: dict = {"per_seed": [], "grades": len(scheme.labels)}
    every, every_lexical = pairs, lexical
    for row in rows:
        row, pairs, lexical = in_target(row, every, every_lexical)
        gold = np.array([scheme.labels.index(p.label) for p in pairs])
        runs = systems(pairs, lexical, vectors, np.array(row["expected"]), row["seed"])
        full = {(p.query_id, p.item_id): scheme.labels.index(p.label) for p in pairs}
        truth = {name: evaluate(run, full, scheme, 10) for name, run in runs.items()}
        top = top_holes(runs, pairs)
        seed_out = {"seed": row["seed"], "nothing_known": agreement(gold, np.array(row["base"]), scheme),
                    "nothing_known_ranking": ranking(runs, pairs, np.array(row["base"]), truth, scheme),
                    "differ_without_stage": row.get("differ_without_stage"), "policies": {}}
        for name, mask in row["known"].items():
            holes = ~np.array(mask)
            cell = {"known_a_query": float(np.array(mask).sum() / len({p.query_id for p in pairs})),
                    "holes": int(holes.sum()), "lowest_gold": float(np.mean(gold[holes] == 0)),
                    "shares": [f for f in row.get("shares", {}).get(name, []) if f]}
            variants = [v for v in VARIANTS if f"{name}|{v}" in row["grades"]]  # a row of an older bench: fewer
            for variant in variants:
                g = np.array(row["grades"][f"{name}|{variant}"])
                cell[variant] = {**agreement(gold[holes], g[holes], scheme), **ranking(runs, pairs, g, truth, scheme),
                                 "lowest": float(np.mean(g[holes] == 0))}
            in_top = holes & top
            cell["top"] = {"holes": int(in_top.sum())}
            if in_top.any():  # a tiny collection's pool may leave none
                cell["top"]["relevant_gold"] = float(np.mean(gold[in_top] >= scheme.binary_from))
                for variant in variants:
                    g = np.array(row["grades"][f"{name}|{variant}"])[in_top]
                    cell["top"][variant] = {**agreement(gold[in_top], g, scheme),
                                            "relevant": float(np.mean(g >= scheme.binary_from))}
            seed_out["policies"][name] = cell
        out["per_seed"].append(seed_out)
    out["fit_s"] = float(np.median([s for r in rows for s in r["fit_s"]]))
    out["stage_fit_s"] = float(np.median([s for r in rows for s in r["stage_fit_s"]]))
    out["ms_base"] = float(np.median([s for r in rows for s in r["ms_base"]]))
    out["ms_feedback"] = float(np.median([s for r in rows for s in r["ms_feedback"]]))
    out["learned"] = rows[0]["learned"][0]
    out["keep_lowest"] = rows[0].get("keep_lowest", 1.0)
    out["keep_relevant"] = rows[0].get("keep_relevant", 1.0)
    out["degrade"] = rows[0].get("degrade", 0.0)
    out["target_pairs"] = len(pairs)
    out["lowest_share"] = {"collection": float(np.mean([p.label == scheme.labels[0] for p in every])),
                           "target": float(np.mean([p.label == scheme.labels[0] for p in pairs]))}
    out["relevant_share"] = {"collection": float(np.mean([scheme.is_relevant(p.label) for p in every])),
                             "target": float(np.mean([scheme.is_relevant(p.label) for p in pairs]))}
    out["seed_s"] = [r["seed_s"] for r in rows if "seed_s" in r]
    return out


def shift_note(s: dict) -> str:
    """The caption's sentence on a shifted target (`--target-keep`), empty without one."""
    keep, degrade, text = s.get("keep_lowest", 1.0), s.get("degrade", 0.0), ""
    if keep < 1.0 or s.get("keep_relevant", 1.0) < 1.0:
        share = s["lowest_share"]
        rel = s.get("relevant_share", {})
        text += (f" **Shifted target**: each target fold keeps {keep:.0%} of its lowest-grade pairs and "
                 f"{s.get('keep_relevant', 1.0):.0%} of its relevant ones, so the lowest grade is {share['target']:.0%} "
                 f"and the relevant {rel.get('target', 0):.0%} of the target's {s['target_pairs']:,} pairs against "
                 f"{share['collection']:.0%} and {rel.get('collection', 0):.0%} where the judge was compiled: it meets "
                 "grade shares it never saw, as a judge compiled on DL 2020 meets DL 2023.")
    if degrade > 0.0:
        text += (f" **Weakened judge**: on the target, {degrade:.0%} of each query's pairs take another of those "
                 "pairs' judge's view (its label and grade distribution): its scores carry less of the target's "
                 "ranking, as late-lr's carry less on DL 2023.")
    return text


def markdown(s: dict, n_pairs: int, folds: int, collection: Collection = COLLECTIONS["trec"], sample: str = ""
             ) -> str:
    """The feedback table: per policy, the mean over seeds of each measure, and seeds on which feedback beat none."""
    seeds = s["per_seed"]
    timed = collection.timed
    lines = [f"late-lr with and without its queries' known judgments, {folds}-fold cross-validation by query on "
             f"{n_pairs:,} {collection.title} judgments{sample}, seeds {', '.join(str(r['seed']) for r in seeds)} "
             "(mean over seeds; in brackets, the seeds on which feedback beat the judge without it)."
             + collection.note + shift_note(s), "",
             f"| known judgments | known a query | holes | kappa ({s.get('grades', 4)} grades) without -> with | "
             "binary kappa | alpha | quadratic kappa | today's cut: kappa / binary | at the shares, no lean: kappa / "
             "binary | tau nDCG@10 without -> with |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in seeds[0]["policies"]:
        cells = [r["policies"][name] for r in seeds]

        def mean(variant, measure):
            return float(np.mean([c[variant][measure] for c in cells]))

        def wins(measure):
            return sum(c["feedback"][measure] > c["base"][measure] for c in cells)

        row = [label_of(name), f"{np.mean([c['known_a_query'] for c in cells]):.1f}", f"{cells[0]['holes']:,}"]
        for m in MEASURES:
            row.append(f"{mean('base', m):.3f} -> **{mean('feedback', m):.3f}** ({wins(m)} of {len(cells)})")
        for other in ("fixed", "plain"):
            row.append(f"{mean(other, 'kappa'):.3f} / {mean(other, 'kappa_binary'):.3f}" if other in cells[0] else "")
        row.append(f"{mean('base', 'tau'):.3f} -> {mean('feedback', 'tau'):.3f} ({wins('tau')} of {len(cells)})")
        lines.append("| " + " | ".join(row) + " |")
    lines += fill_table(seeds)
    lines += estimator_table(seeds)
    lowest = [f"{name.replace('pool', 'pool depth')} {np.mean([r['policies'][name]['lowest_gold'] for r in seeds]):.0%}"
              f" / {np.mean([r['policies'][name]['base']['lowest'] for r in seeds]):.0%}"
              f" / {np.mean([r['policies'][name]['feedback']['lowest'] for r in seeds]):.0%}"
              for name in seeds[0]["policies"] if "lowest_gold" in seeds[0]["policies"][name]]
    if lowest:
        lines += ["", "Holes given the lowest grade (truth / without / with feedback): " + "; ".join(lowest) + "."]
    lines += top_table(seeds)
    nothing = {m: float(np.mean([r["nothing_known"][m] for r in seeds])) for m in MEASURES}
    tau = float(np.mean([r["nothing_known_ranking"]["tau"] for r in seeds]))
    differ = [r.get("differ_without_stage") for r in seeds]
    same = ("" if None in differ else f" The same late-lr without its stage labels every pair alike "
            f"({sum(differ)} of {s.get('target_pairs', n_pairs) * len(seeds):,} labels differ).")
    seed_s = (f"; a seed's {folds} folds took {np.median(s['seed_s']):.0f} s (median)"
              if s.get("seed_s") else "")
    objective = s["learned"].get("objective", "kappa")
    lines += ["", (f"Nothing known (every pair judged alone, as before): kappa {nothing['kappa']:.3f}, binary "
                   f"{nothing['kappa_binary']:.3f}, alpha {nothing['alpha']:.3f}, quadratic kappa "
                   f"{nothing['weighted_kappa']:.3f}; tau of nDCG@10 with every pair machine-judged {tau:.3f}.{same}"),
              "", (f"Fit: late-lr's compile with the stage {s['fit_s']:.0f} s a fold (median), of which the stage "
                   f"{s['stage_fit_s']:.0f} s; judging {s['ms_base']:.2f} ms a pair without known judgments and "
                   f"{s['ms_feedback']:.2f} ms with {timed[1]} {timed[0]} known a query (read_known "
                   f"included; late-interaction features from the table, the pass itself not included){seed_s}."),
              "", f"Learned on (first fold of the first seed; {objective}): " + ", ".join(
                  f"{k} {v.get('agreement', v.get(objective, 0.0)):.3f} ({v['holes']:,} holes)"
                  for k, v in s["learned"]["by_policy"].items())
              + f"; out of fold overall {s['learned']['out_of_fold']:.3f}."]
    return "\n".join(lines) + "\n"


def label_of(policy: str) -> str:
    return policy.replace("pool", "pool depth")


def fill_table(seeds: list[dict]) -> list[str]:
    """The holes' share of relevant pairs, estimated against the truth (mean over folds and seeds, the mean |error|
    in points, how often the interval covered, and what `auto` took the known for), and the filled qrels' measures
    against the oracle fill (mean over systems of |error| and the signed error, the fill's bias)."""
    lines = ["", "The holes' share of relevant pairs (estimated per fold: its interval covers the truth on the share "
             "of folds given), and each system's P@10 and nDCG@10 under the filled qrels against the oracle fill "
             "(every hole with its true grade): mean |error| over the systems, and in brackets the mean signed error "
             "(the fill's bias).", "",
             "| known judgments | relevant: truth / estimate / known's own | mean abs share error | interval covers | "
             "auto took them for | P@10 error: without / with / today's cut / no lean | nDCG@10 error: without / with "
             "/ today's cut / no lean |", "|---|---|---|---|---|---|---|"]
    for name in seeds[0]["policies"]:
        cells = [r["policies"][name] for r in seeds]
        folds = [f for c in cells for f in c.get("shares", [])]
        row = [label_of(name)]
        if folds:
            truth, est = np.array([f["truth"] for f in folds]), np.array([f["estimate"] for f in folds])
            covered = np.mean([f["low"] <= f["truth"] <= f["high"] for f in folds])
            autos = [f["auto"] for f in folds]
            kept = sum(not f.get("cut", True) for f in folds)
            row += [f"{truth.mean():.1%} / {est.mean():.1%} / {np.mean([f['known'] for f in folds]):.1%}",
                    f"{100 * np.mean(np.abs(est - truth)):.1f}", f"{covered:.0%} of {len(folds)}",
                    ", ".join(f"{k} {autos.count(k)}" for k in sorted(set(autos)))
                    + (f"; not cut at on {kept}" if kept else "")]
        else:
            row += ["no estimate", "", "", ""]
        for key in ("p", "ndcg"):
            row.append(" / ".join(f"{np.mean([c[v][f'{key}_error'] for c in cells]):.3f} "
                                  f"({np.mean([c[v][f'{key}_bias'] for c in cells]):+.3f})"
                                  for v in VARIANTS if v in cells[0]))
        lines.append("| " + " | ".join(row) + " |")
    return lines


ESTIMATORS = (("estimate", "the stage's"), ("label_shift", "EM under label shift"),
              ("judge_mean", "the judge's mean P"), ("compiled", "today's cut calls"))


def estimator_table(seeds: list[dict]) -> list[str]:
    """Per policy, the holes' share of relevant pairs by each estimator the stage reports (`ESTIMATORS`) against the
    truth: mean over folds (mean |error| in points), the stage's interval coverage, and each boundary's (grade >= k)
    truth / estimate (empty for rows of an older bench)."""
    lines = []
    for name in seeds[0]["policies"]:
        folds = [f for r in seeds for f in r["policies"][name].get("shares", []) if "compiled" in f]
        if not folds:
            continue
        if not lines:
            lines = ["", "The holes' share of relevant pairs by each estimator (mean over folds; in brackets the mean "
                     "|error| in points), the stage's interval coverage, and every boundary's share of grade >= k, "
                     "truth / the stage's estimate:", "",
                     "| known judgments | truth | " + " | ".join(t for _, t in ESTIMATORS)
                     + " | interval covers | grade >= k: truth / estimate |", "|---" * (len(ESTIMATORS) + 4) + "|"]
        truth = np.array([f["truth"] for f in folds])
        row = [label_of(name), f"{truth.mean():.1%}"]
        for key, _ in ESTIMATORS:
            if all(key in f for f in folds):
                est = np.array([f[key] for f in folds])
                row.append(f"{est.mean():.1%} ({100 * np.mean(np.abs(est - truth)):.1f})")
            else:
                row.append("")
        row.append(f"{np.mean([f['low'] <= f['truth'] <= f['high'] for f in folds]):.0%} of {len(folds)}")
        t, e = np.mean([f["truth_at_least"] for f in folds], axis=0), np.mean([f["estimate_at_least"] for f in folds],
                                                                            axis=0)
        row.append(", ".join(f">= {g + 1}: {a:.1%} / {b:.1%}" for g, (a, b) in enumerate(zip(t, e))))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def top_table(seeds: list[dict]) -> list[str]:
    """The same judgments measured on the holes in the systems' top 10 only (`top_holes`): the pairs a benchmark's
    shallow pool leaves among its runs' top 10, which is what `hiera-dspy holes` fills (empty for older rows)."""
    if "top" not in seeds[0]["policies"][next(iter(seeds[0]["policies"]))]:
        return []
    lines = ["", f"On the holes in the retrieval systems' top {TOP} only (every system above but {' and '.join(CONTROLS)}"
             f"; a benchmark's holes are these, the pairs its pool leaves among its runs' top {TOP}):", "",
             "| known judgments | holes | relevant: truth / without / with / today's cut / no lean | kappa without -> with | binary kappa | alpha | "
             "quadratic kappa |", "|---|---|---|---|---|---|---|"]
    for name in seeds[0]["policies"]:
        cells = [r["policies"][name]["top"] for r in seeds]
        if not all("base" in c for c in cells):
            lines.append(f"| {name.replace('pool', 'pool depth')} | {np.mean([c['holes'] for c in cells]):,.0f} | "
                         "no hole in the top 10 on some seed |  |  |  |  |")
            continue
        shares = ([c["relevant_gold"] for c in cells],
                  *([c[v]["relevant"] for c in cells] for v in VARIANTS if v in cells[0]))
        row = [name.replace("pool", "pool depth"), f"{np.mean([c['holes'] for c in cells]):,.0f}",
               " / ".join(f"{np.mean(share):.0%}" for share in shares)]
        for m in MEASURES:
            base, fed = (float(np.mean([c[v][m] for c in cells])) for v in ("base", "feedback"))
            wins = sum(c["feedback"][m] > c["base"][m] for c in cells)
            row.append(f"{base:.3f} -> **{fed:.3f}** ({wins} of {len(cells)})")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=sorted(COLLECTIONS), default="trec", help="the collection (module doc)")
    p.add_argument("--data", type=Path, required=True, help="trec: a TREC folder (topics.tsv, qrels.txt, "
                   "corpus.jsonl[.gz]); msrd: judgments-pool.tsv.gz and movies-corpus.jsonl.gz; homedepot: "
                   "judgments-pool.jsonl.gz")
    p.add_argument("--work", type=Path, required=True, help="where the feature and vector tables are kept")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--queries", type=int, default=None, help="queries sampled (default: the collection's; trec: all)")
    p.add_argument("--min-judged", type=int, default=None, help="a sampled query's judgments at least")
    p.add_argument("--min-relevant", type=int, default=None, help="a sampled query's relevant judgments at least")
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--policies", default=None, help="the known-judgment policies measured, e.g. 'pool 5,random 5' "
                   "(default: the collection's)")
    p.add_argument("--target-keep", type=float, default=1.0, help="label shift: the share of each target fold's "
                   "lowest-grade pairs kept (default 1: none left out; `shifted_out`)")
    p.add_argument("--target-keep-relevant", type=float, default=1.0, help="label shift the other way: the share of "
                   "each target fold's relevant pairs kept (default 1; `shifted_out`)")
    p.add_argument("--target-degrade", type=float, default=0.0, help="a weaker judge on the target: the share of each "
                   "target query's pairs whose judge's view is another's (default 0; `weakened`)")
    args = p.parse_args()
    for flag, value in (("--target-keep", args.target_keep), ("--target-keep-relevant", args.target_keep_relevant)):
        if not 0.0 < value <= 1.0:
            p.error(f"{flag} {value}: a share in (0, 1]")
    if not 0.0 <= args.target_degrade < 1.0:
        p.error(f"--target-degrade {args.target_degrade}: a share in [0, 1)")
    suffix = ("" if args.target_keep >= 1.0 else f"-keep{args.target_keep:g}") + (
        "" if args.target_keep_relevant >= 1.0 else f"-keeprel{args.target_keep_relevant:g}") + (
        "" if args.target_degrade <= 0.0 else f"-degrade{args.target_degrade:g}")
    args.work.mkdir(parents=True, exist_ok=True)
    collection = COLLECTIONS[args.dataset]
    if args.policies:
        chosen = tuple((name, int(k)) for name, k in (item.split() for item in args.policies.split(",")))
        collection = replace(collection, policies=chosen, timed=chosen[-1])
        suffix += "-" + args.policies.replace(" ", "").replace(",", "-")
    scheme = get_scheme(collection.scheme)
    pairs, sample = sample_queries(
        collection.read(args.data, args.work), scheme, args.queries or collection.queries,
        collection.min_judged if args.min_judged is None else args.min_judged,
        collection.min_relevant if args.min_relevant is None else args.min_relevant, args.sample_seed)
    table = late_table(pairs, args.work)
    vectors = vector_table(pairs, args.work)
    lexical = pool_scores(pairs, 0)
    rows = []
    with late_from_table(table), vectors_from_table(vectors):
        for seed in [int(s) for s in args.seeds.split(",")]:
            cached = args.work / f"feedback-seed{seed}{suffix}.json"
            if cached.is_file():
                rows.append(json.loads(cached.read_text()))
                continue
            start = time.perf_counter()
            rows.append(run_seed(pairs, seed, args.folds, lexical, collection, args.target_keep, args.target_degrade,
                                 args.target_keep_relevant))
            rows[-1]["seed_s"] = time.perf_counter() - start
            cached.write_text(json.dumps(rows[-1]))
            print(f"seed {seed}: {rows[-1]['seed_s']:.0f} s", flush=True)
    summary = summarise(pairs, rows, lexical, vectors, scheme)
    (args.work / f"feedback{suffix}.json").write_text(json.dumps(summary, indent=1))
    text = markdown(summary, len(pairs), args.folds, collection, sample)
    (args.work / f"feedback{suffix}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
