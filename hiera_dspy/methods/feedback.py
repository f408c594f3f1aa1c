"""The feedback stage: a learned judge that also reads its query's known judgments (a benchmark's own qrels, a
`--known` file) when it judges a hole. It wraps any learned judge whose prediction carries a grade distribution
(`scores`): late-lr, embed-lr, ce-blend (`FeedbackJudge`).

**Evidence** (`signals/feedback.py`): the judge's own expected grade of the pair, the pair's sentence similarity to
the query's known passages of each grade, where the judge's score of the pair sits among its scores of the known
(a per-query calibration), and how many known there are of which grades; a pair's own judgment never informs it.

**Learned where the labels are** (`FeedbackStage.fit`, called by the judge's `prepare`): on the training collection,
known judgments are simulated for every query by each policy of `POLICIES`: a shallow pool (the union of the top
`depth` of four runs built over the query's pairs: BM25, term overlap, MiniLM's sentence cosine and the judge's own
out-of-fold score), a lexical top k (BM25), and k random pairs, for several k; the query's other pairs are the holes,
those in some run's top ten drawn first, as a benchmark's holes are its runs' top pairs (`training_holes`).
The judge's score of every train pair is out of fold (a model that never saw its query), so the evidence is what the
judge will read on a new collection. A multinomial logistic regression over the evidence gives a grade distribution;
its expected grade is cut at K-1 thresholds chosen on the combination's own out-of-fold predictions, folds by query,
over every policy's holes, by the mean of kappa on the grades and on their binary view (`graded_and_binary`; by
four-grade kappa alone the cut called too few passages relevant, and binary kappa fell below the judge's own). The artifact records the policies, their k and how well each did there.

**Calibrated to the collection** (`FeedbackStage.read`): where the target has known judgments, each known pair is
scored from its query's other known judgments (leave one out), and a shift of the log-prior of each grade is fitted
to their grades (maximum likelihood, shrunk to no shift by `PRIOR_PENALTY`): it corrects the combination's
conditional odds, not the grade shares.

**Cut at the target's shares** (`FeedbackStage.read` with the pairs to judge, `methods/shares.py`): from a seeded
sample of up to `TARGET_SAMPLE` of the pairs to judge, the target's shares of grade >= k are estimated apart from
the labels: prediction-powered from the known where they are a random sample of the pairs; where they are a pool
(whose own shares are never copied), under covariate shift, the stage's P(grade >= k) recalibrated on the known pool
(each scored from its query's other known) and averaged over the pairs to judge. Each boundary k is then cut on
P(grade >= k) where the sample's share at or above k matches the estimate; a sample's cut leans as the stage
learned its best cut leans (`shares.share_offsets`), a pool's falls at the estimate (the fill's numbers were nearer
the oracle's so). Without the pairs to judge, or with too few known, the thresholds chosen at compile time stand
(as before).

A query without known judgments, and a judge compiled without the stage (an older artifact, `feedback=false`),
judge exactly as before.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from hiera_dspy.data.known import Known
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.signals import feedback as ev
from hiera_dspy.signals.features import item_document
from hiera_dspy.signals.item_form import canonical_item

FORMAT = "hiera-dspy/feedback-stage"
FORMAT_VERSION = 1
POOL_DEPTHS = (1, 3, 5, 10)
POLICIES = tuple(("pool", d) for d in POOL_DEPTHS) + (("lexical", 2), ("lexical", 5), ("lexical", 10),
                                                       ("random", 2), ("random", 5), ("random", 10))
FOLDS = 5
MAX_HOLES = 60  # holes a query gives each policy's training rows at most (a seeded sample): a fit of seconds
RUN_DEPTH = 10  # a training hole in some run's top RUN_DEPTH is drawn first (`training_holes`)
C = 1.0
PRIOR_PENALTY = 2.0  # L2 weight pulling the target's log-prior shift towards none
MIN_CALIBRATION = 20  # known pairs (with another known judgment of their query) needed to fit the shift
TARGET_SAMPLE = 400  # pairs to judge (a seeded sample) whose distributions set the share-matched cut
MIN_TARGETS = 10  # pairs to judge (with known judgments of their query) needed to cut at the shares
OBJECTIVE = "kappa and binary kappa, mean"  # what the thresholds are chosen by (`grades.graded_and_binary`)


def document(item_title: str, item_text: str) -> str:
    """The passage as the stage reads it (the canonical item form late-lr's features read, title and text joined)."""
    return item_document(*canonical_item(item_title, item_text, True))


# ------------------------------------------------------------------------------------------------ simulated known

def policy_runs(queries: dict[str, list[int]], pairs: Sequence[Pair], expected: np.ndarray, vectors: np.ndarray,
                kind: str) -> dict[str, np.ndarray]:
    """Each run's score of every pair (higher: ranked first): BM25 and term overlap (the train split's idf),
    MiniLM's sentence cosine to the query, and the judge's own out-of-fold expected grade."""
    from hiera_dspy.signals.features import LexicalModel

    lexical = LexicalModel().fit((p.item_title, p.item_text) for p in pairs)
    rows = np.array([lexical.features(p.query, p.item_title, p.item_text) for p in pairs])
    texts = sorted({p.query for p in pairs})
    query_vec = dict(zip(texts, ev.passage_vectors(kind, texts)))
    dense = np.array([float(query_vec[p.query] @ v) for p, v in zip(pairs, vectors)])
    return {"bm25": rows[:, 2], "overlap": rows[:, 1], "dense": dense, "judge": np.asarray(expected, dtype=float)}


def simulated_known(policy: tuple[str, int], members: list[int], runs: dict[str, np.ndarray],
                    rng: np.random.Generator) -> list[int]:
    """The pairs (indices) of one query that `policy` judges: ("pool", depth), ("lexical", k) or ("random", k)."""
    name, k = policy

    def top(scores: np.ndarray, n: int) -> list[int]:
        return [members[i] for i in np.argsort(-scores[members], kind="stable")[:n]]

    if name == "pool":
        return sorted({i for run in runs.values() for i in top(run, k)})
    if name == "lexical":
        return top(runs["bm25"], k)
    if name == "random":
        return sorted(rng.choice(members, size=min(k, len(members)), replace=False).tolist())
    raise HieraError(f"feedback: unknown known-judgment policy {name!r} (pool, lexical, random)")


def training_holes(members: list[int], chosen: list[int], runs: dict[str, np.ndarray], rng: np.random.Generator
                   ) -> list[int]:
    """The holes of one query whose evidence trains the stage, MAX_HOLES at most (seeded samples): first its pairs
    in some run's top RUN_DEPTH that `chosen` did not judge, then others. A benchmark's holes are the pairs its pool
    leaves among its runs' top ranks (`hiera-dspy holes`), which every run, the judge among them, scores high whether
    relevant or not: a stage trained on holes drawn from all of a query's pairs alike calls too many of those relevant
    (on DL 2020's, 40% where the truth has 27%, with a pool of depth 3)."""
    taken = set(chosen)
    top = {members[i] for run in runs.values() for i in np.argsort(-run[members], kind="stable")[:RUN_DEPTH]}
    tops = [i for i in members if i in top and i not in taken]
    rest = [i for i in members if i not in top and i not in taken]

    def sample(pool: list[int], n: int) -> list[int]:
        return pool if len(pool) <= n else rng.choice(pool, size=n, replace=False).tolist()

    tops = sample(tops, MAX_HOLES)
    return sorted(tops + sample(rest, MAX_HOLES - len(tops)))


# ------------------------------------------------------------------------------------------------ the stage

class FeedbackStage:
    """The learned combination of the base judge's grade distribution and its query's known judgments (module doc)."""

    def __init__(self, labels: Sequence[str], kind: str = ev.MINILM_VECTORS, calibrate: bool = True,
                 binary_from: int | None = None):
        self.labels, self.k, self.kind, self.calibrate = tuple(labels), len(labels), kind, calibrate
        self.binary_from = len(labels) // 2 if binary_from is None else binary_from  # the scheme's binary cut
        self.coef: np.ndarray | None = None
        self.intercept: np.ndarray | None = None
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None
        self.classes: tuple[int, ...] = ()
        self.thresholds: tuple[float, ...] = ()
        self.learned: dict = {}
        self.queries: dict[str, ev.QueryKnown] = {}  # query text -> its known judgments (`read`)
        self.shift = np.zeros(self.k)  # the target's log-prior shift (`read`)
        self.cumulative: np.ndarray | None = None  # thresholds on P(grade >= k) at the target's shares (`read`)
        self.shares: dict | None = None  # the target's estimated shares and how (`read`; the report's)
        self.offsets = np.zeros(self.k - 1)  # where the cut falls against the shares (`shares.share_offsets`)
        self._warm: dict[str, np.ndarray] = {}  # the last batch's passage vectors (`warm`)
        self._left_out_queries: list[str] = []  # the query of each row `_left_out_rows` gave

    # -------------------------------------------------------------------------------------------- fit

    def fit(self, pairs: Sequence[Pair], oof: np.ndarray, seed: int = 0, policies=POLICIES) -> FeedbackStage:
        """Learn the combination on labelled `pairs` whose grade distributions `oof` (n, K) are out of fold by query,
        known judgments simulated by each of `policies` (module doc)."""
        from hiera_dspy.methods.grades import best_thresholds, cut, expected_grade, graded_and_binary, query_folds
        from hiera_dspy.methods.shares import share_offsets

        start = time.perf_counter()
        pairs = list(pairs)
        gold = np.array([self.labels.index(p.label) for p in pairs])
        expected = expected_grade(oof)
        docs = [document(p.item_title, p.item_text) for p in pairs]
        vectors = ev.passage_vectors(self.kind, docs)
        queries: dict[str, list[int]] = {}
        for i, p in enumerate(pairs):
            queries.setdefault(p.query_id or p.query, []).append(i)
        runs = policy_runs(queries, pairs, expected, vectors, self.kind)
        rng = np.random.default_rng(seed)
        x, y, qid, tag = [], [], [], []
        for n, policy in enumerate(policies):
            for q, members in queries.items():
                chosen = simulated_known(policy, members, runs, rng)
                holes = training_holes(members, chosen, runs, rng)
                if not chosen or not holes:
                    continue
                known = self._known([pairs[i].item_id for i in chosen], gold[chosen], vectors[chosen],
                                    expected[chosen], [docs[i] for i in chosen])
                rows, which = ev.evidence_rows(expected[holes], vectors[holes], known, self.k,
                                               [pairs[i].item_id for i in holes], [docs[i] for i in holes])
                x.append(rows)
                y.append(gold[holes][which])
                qid += [q] * len(which)
                tag += [n] * len(which)
        if not x:
            raise HieraError("the feedback stage needs train queries with several judged pairs each")
        X, Y, tags = np.vstack(x), np.concatenate(y), np.array(tag)
        folds = min(FOLDS, len(queries))
        names = sorted(queries)
        fold_of = dict(zip(names, query_folds([Pair("", q, "", "", None, q, "") for q in names], folds, seed,
                                              "feedback: query folds")))
        fold = np.array([fold_of[q] for q in qid])
        out = np.zeros((len(Y), self.k))
        for f in range(folds):
            self._fit_lr(X[fold != f], Y[fold != f])
            out[fold == f] = self._proba(X[fold == f])
        score = graded_and_binary(self.binary_from)
        value, self.thresholds = best_thresholds(Y, expected_grade(out), self.k, score)
        self.offsets, lean = share_offsets(out, Y, tags, self.k, score)
        self._fit_lr(X, Y)
        predicted = cut(expected_grade(out), self.thresholds)
        self.learned = {
            "policies": [f"{name} {k}" for name, k in policies], "ks": sorted({k for _, k in policies}),
            "rows": int(len(Y)), "queries": len(queries), "objective": OBJECTIVE,
            "holes": f"up to {MAX_HOLES} a query and policy, those in a run's top {RUN_DEPTH} first",
            "out_of_fold": float(value),
            "chosen_by": f"out of fold, {folds} folds by query", "vectors": self.kind,
            "by_policy": {f"{name} {k}": {"holes": int((tags == n).sum()),
                                          "agreement": float(score(Y[tags == n], predicted[tags == n], self.k))}
                          for n, (name, k) in enumerate(policies) if (tags == n).any()},
            "binary_from": self.binary_from,
            "train_shares": [float(np.mean(Y == g)) for g in range(self.k)],
            "share_offsets": self.offsets.tolist(), "at_shares_out_of_fold": float(lean),
            "fit_s": round(time.perf_counter() - start, 2)}
        return self

    def _fit_lr(self, X: np.ndarray, Y: np.ndarray) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler
        from threadpoolctl import threadpool_limits

        scaler = StandardScaler().fit(X)
        with threadpool_limits(limits=1, user_api="blas"):  # a (n, ~20) fit: more BLAS threads only contend
            model = LogisticRegression(C=C, max_iter=2000, random_state=0).fit(scaler.transform(X), Y)
        self.mean, self.scale = scaler.mean_, scaler.scale_
        self.coef, self.intercept, self.classes = model.coef_, model.intercept_, tuple(int(c) for c in model.classes_)

    def _proba(self, X: np.ndarray, shift: np.ndarray | None = None) -> np.ndarray:
        """(n, K) grade distributions of evidence rows (`shift`: added to each grade's log-odds)."""
        z = (np.asarray(X, dtype=float) - self.mean) / self.scale
        logits = z @ np.asarray(self.coef).T + self.intercept
        if logits.shape[1] == 1:  # two classes: one logit for the second
            logits = np.column_stack([np.zeros(len(logits)), logits[:, 0]])
        full = np.full((len(z), self.k), -np.inf)
        full[:, list(self.classes)] = logits
        if shift is not None:
            full = full + shift
        full -= full.max(axis=1, keepdims=True)
        e = np.exp(full)
        return e / e.sum(axis=1, keepdims=True)

    @staticmethod
    def _known(item_ids, grades, vectors, expected, docs) -> ev.QueryKnown:
        return ev.QueryKnown(np.asarray(grades, dtype=float), np.asarray(vectors, dtype=float),
                             np.asarray(expected, dtype=float), tuple(item_ids), tuple(docs))

    # -------------------------------------------------------------------------------------------- known

    def read(self, known: Known, distributions, targets: Sequence[Pair] | None = None, kind: str = "auto"
             ) -> dict[str, int]:
        """Read the target's known judgments (`distributions(pairs) -> (n, K)`: the base judge's grade distributions
        of pairs), fit the log-prior shift on them, and with `targets` (the pairs to judge, or a sample of them) cut
        at the target's estimated shares, the known being `kind` (module doc); how many judgments each query id will
        use (those graded on this scale, with a query and a passage text)."""
        from hiera_dspy.methods.grades import expected_grade

        self.queries, self.shift, self.cumulative, self.shares = {}, np.zeros(self.k), None, None
        if tuple(known.scheme.labels) != self.labels:
            return {}
        usable = [j for j in known if j.item_text is not None and j.query and 0 <= j.grade < self.k]
        if not usable:
            return {}
        pairs = [Pair(f"{j.query_id}:{j.item_id}", j.query or "", j.item_title, j.item_text or "", None, j.query_id,
                      j.item_id)
                 for j in usable]
        expected = expected_grade(np.asarray(distributions(pairs), dtype=float))
        docs = [document(j.item_title, j.item_text or "") for j in usable]
        vectors = ev.passage_vectors(self.kind, docs)
        by_text: dict[str, list[int]] = {}
        for i, j in enumerate(usable):
            by_text.setdefault(j.query, []).append(i)  # type: ignore[arg-type]
        for text, members in by_text.items():
            self.queries[text] = self._known([usable[i].item_id for i in members], [usable[i].grade for i in members],
                                             vectors[members], expected[members], [docs[i] for i in members])
        loo, gold = self._left_out_rows()
        if self.calibrate and len(gold) >= MIN_CALIBRATION:
            self.shift = self._prior_shift(loo, gold)
        if targets is not None and len(gold) >= MIN_CALIBRATION:
            self._cut_at_shares(loo, gold, expected, targets, distributions, kind)
        counts: dict[str, int] = {}
        for j in usable:
            counts[j.query_id] = counts.get(j.query_id, 0) + 1
        return counts

    def _left_out_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The evidence rows of the known judgments, each scored from its query's other known, and their grades (their
        queries' texts kept in `_left_out_queries`)."""
        rows, gold, self._left_out_queries = [], [], []
        for query, known in self.queries.items():
            for i in range(len(known)):
                rest = known.without(i)
                row = ev.evidence(float(known.expected[i]), known.vectors[i], rest, self.k,
                                  ev.own(rest, known.item_ids[i], known.docs[i]))
                if row is not None:
                    rows.append(row)
                    gold.append(int(known.grades[i]))
                    self._left_out_queries.append(query)
        width = len(ev.feature_names(self.k))
        return (np.array(rows) if rows else np.zeros((0, width))), np.array(gold, dtype=int)

    def _prior_shift(self, rows: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The log-prior shift that fits the known judgments' grades, each scored from its query's other known."""
        from scipy.optimize import minimize

        base = np.log(np.maximum(self._proba(rows), 1e-12))

        def loss(b):
            shift = np.concatenate([[0.0], b])
            z = base + shift
            z = z - z.max(axis=1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            return -logp[np.arange(len(y)), y].mean() + PRIOR_PENALTY * float(b @ b) / len(y)

        b = minimize(loss, np.zeros(self.k - 1), method="L-BFGS-B").x
        return np.concatenate([[0.0], b])

    def _cut_at_shares(self, loo: np.ndarray, gold: np.ndarray, known_expected: np.ndarray,
                       targets: Sequence[Pair], distributions, kind: str) -> None:
        """Estimate the shares of the pairs to judge (a seeded sample of `targets` whose query has known judgments)
        and set the cumulative thresholds that give them (`methods/shares.py`); `self.shares` says what was
        assumed and found."""
        from hiera_dspy.data.known import KINDS
        from hiera_dspy.methods import shares as sh
        from hiera_dspy.methods.grades import cut, expected_grade

        if kind not in KINDS:
            raise HieraError(f"--known-kind {kind!r}: give one of {', '.join(KINDS)}")
        targets = [p for p in targets if p.query in self.queries]
        if len(targets) > TARGET_SAMPLE:
            picked = np.random.default_rng(0).choice(len(targets), TARGET_SAMPLE, replace=False)
            targets = [targets[i] for i in sorted(picked)]
        if len(targets) < MIN_TARGETS:
            return
        base = np.asarray(distributions(targets), dtype=float)
        expected = expected_grade(base)
        docs = [document(p.item_title, p.item_text) for p in targets]
        vectors = ev.passage_vectors(self.kind, docs)
        rows, kept = [], []
        for i, p in enumerate(targets):
            known = self.queries[p.query]
            row = ev.evidence(float(expected[i]), vectors[i], known, self.k, ev.own(known, p.item_id, docs[i]))
            if row is not None:
                rows.append(row)
                kept.append(i)
        if len(rows) < MIN_TARGETS:
            return
        X = np.array(rows)
        check = sh.looks_like(known_expected, expected[kept])
        assumed = check["kind"] if kind == "auto" else kind
        target_dist = self._proba(X)
        found = sh.ESTIMATORS[assumed](gold, self._proba(loo), target_dist, self.k, self._left_out_queries,
                                       [targets[i].query for i in kept])
        others = {"judge_mean": sh.cumulative(target_dist).mean(axis=0).tolist()}  # the judge's own, unrecalibrated
        train: list[float] = list(self.learned.get("train_shares") or [])
        if assumed == "pool" and train:  # label shift from the training collection: reported beside, not used
            others["label_shift"] = sh.label_shift_shares(train, target_dist,
                                                          [targets[i].query_id for i in kept])["at_least"]
        shifted = self._proba(X, self.shift)
        compiled = np.bincount(cut(expected_grade(shifted), self.thresholds), minlength=self.k) / len(shifted)
        leaned = sh.shifted_shares(found["at_least"], self.offsets if assumed in sh.LEANS else np.zeros(self.k - 1))
        if sh.cuts(assumed, self.k):
            self.cumulative = sh.cumulative_thresholds(shifted, leaned)
        given = np.bincount(gold, minlength=self.k) / len(gold)
        self.shares = {"kind": kind, "assumed": assumed, "check": check, **found,
                       "grades": sh.grade_shares(found["at_least"]), "known_grades": given.tolist(),
                       "known_at_least": sh.cumulative(given[None, :])[0].tolist(), "pairs_sampled": len(rows),
                       "compiled_cut_at_least": sh.cumulative(compiled[None, :])[0].tolist(),
                       "cut_at_least": leaned.tolist(), "offsets": self.offsets.tolist(),
                       "cut": self.cumulative is not None, "other_estimates": others,
                       "binary_from": self.binary_from, "labels": list(self.labels)}

    def warm(self, docs: Sequence[str]) -> None:
        """Compute the vectors of passages about to be judged in one batch (only the last batch is kept)."""
        self._warm = dict(zip(docs, ev.passage_vectors(self.kind, list(docs)))) if docs else {}

    def vector(self, doc: str) -> np.ndarray:
        """The passage's unit sentence vector (from the last `warm` batch where it was there)."""
        found = self._warm.get(doc)
        return found if found is not None else ev.passage_vectors(self.kind, [doc])[0]

    def known_for(self, query: str) -> ev.QueryKnown | None:
        """The query's known judgments (None: it has none)."""
        return self.queries.get(query)

    def judge(self, expected: float, vector: np.ndarray, doc: str, query: str, item_id: str | None = None
              ) -> tuple[int, np.ndarray, int] | None:
        """(grade, distribution, known judgments read) of a pair of `query` the judge scored `expected`; None when
        its query has no known judgment but its own (the base judge's label stands)."""
        from hiera_dspy.methods.grades import cut, expected_grade

        known = self.queries.get(query)
        if known is None:
            return None
        mine = ev.own(known, item_id, doc)
        row = ev.evidence(expected, vector, known, self.k, mine)
        if row is None:
            return None
        dist = self._proba(row[None, :], self.shift)[0]
        if self.cumulative is not None:
            from hiera_dspy.methods.shares import cut_cumulative

            return int(cut_cumulative(dist[None, :], self.cumulative)[0]), dist, int((~mine).sum())
        return int(cut(expected_grade(dist[None, :]), self.thresholds)[0]), dist, int((~mine).sum())

    # -------------------------------------------------------------------------------------------- JSON

    def to_dict(self) -> dict:
        """The fitted stage as JSON-ready data (what it learned from in `learned`)."""
        return {"format": FORMAT, "version": FORMAT_VERSION, "labels": list(self.labels), "vectors": self.kind,
                "calibrate": self.calibrate, "features": list(ev.feature_names(self.k)),
                "coef": np.asarray(self.coef).tolist(), "intercept": np.asarray(self.intercept).tolist(),
                "scaler": {"mean": np.asarray(self.mean).tolist(), "scale": np.asarray(self.scale).tolist()},
                "classes": list(self.classes), "thresholds": list(self.thresholds), "learned": self.learned}

    @classmethod
    def from_dict(cls, d: dict) -> FeedbackStage:
        """The stage `to_dict` saved (ValueError for another format or a feature list of another version)."""
        if d.get("format") != FORMAT or d.get("version") != FORMAT_VERSION:
            raise HieraError(f"not a {FORMAT} v{FORMAT_VERSION} document: re-compile the judge")
        stage = cls(d["labels"], d["vectors"], bool(d.get("calibrate", True)))
        if tuple(d["features"]) != ev.feature_names(stage.k):
            raise HieraError("the feedback stage reads other features than this hiera-dspy computes: re-compile")
        stage.coef, stage.intercept = np.array(d["coef"]), np.array(d["intercept"])
        stage.mean, stage.scale = np.array(d["scaler"]["mean"]), np.array(d["scaler"]["scale"])
        stage.classes, stage.thresholds = tuple(d["classes"]), tuple(d["thresholds"])
        stage.learned = dict(d.get("learned", {}))
        stage.offsets = np.array(stage.learned.get("share_offsets", np.zeros(stage.k - 1)), dtype=float)
        return stage


# ------------------------------------------------------------------------------------------------ the judge's side

def scorer_out_of_fold(state, pairs: Sequence[Pair], folds: int, seed: int, option: str
                       ) -> tuple[np.ndarray, np.ndarray | None]:
    """((n, K) grade distributions of labelled `pairs` from `state`'s scorer (a `ScorerState`), each fold's (by
    query) from a scorer fitted on the other folds; the pairs' feature rows, computed once where the scorer allows
    (None for a scorer with item priors), for the final fit)."""
    from hiera_dspy.methods.grades import distributions, query_folds
    from hiera_dspy.signals.feature_sets import uses_prior

    pairs = list(pairs)
    fold = np.asarray(query_folds(pairs, folds, seed, option))
    labels = state.scheme.labels
    out = np.zeros((len(pairs), len(labels)))
    rows = None if uses_prior(state.options.get("features", "base")) else state.new_scorer().train_rows(pairs)
    for k in range(folds):
        rest = np.flatnonzero(fold != k)
        if rows is None:
            scorer = state.new_scorer().fit([pairs[i] for i in rest])
            out[fold == k] = distributions(scorer.predict_proba_many([p for p, f in zip(pairs, fold) if f == k]),
                                           labels)
        else:
            scorer = state.new_scorer().fit([pairs[i] for i in rest], rows[rest])
            out[fold == k] = scorer.proba_rows(rows[fold == k])
    return out, rows


class FeedbackJudge:
    """Mixin of a learned judge that reads its queries' known judgments (`data.known.ReadsKnown`): `learn_feedback`
    at the end of its `prepare`, `with_feedback` on its prediction, `feedback_extra`/`load_feedback` in its artifact.
    The judge gives `base_distributions(pairs) -> (n, K)`, its grade distributions of pairs."""

    scheme: LabelScheme
    feedback: FeedbackStage | None = None
    feedback_option: bool | None = None  # config `feedback`: unset (learn it) | True | False (leave it out)

    def base_distributions(self, pairs: Sequence[Pair]) -> np.ndarray:
        """(n, K) the wrapped judge's own grade distributions of `pairs` (each learned judge gives its own)."""
        raise NotImplementedError

    def learn_feedback(self, pairs: Sequence[Pair], oof: np.ndarray, seed: int = 0) -> None:
        """Fit the stage on `pairs` and their out-of-fold grade distributions (unless `feedback=false`)."""
        self.feedback = None
        if self.feedback_option is False:
            return
        stage = FeedbackStage(self.scheme.labels, ev.available_kind(), binary_from=self.scheme.binary_from)
        try:
            self.feedback = stage.fit(pairs, oof, seed)
        except ValueError as exc:
            print(f"{getattr(self, 'method', 'judge')}: no feedback stage ({exc})", file=sys.stderr)
            return
        f = stage.learned
        print(f"{getattr(self, 'method', 'judge')}: feedback stage learned on {f['rows']:,} holes of simulated known "
              f"judgments ({', '.join(f['policies'])}; {f['objective']} {f['out_of_fold']:.3f} {f['chosen_by']}, "
              f"{f['fit_s']:.0f} s)", file=sys.stderr)

    def warm_feedback(self, pairs: Sequence[Pair]) -> None:
        """Before a batch is judged: the vectors of its pairs whose query has known judgments, in one pass."""
        if self.feedback is not None:
            self.feedback.warm([document(p.item_title, p.item_text) for p in pairs
                                if self.feedback.known_for(p.query) is not None])

    reads_targets = True  # `read_known` also takes the pairs to judge (`data.known_evidence.hand_over`)

    def read_known(self, known: Known, targets: Sequence[Pair] | None = None, kind: str = "auto") -> dict[str, int]:
        """`data.known.ReadsKnown`: read the known judgments as evidence, and with `targets` (the pairs to judge)
        cut at their estimated shares, the known being `kind` (sample | pool | auto); how many each query will use
        ({} without a stage: the judge then judges every pair alone)."""
        if self.feedback is None:
            return {}
        return self.feedback.read(known, self.base_distributions, targets, kind)

    def known_shares(self) -> dict | None:
        """The target's estimated grade shares the last `read_known` cut at (None: the compiled thresholds stand)."""
        return None if self.feedback is None else self.feedback.shares

    def with_feedback(self, prediction: Any, query: str, item_title: str, item_text: str) -> Any:
        """`prediction` (with its grade distribution in `scores`) re-judged with its query's known judgments; as it
        is when the query has none (or no stage was learned)."""
        stage = self.feedback
        if stage is None or stage.known_for(query) is None:
            return prediction
        from hiera_dspy.methods.grades import distributions, expected_grade

        labels = stage.labels
        base = distributions([prediction.scores], labels)
        doc = document(item_title, item_text)
        found = stage.judge(float(expected_grade(base)[0]), stage.vector(doc), doc, query)
        if found is None:
            return prediction
        grade, dist, read = found
        prediction["base_label"], prediction["base_scores"] = prediction.label, prediction.scores
        prediction["label"], prediction["scores"] = labels[grade], dict(zip(labels, map(float, dist)))
        prediction["known_read"] = read
        return prediction

    def feedback_extra(self) -> dict:
        """The artifact's `extra["feedback"]` ({} without a stage: an artifact as before)."""
        return {} if self.feedback is None else {"feedback": self.feedback.to_dict()}

    def load_feedback(self, extra: dict) -> None:
        """Restore the stage from an artifact's `extra` (an older artifact has none: judged as before)."""
        self.feedback = FeedbackStage.from_dict(extra["feedback"]) if extra.get("feedback") else None

    def feedback_learned_from(self) -> list[str]:
        """The compile report's line about the stage (none without one)."""
        if self.feedback is None:
            return []
        f = self.feedback.learned
        return [f"feedback stage: {f['rows']:,} holes of simulated known judgments ({', '.join(f['policies'])}), "
                f"{f['objective']} {f['out_of_fold']:.3f} {f['chosen_by']}; {f['vectors']} vectors"]
