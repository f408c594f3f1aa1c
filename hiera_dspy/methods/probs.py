"""Single-call judges with label probabilities, and stacking them with the learned scorer (family "probs").

- zero-shot+probs: the Zero-Shot prompt; `label_probs` read from token log-probabilities at the label position
  (`hiera_dspy.methods.label_probs`) and `expected_relevance` (sum of grade x probability). `cuts` (expected-relevance
  thresholds, one per label boundary, e.g. tuned on dev with `label_probs.tune_cuts`) pick the label instead of the
  sampled one.
- reasoning+probs: the same, with one or two sentences of reasoning before the label (`signatures.probs`).
- stacked: the learned scorer's distribution and the LLM's (`judge`: zero-shot | reasoning | hiera) as features of a
  logistic regression (`hiera_dspy.signals.stacking`), fitted on train by `prepare(train, dev)` (the LLM judges every
  train pair once; its calls are cached, so a killed prepare resumes). With `llm_share` < 1 it is a cascade: a pair
  whose top scorer probability is >= tau (picked on dev by the share rule, no labels) keeps the scorer's label with no
  LM call; the others get the stacked combination of both distributions instead of the LLM's label alone.
  judge=hiera reads the distribution at HIERA's final Judge step (`HieraProbJudge`): several calls a pair, for hosted
  models; on the embedded 1.5B model fitting it takes hours, so it is tested with loopback servers, not benchmarked.

Endpoints without log-probabilities give no `label_probs`: the single-call judges then keep the sampled label, and the
stacker reads "LLM distribution missing" (a one-hot of the sampled label is not a probability and is not used).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextvars import ContextVar

import dspy

from hiera_dspy.errors import HieraError, NotFitted
from hiera_dspy.lm.steps import run_step
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.label_probs import ProbPredict, expected_relevance, label_for
from hiera_dspy.methods.learned_scorer import SCORER, ScorerState, tau_for_share, top
from hiera_dspy.methods.learning import Learner
from hiera_dspy.records import Pair
from hiera_dspy.signals.stacking import Stacker, out_of_fold
from hiera_dspy.untrusted.blocks import item_block
from signatures import with_labels
from signatures.baselines import ZeroShotJudgment
from signatures.probs import ReasonedJudgment

JUDGES = {"zero-shot": (ZeroShotJudgment, "zero_shot_probs"), "reasoning": (ReasonedJudgment, "reasoning_probs")}


def out_of_fold_scores(scheme, train: Sequence[Pair], embedder="auto", C: float = 1.0) -> list[dict[str, float]]:
    """The scorer's distribution for every train pair from a scorer fitted on the other folds (the stacker's scorer
    features: `stacked` fits on these, and so does bench/local_probs.py)."""

    def fit_predict(fold_train, fold_test):
        return ScorerState(scheme, fold_train, embedder, C).scorer.predict_proba_many(list(fold_test))

    return out_of_fold(fit_predict, list(train))


class ProbJudge(dspy.Module):
    """One call; the label, its distribution over the scheme's labels and the expected relevance."""

    def __init__(self, ctx: BuildContext, judge: str = "zero-shot", cuts: Sequence[float] | None = None):
        super().__init__()
        if judge not in JUDGES:
            raise HieraError(f"judge must be one of {sorted(JUDGES)}; got {judge!r}")
        signature, self.step_name = JUDGES[judge]
        self.scheme, self.lms = ctx.scheme, ctx.lms
        self.cuts = list(cuts) if cuts else None
        if self.cuts is not None and len(self.cuts) != len(ctx.scheme.labels) - 1:
            raise HieraError(f"cuts needs {len(ctx.scheme.labels) - 1} values for {list(ctx.scheme.labels)}")
        self.judge = ProbPredict(with_labels(signature, ctx.scheme), ctx.scheme.labels)

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge one pair: the sampled label with its label distribution; with fitted cuts the label comes from the
        expected relevance."""
        out = run_step(f"{self.step_name}.judge", "judge", self.lms, self.judge, self.scheme, query=query,
                       item=item_block(item_title, item_text), label_definitions=self.scheme.describe())
        relevance = out.get("expected_relevance")
        label = out.label
        if self.cuts is not None and relevance is not None:
            label = label_for(relevance, self.scheme.labels, self.cuts)
        return dspy.Prediction(label=label, sampled_label=out.label, label_probs=out.get("label_probs"),
                               expected_relevance=relevance, reasoning=out.get("reasoning"),
                               parse_recovered=out.get("parse_recovered"))


_final_dist: ContextVar[list | None] = ContextVar("hiera_final_label_probs", default=None)


class _RecordingProbPredict(ProbPredict):
    """A ProbPredict that leaves its latest call's distribution in `_final_dist` (None when the call failed)."""

    def forward(self, **kwargs):
        box = _final_dist.get()
        if box is not None:
            box[0] = None
        out = super().forward(**kwargs)
        if box is not None:
            box[0] = out.get("label_probs")
        return out

    async def aforward(self, **kwargs):
        box = _final_dist.get()
        if box is not None:
            box[0] = None
        out = await super().aforward(**kwargs)
        if box is not None:
            box[0] = out.get("label_probs")
        return out


def _read_probs(predictor: dspy.Module, labels: Sequence[str]) -> None:
    """Make a Predict (or a ChainOfThought's inner Predict) read label probabilities, keeping its state."""
    inner = predictor.predict if isinstance(predictor, dspy.ChainOfThought) else predictor
    inner.__class__ = _RecordingProbPredict
    inner.labels = tuple(labels)


class HieraProbJudge(dspy.Module):
    """HIERA (the `hiera` method's graph and defaults) whose Judge reads label probabilities at its final step: the
    decision, or the triage when it labels directly. Several LM calls a pair: on the embedded 1.5B model that is
    4-6 calls and minutes per train pair, so `stacked --set judge=hiera` is for hosted models (not benchmarked
    locally)."""

    def __init__(self, ctx: BuildContext):
        super().__init__()
        from hiera_dspy.methods import build

        self.hiera = build("hiera", ctx)
        _read_probs(self.hiera.judge.triage, ctx.scheme.labels)
        _read_probs(self.hiera.judge.decide, ctx.scheme.labels)

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge one pair through the hierarchy; label_probs is the final step's label distribution."""
        box: list = [None]
        token = _final_dist.set(box)
        try:
            out = self.hiera(query=query, item_title=item_title, item_text=item_text)
        finally:
            _final_dist.reset(token)
        return dspy.Prediction(label=out.label, label_probs=box[0], reasoning=out.get("reasoning"),
                               delegated=out.get("delegated"), parse_recovered=out.get("parse_recovered"))


class StackedProgram(Learner, dspy.Module):
    """The scorer and a ProbJudge, combined by a Stacker; optionally a cascade (`llm_share` < 1)."""

    def __init__(self, ctx: BuildContext, judge: str = "zero-shot", llm_share: float = 1.0, stack_C: float = 1.0,
                 embedder="auto", C: float = 1.0):
        super().__init__()
        self.scheme, self.llm_share, self.stack_C = ctx.scheme, float(llm_share), float(stack_C)
        self.scorer_state = ScorerState(ctx.scheme, ctx.train, embedder, C)
        self.llm = HieraProbJudge(ctx) if judge == "hiera" else ProbJudge(ctx, judge)
        self.stacker: Stacker | None = None

    # ── fitting ──
    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None) -> "StackedProgram":
        """Fit the scorer on train, the stacker on (out-of-fold scorer, LLM) distributions of the train pairs, and
        (cascade only) tau on dev by the share rule."""
        train = [p for p in (train or self.scorer_state.train) if p.label in self.scheme.labels]
        self.scorer_state.fit(train)
        scorer_dists = out_of_fold_scores(self.scheme, train, self.scorer_state.embedder, self.scorer_state.C)
        llm_dists = [self.llm_distribution(p, i, len(train)) for i, p in enumerate(train)]
        self.stacker = Stacker(self.scheme.labels, self.stack_C).fit(scorer_dists, llm_dists,
                                                                      [p.label for p in train])
        if self.llm_share < 1.0 and dev:
            probs = [top(d)[1] for d in self.scorer_state.scorer.predict_proba_many(list(dev))]
            self.scorer_state.tau = tau_for_share(probs, self.llm_share)
        return self

    def learned_state(self) -> dict:
        """The cascade's {"tau": ...} (part of its run's identity); {} without one (llm_share 1)."""
        return {"tau": self.scorer_state.tau} if self.scorer_state.tau is not None else {}

    def llm_distribution(self, pair: Pair, i: int = 0, n: int = 0) -> dict | None:
        """The LLM's label distribution for one pair (None when the call failed or gave none)."""
        try:
            out = self.llm(**pair.inputs())
        except Exception as exc:  # noqa: BLE001 - a failed train judgment is a missing feature, counted on stderr
            print(f"stacked: train pair {pair.id}: LLM failed ({type(exc).__name__}); its feature is 'missing'",
                  file=sys.stderr)
            return None
        if n and (i + 1) % 25 == 0:
            print(f"stacked: LLM distributions for {i + 1}/{n} train pairs", file=sys.stderr)
        return out.get("label_probs")

    def dump_extra(self) -> dict | None:
        """The fitted scorer and stacker state for an artifact; None before fitting."""
        scorer = self.scorer_state.dump()
        if scorer is None or self.stacker is None:
            return None
        return {**scorer, "stacker": self.stacker.to_dict()}

    def load_extra(self, extra: dict) -> None:
        """Restore the scorer and stacker from an artifact's `dump_extra()` state."""
        self.scorer_state.load(extra)
        self.stacker = Stacker.from_dict(extra["stacker"])

    # ── judging ──
    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge one pair: a confident scorer answers alone (when llm_share < 1); otherwise the stacker combines
        scorer and LLM distributions."""
        if self.stacker is None:
            raise NotFitted("stacked: not fitted; call prepare(train, dev) or load a compiled artifact")
        scores = self.scorer_state.score(query, item_title, item_text)
        if self.llm_share < 1.0 and top(scores)[1] >= (self.scorer_state.tau if self.scorer_state.tau is not None else 2.0):
            return dspy.Prediction(label=top(scores)[0], scores=scores, routed="scorer", reached_llm=False)
        out = self.llm(query=query, item_title=item_title, item_text=item_text)
        probs = self.stacker.predict_proba(scores, out.get("label_probs"))
        return dspy.Prediction(label=top(probs)[0], label_probs=probs,
                               expected_relevance=expected_relevance(probs, self.scheme.labels), scores=scores,
                               llm_label=out.label, llm_probs=out.get("label_probs"), reasoning=out.get("reasoning"),
                               routed="llm", reached_llm=True, parse_recovered=out.get("parse_recovered"))


PROBS = dict(family="probs")


@register("zero-shot+probs", "Zero-Shot with label probabilities from token log-probabilities (expected relevance; "
          "optional cuts)", options=("cuts",), **PROBS)
def _zero_shot_probs(ctx: BuildContext, **config) -> ProbJudge:
    return ProbJudge(ctx, "zero-shot", **config)


@register("reasoning+probs", "Reasoning first (one or two sentences), then the label with its probabilities",
          options=("cuts",), **PROBS)
def _reasoning_probs(ctx: BuildContext, **config) -> ProbJudge:
    return ProbJudge(ctx, "reasoning", **config)


@register("stacked", "Logistic regression over the learned scorer's and the LLM's label distributions (fitted on "
          "train); llm_share < 1 makes it a cascade that combines both on the pairs it routes", judge="zero-shot",
          llm_share=1.0, stack_C=1.0, **SCORER, **PROBS)
def _stacked(ctx: BuildContext, **config) -> StackedProgram:
    return StackedProgram(ctx, **config)
