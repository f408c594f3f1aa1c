"""ce-blend: a cross-encoder fine-tuned on the train pairs (`signals/cross_encoder.py`) blended with the learned
scorer, no LM call; two labels or graded ones (ESCI's four, Home Depot's and WANDS' three, TREC's 0-3).

`prepare(train)` holds out `dev_queries` seeded train queries that have pairs of two labels or more (one pair of each
label they have, then balanced to the rarest label: like the balanced held-out sets it is measured on), fits the
scorer and fine-tunes the cross-encoder on the other queries' pairs (ordinal: K-1 cumulative logits, regressing on
the source's graded value where it has one, e.g. Home Depot's raters' mean), and chooses on the held-out pairs the
weight w (0, 0.1, ..., 1) of the blended grade distribution w * P_ce + (1 - w) * P_scorer and the K-1 thresholds on
its expected grade with the highest `blend_objective`: Cohen's kappa (default) or the quadratic-weighted kappa
(`--set blend_objective=weighted_kappa`); both are recorded in the artifact's `blend` (dev_kappa,
dev_weighted_kappa). Two labels: the expected grade is P(top label) and the one threshold is searched on
0.2 ... 0.8, as it always was. bench/cross_encoder.py measures the two-label method on MSRD (whole pool, 12,000
cross-encoder pairs): kappa 0.805 [0.764, 0.847] on 800 held-out pairs with the cross-encoder at 64 tokens in bf16
autocast (0.788 [0.745, 0.829] at 128 tokens in fp32), McNemar against embed-lr 300 p<0.001; bench/graded.py the
graded one on Home Depot (docs/learning.md).

Scoring then takes the fastest ONNX path that keeps the blend's labels on the same held-out pairs
(`signals/fast_path.py`: int8, a 64-token cut, or both; fp32 at full length otherwise), recorded in `blend["scoring"]`
and the weights' `onnx.json`.

The fine-tuned weights (~90 MB) live beside the artifact, in the folder `save_files` writes (`<artifact>.weights/`,
every file's SHA-256 in the artifact's `extra`); `load_files` checks them.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dspy
import numpy as np

from hiera_dspy.errors import HieraError, NotFitted
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.feedback import FeedbackJudge
from hiera_dspy.methods.grades import best_thresholds, cut, distributions, expected_grade, objective, query_folds
from hiera_dspy.methods.learned_scorer import SCORER, SCORER_OPTIONS, ScorerState
from hiera_dspy.methods.learning import Learner
from hiera_dspy.metrics.classification import classification_metrics
from hiera_dspy.records import Pair
from hiera_dspy.signals.fast_path import choose_path

CE = {"ce_pairs": 12000, "ce_max_len": 64, "ce_lr": 5e-5, "dev_queries": 150, "seed": 0}
# blend_objective: "kappa" (default) | "weighted_kappa", what chooses the weight and thresholds; ce_epochs (1);
# blend_folds: K query-grouped folds whose out-of-fold predictions choose the blend (unset: the dev split)
CE_OPTIONS = ("blend_objective", "ce_epochs", "ce_precision", "blend_folds", "feedback")
CHECK_PAIRS = 300  # cross-fitted: train pairs the fast scoring path is checked on
WEIGHTS = tuple(np.linspace(0, 1, 11))


def dev_split(pairs: Sequence[Pair], labels: Sequence[str], n_queries: int, seed: int) -> tuple[list[Pair], list[Pair]]:
    """(fit pairs, dev pairs): `n_queries` seeded queries give one pair of each label they have to dev (top label
    first) and none of their pairs to fit; dev is then balanced, seeded, down to the rarest label's count. The
    queries come from those with pairs of two labels or more (at most half of them: two labels, one pair of each
    per query, as it always was); where fewer than `n_queries` such queries exist (a train split of a few hundred
    pairs spread over as many queries), single-label queries make up the rest, an equal share of each label and at
    most half of each label's."""
    by_query: dict[str, dict[str, list[Pair]]] = {}
    for p in pairs:
        by_query.setdefault(p.query_id or p.query, {}).setdefault(p.label, []).append(p)
    mixed = sorted(q for q, d in by_query.items() if sum(bool(d.get(label)) for label in labels) >= 2)
    rng = random.Random(seed)
    chosen = rng.sample(mixed, min(n_queries, len(mixed) // 2))
    if len(mixed) < n_queries:  # single-label queries, an equal share of each label (at most half of each)
        share = (n_queries - len(chosen)) // len(labels)
        for label in reversed(labels):
            single = sorted(q for q, d in by_query.items() if set(d) == {label})
            chosen += rng.sample(single, min(share, len(single) // 2))
    dev = [rng.choice(by_query[q][label]) for q in chosen for label in reversed(labels) if by_query[q].get(label)]
    if len({p.label for p in dev}) < 2:
        raise HieraError(f"ce-blend needs held-out train queries with pairs of two labels or more to choose its blend "
                         f"on; the {len(by_query)} train queries give {len(dev)} dev pairs of one label")
    skip = set(chosen)
    return [p for p in pairs if (p.query_id or p.query) not in skip], balance(dev, labels, rng)


def balance(pairs: list[Pair], labels: Sequence[str], rng: random.Random) -> list[Pair]:
    """`pairs` with every label cut to the rarest present label's count (seeded; already balanced: unchanged)."""
    groups = {label: [p for p in pairs if p.label == label] for label in labels}
    floor = min(len(g) for g in groups.values() if g)
    if all(len(g) in (0, floor) for g in groups.values()):
        return pairs
    keep = {id(p) for g in groups.values() for p in rng.sample(g, min(floor, len(g)))}
    return [p for p in pairs if id(p) in keep]


def choose_blend(gold: Sequence[str], scorer_d, ce_d, labels: Sequence[str], weights=WEIGHTS,
                 blend_objective: str = "kappa") -> tuple[float, float, tuple[float, ...]]:
    """(agreement, w, thresholds) with the highest `blend_objective` of `blend_labels` on the dev pairs (ties: the
    larger w, then thresholds); `scorer_d`, `ce_d`: (n, K) grade distributions."""
    score, k = objective(blend_objective), len(labels)
    index = {label: i for i, label in enumerate(labels)}
    codes = np.array([index[g] for g in gold])
    scorer_d, ce_d = np.asarray(scorer_d, dtype=float), np.asarray(ce_d, dtype=float)
    found = []
    for w in weights:
        value, thresholds = best_thresholds(codes, expected_grade(w * ce_d + (1 - w) * scorer_d), k, score)
        found.append((value, float(w), thresholds))
    return max(found)


def blend_labels(scorer_d, ce_d, w: float, thresholds: Sequence[float], labels: Sequence[str]) -> list[str]:
    """The labels of the blended distributions w * ce_d + (1 - w) * scorer_d: their expected grade cut at
    `thresholds` (two labels: P(top label) >= the one threshold)."""
    mixed = w * np.asarray(ce_d, dtype=float) + (1 - w) * np.asarray(scorer_d, dtype=float)
    return [labels[g] for g in cut(expected_grade(mixed), thresholds)]


class CrossBlendProgram(Learner, FeedbackJudge, dspy.Module):
    """The learned scorer and a fine-tuned cross-encoder, blended (see the module doc)."""

    def __init__(self, ctx: BuildContext, *, embedder: str, C: float, ce_pairs: int, ce_max_len: int, ce_lr: float,
                 dev_queries: int, seed: int, blend_objective: str | None = None, ce_epochs: int | None = None,
                 ce_precision: str | None = None, blend_folds: int | None = None, feedback: bool | None = None,
                 **options):
        super().__init__()
        self.feedback_option = feedback  # true: learn the feedback stage on the blend's out-of-fold grades
        self.scheme, self.train = ctx.scheme, [p for p in ctx.train if p.label in ctx.scheme.labels]
        self.scorer_state = ScorerState(ctx.scheme, self.train, embedder, C, **options)
        self.ce_options = {"train_pairs": ce_pairs, "max_len": ce_max_len, "lr": ce_lr, "seed": seed,
                           "epochs": ce_epochs or 1, "precision": ce_precision or "auto"}
        self.dev_queries, self.seed, self.blend_folds = dev_queries, seed, blend_folds
        self.budget: dict | None = None  # ce_max_len="auto": the token budget chosen and its evidence
        self.blend_objective = blend_objective or "kappa"
        objective(self.blend_objective)  # an unknown name fails at build, not after the fine-tuning
        self.encoder = None
        self.blend: dict | None = None
        self.digests: dict[str, str] | None = None
        self._prefetched: dict[tuple[str, str, str], np.ndarray] = {}  # the last prefetch's cross-encoder grades

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None):
        """Fit the scorer and fine-tune the cross-encoder, then choose the blend on pairs neither model saw: the
        out-of-fold predictions of `blend_folds` query-grouped folds over every train pair (each fold's pairs
        scored by a scorer and a cross-encoder fitted on the other folds; the judge itself then fits on all of
        them), or, unset, the `dev_queries` held-out train queries (the judge fits on the others). `dev` is unused
        (the choice needs pairs neither model saw). ce_max_len="auto" chooses the token budget from the train
        pairs' lengths (`signals/pair_lengths.py`) and fine-tunes in length-bucketed batches. The scorer's fit (its
        features and trees on one core) and the fine-tuning (torch on one thread) run side by side."""
        pairs = [p for p in (train or self.train) if p.label in self.scheme.labels]
        labels = self.scheme.labels
        options = self._encoder_options(pairs)
        if self.blend_folds:
            gold, scorer_d, ce_d = self._out_of_fold(pairs, options)
            fit = pairs
            check = random.Random(self.seed).sample(pairs, min(CHECK_PAIRS, len(pairs)))
        else:
            fit, check = dev_split(pairs, labels, self.dev_queries, self.seed)
        self.encoder = self._fit_beside(fit, options)
        check_triples = [(p.query, p.item_title, p.item_text) for p in check]
        if self.encoder.accelerate(check_triples) is not None:  # ONNX Runtime from here on
            self.encoder.use_path("fp32", self.encoder.max_len)  # the blend is chosen on the reference path
        check_scorer = distributions([self._scorer_dist(p.query, p.item_title, p.item_text) for p in check], labels)
        check_gold = [p.label for p in check]
        if not self.blend_folds:
            gold, scorer_d, ce_d = check_gold, check_scorer, self.encoder.grade_probs(check_triples)
        _, w, thresholds = choose_blend(gold, scorer_d, ce_d, labels, blend_objective=self.blend_objective)
        chosen = blend_labels(scorer_d, ce_d, w, thresholds, labels)
        path = choose_path(self.encoder, check_triples,
                           lambda ce: blend_labels(check_scorer, ce, w, thresholds, labels), check_gold)
        agreement = classification_metrics(gold, chosen, list(labels))
        self.blend = {"weight": w, "thresholds": list(thresholds), "objective": self.blend_objective,
                      "dev_kappa": agreement["kappa"], "dev_weighted_kappa": agreement["weighted_kappa"],
                      "dev_pairs": len(gold), "fit_pairs": len(fit),
                      "ce_pairs": getattr(self.encoder, "train_pairs", None),
                      "dev_label_counts": {label: gold.count(label) for label in labels}}
        if self.blend_folds:
            self.blend.update(chosen_by=f"out of fold, {self.blend_folds} folds by query",
                              dev_predicted_counts={label: chosen.count(label) for label in labels})
        if self.budget is not None:
            self.blend["tokens"] = self.budget
        if path:
            self.blend["scoring"] = {key: path[key] for key in ("use", "score_max_len", "why")}
        if len(labels) == 2:
            self.blend["threshold"] = thresholds[0]  # the key two-label artifacts have always had
        self.digests, self._prefetched = None, {}  # new weights: saved by the next save_files
        if self.feedback_option and self.blend_folds:  # the stage reads the blend's out-of-fold grades
            self.learn_feedback(pairs, w * np.asarray(ce_d) + (1 - w) * np.asarray(scorer_d), self.seed)
        elif self.feedback_option:
            print("ce-blend: feedback=true needs blend_folds (out-of-fold grades of every train pair); no feedback "
                  "stage learned", file=sys.stderr)
        return self

    def _fit_beside(self, fit: list[Pair], options: dict):
        """Fit the scorer here and fine-tune the cross-encoder on a worker thread beside it (one core each); the
        fine-tuning's imports and base model are resolved here first (`cross_encoder.preload`), so the worker
        imports nothing for the first time. A failed fine-tuning is a HieraError naming the step; the scorer's
        fit finishes first and its embeddings stay in the on-disk cache, so a rerun does not embed them again."""
        from hiera_dspy.signals.cross_encoder import fine_tune, preload

        start = preload(self.scheme, base=options.get("base"), seed=options["seed"])
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ce-blend fine-tuning") as beside:
            tuning = beside.submit(fine_tune, fit, self.scheme, threads=1, start=start, **options)
            self.scorer_state.fit(fit)
            try:
                return tuning.result()
            except Exception as exc:  # noqa: BLE001 - any failure of the worker, named by its step
                raise HieraError(f"ce-blend: the cross-encoder's fine-tuning on {len(fit):,} train pairs failed "
                                 f"({type(exc).__name__}: {exc}); the scorer's fit finished first and its embeddings "
                                 "are in the embedding cache (unless it is off), so a rerun starts from them") from exc

    def _encoder_options(self, pairs: list[Pair]) -> dict:
        """`fine_tune`'s keywords: the configured ones, with ce_max_len="auto" resolved from `pairs`' lengths
        (recorded in `self.budget`; length-bucketed batches then)."""
        options = dict(self.ce_options)
        if options["max_len"] != "auto":
            return options
        from transformers import AutoTokenizer

        from hiera_dspy.signals.cross_encoder import base_folder
        from hiera_dspy.signals.pair_lengths import choose_max_len, describe

        self.budget = choose_max_len(pairs, AutoTokenizer.from_pretrained(options.get("base") or base_folder()),
                                     self.seed)
        print(f"ce-blend: {describe(self.budget)}", file=sys.stderr)
        return {**options, "max_len": self.budget["max_len"], "bucketed": True}

    def _out_of_fold(self, pairs: list[Pair], options: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(gold labels, scorer distributions, cross-encoder distributions) of every pair, each fold's from a
        scorer and a cross-encoder fitted on the other folds' queries."""
        from hiera_dspy.signals.cross_encoder import fine_tune

        labels = self.scheme.labels
        fold = query_folds(pairs, self.blend_folds, self.seed)
        scorer_d, ce_d = np.zeros((len(pairs), len(labels))), np.zeros((len(pairs), len(labels)))
        for k in range(self.blend_folds):
            mine = [i for i, f in enumerate(fold) if f == k]
            rest = [p for p, f in zip(pairs, fold) if f != k]
            held = [pairs[i] for i in mine]
            state = ScorerState(self.scheme, rest, self.scorer_state.embedder, self.scorer_state.C,
                                **self.scorer_state.options)
            scorer_d[mine] = distributions(state.scorer.predict_proba_many(held), labels)
            encoder = fine_tune(rest, self.scheme, **options)
            ce_d[mine] = encoder.grade_probs([(p.query, p.item_title, p.item_text) for p in held])
        return [p.label for p in pairs], scorer_d, ce_d

    def learned_from(self) -> list[str]:
        """What each part learned from, for the compile's report (after `prepare`)."""
        if self.blend is None:
            return []
        b = self.blend
        ce = f"{b['ce_pairs']:,} of them" if b.get("ce_pairs") is not None else "them"
        cuts = ", ".join(f"{t:.2f}" for t in b["thresholds"])
        where = (f"{b['dev_pairs']:,} train pairs scored {b['chosen_by']}" if "chosen_by" in b else
                 f"{b['dev_pairs']} held-out pairs of train queries neither model saw")
        lines = [f"scorer: {b['fit_pairs']:,} pairs", f"cross-encoder: {ce} (one epoch)",
                 (f"blend weight {b['weight']:.1f}, threshold(s) {cuts}: chosen on {where} (kappa "
                  f"{b['dev_kappa']:.3f} there)")]
        if "tokens" in b:
            from hiera_dspy.signals.pair_lengths import describe

            lines.append(f"cross-encoder reads: {describe(b['tokens'])}")
        if "scoring" in b:
            lines.append(f"scoring path: {b['scoring']['why']}")
        return lines

    def _scorer_dist(self, query: str, item_title: str, item_text: str) -> dict[str, float]:
        return self.scorer_state.score(query, item_title, item_text)

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Score pairs about to be judged with the cross-encoder in batches (`forward` then reads their scores);
        only the last call's pairs are kept, so memory stays bounded by one batch of work."""
        if self.encoder is not None and pairs:
            keys = [(p.query, p.item_title, p.item_text) for p in pairs]
            self._prefetched = dict(zip(keys, self.encoder.grade_probs(keys)))
            self.scorer_state.prefetch(pairs)
            self.warm_feedback(pairs)

    def base_distributions(self, pairs: Sequence[Pair]) -> np.ndarray:
        """(n, K) the blended grade distributions of `pairs` (the feedback stage's base judge)."""
        if self.encoder is None or self.blend is None:
            raise NotFitted("ce-blend is not fitted: call prepare(train) or load a compiled artifact")
        labels, w = self.scheme.labels, self.blend["weight"]
        scorer = distributions(self.scorer_state.scorer.predict_proba_many(list(pairs)), labels)
        ce = self.encoder.grade_probs([(p.query, p.item_title, p.item_text) for p in pairs])
        return w * np.asarray(ce) + (1 - w) * scorer

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The blended grade distribution's expected grade, cut at the chosen thresholds; `scores` is the blended
        distribution (two labels: P(top label) against the one threshold)."""
        if self.encoder is None or self.blend is None:
            raise NotFitted("ce-blend is not fitted: call prepare(train) or load a compiled artifact")
        labels = self.scheme.labels
        scorer = self._scorer_dist(query, item_title, item_text)
        ce = self._prefetched.get((query, item_title, item_text))
        if ce is None:
            ce = self.encoder.grade_probs([(query, item_title, item_text)])[0]
        w = self.blend["weight"]
        mixed = w * np.asarray(ce) + (1 - w) * distributions([scorer], labels)[0]
        label = labels[int(cut(expected_grade(mixed[None, :]), self.thresholds)[0])]
        top = len(labels) - 1
        prediction = dspy.Prediction(label=label, scores=dict(zip(labels, map(float, mixed))),
                                     cross_encoder=float(expected_grade(np.asarray(ce)[None, :])[0]) / top,
                                     scorer=float(expected_grade(distributions([scorer], labels))[0]) / top,
                                     routed="scorer", reached_llm=False, delegated=False)
        return self.with_feedback(prediction, query, item_title, item_text)

    @property
    def thresholds(self) -> list[float]:
        """The K-1 cuts on the blend's expected grade (an artifact from before graded ce-blend: its one threshold)."""
        return self.blend.get("thresholds") or [self.blend["threshold"]]

    def dump_extra(self) -> dict | None:
        """The scorer, the blend and the SHA-256 of every weight file (the weights: `save_files`)."""
        if self.blend is None:
            return None
        return {"scorer": self.scorer_state.dump(), "blend": self.blend, "cross_encoder": self.digests,
                **self.feedback_extra()}

    def load_extra(self, extra: dict) -> None:
        """Restore the scorer and the blend; the weights come with `load_files`."""
        self.scorer_state.load(extra["scorer"])
        self.blend, self.digests = dict(extra["blend"]), extra["cross_encoder"]
        self.load_feedback(extra)

    def save_files(self, folder: Path) -> None:
        """Write the cross-encoder's weights into `folder` and record their digests for `dump_extra`."""
        if self.encoder is not None:
            self.digests = self.encoder.save(folder)

    def load_files(self, folder: Path) -> None:
        """Load the weights `save_files` wrote, checked against the recorded digests (ValueError otherwise)."""
        from hiera_dspy.signals.cross_encoder import CrossEncoder

        if not self.digests:
            raise HieraError("the artifact records no cross-encoder weights: refit it (optimize.compile)")
        max_len = (self.blend or {}).get("tokens", {}).get("max_len", self.ce_options["max_len"])  # "auto": chosen
        self.encoder = CrossEncoder.load(folder, self.digests, int(max_len))
        self._prefetched = {}


@register("ce-blend", "A cross-encoder (MiniLM fine-tuned on train, ordinal for graded labels) blended with the "
          "learned scorer; weight and grade thresholds chosen on held-out train queries; no LM call",
          family="signals", lm_roles=(), options=SCORER_OPTIONS + CE_OPTIONS, **SCORER, **CE)
def _ce_blend(ctx: BuildContext, **config) -> CrossBlendProgram:
    return CrossBlendProgram(ctx, **config)
