"""late-lr: the offline passage judge. The learned scorer (`signals.RelevanceScorer`) over lexical features and late
interaction (`signals/late_interaction.py`: MaxSim over all-MiniLM-L6-v2's token vectors, the best match of the query
token the passage covers worst, and the sentence cosine of the same pass: `features="late+coverage"`), its grade
distribution's expected grade cut at thresholds chosen out of fold; no LM call.

Why a separate judge: on graded passages a classifier's most probable grade is almost always the commonest one (TREC
DL 2020: 68% of the judgments are 0, and embed-lr's argmax says 0 for 99% of the pairs), and a sentence vector misses
the passage that answers in one clause. Here the K-1 cuts on the expected grade are chosen (by quadratic-weighted
kappa, the default `grade_objective`, or Cohen's kappa) on predictions no model made for its own query: the train pairs are
split into `threshold_folds` folds by query, a scorer fitted on the other folds scores each fold, and the cuts are
chosen on all of them (`grades.best_thresholds`); the judge itself is then fitted on every train pair. The features
are computed once (`RelevanceScorer.train_rows`; the idf table is the whole train split's, an unsupervised statistic).
Two labels: the one cut is on P(top label), which is their expected grade.

Why quadratic-weighted kappa by default: on a skewed scheme plain kappa places the upper cuts where almost no pair
reaches them (TREC DL 2020, 5-fold: 0.5% of the pairs called grade 2 where the truth has 9.0%; binary kappa 0.111),
while the weighted form, which counts a grade-2 call on a grade-3 pair as nearly right, calls 8.4% grade 2 at the
same four-grade kappa (0.206 against 0.211) and doubles the binary view's (0.212); a collection with more relevant
passages than the one the cuts were chosen on loses less with it.

Measured (`bench/trecdl.py`, TREC DL 2020, 5-fold cross-validation by query): see docs/learning.md, "TREC DL".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import dspy
import numpy as np

from hiera_dspy.errors import NotFitted
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.feedback import FeedbackJudge, scorer_out_of_fold
from hiera_dspy.methods.grades import best_thresholds, cut, distributions, expected_grade, objective
from hiera_dspy.methods.learned_scorer import SCORER_OPTIONS, ScorerLearner, ScorerState
from hiera_dspy.records import Pair
from hiera_dspy.signals.late_interaction import pass_in_use

LATE = {"embedder": "lexical", "C": 1.0, "features": "late+coverage", "threshold_folds": 5,
        "grade_objective": "weighted_kappa", "seed": 0}


class LateProgram(ScorerLearner, FeedbackJudge, dspy.Module):
    """late-lr (see the module doc): a scorer and the grade thresholds on its expected grade."""

    def __init__(self, ctx: BuildContext, *, embedder: str, C: float, threshold_folds: int, seed: int,
                 grade_objective: str, feedback: bool | None = None, **options):
        super().__init__()
        self.feedback_option = feedback
        self.scheme, self.seed, self.threshold_folds = ctx.scheme, int(seed), int(threshold_folds)
        self.objective = grade_objective
        objective(self.objective)  # an unknown name fails at build
        self.scorer_state = ScorerState(ctx.scheme, ctx.train, embedder, C, **options)
        self.grading: dict | None = None
        self.late_pass: str | None = None  # the pass this process reads ("int8", "fp32"), once it has made one

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None):
        """Fit the scorer on every train pair and choose the thresholds out of fold (module doc); `dev` is unused."""
        labels = self.scheme.labels
        pairs = [p for p in (train or self.scorer_state.train) if p.label in labels]
        out_of_fold, rows = scorer_out_of_fold(self.scorer_state, pairs, self.threshold_folds, self.seed,
                                               "late-lr: threshold_folds")
        gold = np.array([labels.index(p.label) for p in pairs])
        value, thresholds = best_thresholds(gold, expected_grade(out_of_fold), len(labels), objective(self.objective))
        self.scorer_state.fit(pairs, rows)
        self.late_pass = pass_in_use()
        self.learn_feedback(pairs, out_of_fold, self.seed)
        predicted = cut(expected_grade(out_of_fold), thresholds)
        self.grading = {"thresholds": list(thresholds), "objective": self.objective, "out_of_fold": value,
                        "chosen_by": f"out of fold, {self.threshold_folds} folds by query", "pairs": len(pairs),
                        "label_counts": {label: int((gold == i).sum()) for i, label in enumerate(labels)},
                        "predicted_counts": {label: int((predicted == i).sum()) for i, label in enumerate(labels)},
                        **({"late_pass": self.late_pass} if self.late_pass else {})}
        print(f"late-lr: thresholds {', '.join(f'{t:.3f}' for t in thresholds)} chosen {self.grading['chosen_by']} "
              f"({self.objective} {value:.3f} on {len(pairs):,} train pairs)", file=sys.stderr)
        return self

    def learned_from(self) -> list[str]:
        """What the judge learned from, for the compile's report (after `prepare`)."""
        if self.grading is None:
            return []
        g = self.grading
        cuts = ", ".join(f"{t:.3f}" for t in g["thresholds"])
        return [f"scorer: {g['pairs']:,} pairs ({self.scorer_state.options.get('features', 'base')} features)",
                f"grade thresholds {cuts}: chosen {g['chosen_by']} ({g['objective']} {g['out_of_fold']:.3f} there)",
                *self.feedback_learned_from()]

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Score the pairs about to be judged in one batch (`ScorerState.prefetch`)."""
        self.scorer_state.prefetch(pairs)
        self._check_pass()
        self.warm_feedback(pairs)

    def base_distributions(self, pairs: Sequence[Pair]) -> np.ndarray:
        """(n, K) the scorer's grade distributions of `pairs` (the feedback stage's base judge)."""
        return distributions(self.scorer_state.scorer.predict_proba_many(list(pairs)), self.scheme.labels)

    def _check_pass(self) -> None:
        """Once this process has made a late-interaction pass: say on stderr, once, when it is not the one the
        thresholds were chosen on (int8 refused here: fp32 features under int8 cuts); the judgment goes on."""
        if self.late_pass is not None:
            return
        here, compiled = pass_in_use(), (self.grading or {}).get("late_pass")
        if here and compiled and here != compiled:
            print(f"late-lr: compiled on the {compiled} late-interaction pass, judging on {here} here; its thresholds "
                  f"were chosen on {compiled} features (recompile on this machine to choose them on {here})",
                  file=sys.stderr)
        self.late_pass = here

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The expected grade of the scorer's distribution cut at the chosen thresholds; `scores` the distribution."""
        if self.grading is None:
            raise NotFitted("late-lr is not fitted: call prepare(train) or load a compiled artifact")
        scores = self.scorer_state.score(query, item_title, item_text)
        self._check_pass()
        dist = np.array([[scores[label] for label in self.scheme.labels]])
        label = self.scheme.labels[int(cut(expected_grade(dist), self.grading["thresholds"])[0])]
        prediction = dspy.Prediction(label=label, scores=scores, routed="scorer", reached_llm=False, delegated=False)
        return self.with_feedback(prediction, query, item_title, item_text)

    def dump_extra(self) -> dict | None:
        """The scorer and the grading (thresholds and their evidence)."""
        scorer = self.scorer_state.dump()
        if scorer is None or self.grading is None:
            return None
        return {**scorer, "grading": self.grading, **self.feedback_extra()}

    def load_extra(self, extra: dict) -> None:
        """Restore what `dump_extra` saved."""
        self.scorer_state.load(extra)
        self.grading = dict(extra["grading"])
        self.load_feedback(extra)


@register("late-lr", "The passage judge: the learned scorer over lexical features and late interaction (MaxSim over "
          "MiniLM's token vectors and the weakest-covered query token), its expected grade cut at thresholds chosen "
          "out of fold by query; no LM call",
          family="signals", lm_roles=(), options=SCORER_OPTIONS + ("feedback",), **LATE)
def _late_lr(ctx: BuildContext, **config) -> LateProgram:
    return LateProgram(ctx, **config)
