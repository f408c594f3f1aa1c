"""Methods of the "signals" family: HIERA with the learned relevance scorer (`hiera_dspy.signals.RelevanceScorer`).

Names: "signals" is the name of this method family (`python -m eval.methods`), of the package `hiera_dspy.signals`
(the scorer and its lexical and embedding features) and of the config key `signals=true` (hiera with the scorer's
evidence, i.e. hiera+signals). A program's fitted scorer is its `scorer_state` (a `ScorerState`); what the scorer
tells an LLM agent is its `scorer_evidence` input.

- embed-lr: the scorer alone, no LM call: `label` is its most probable label, `scores` its label distribution.
- hiera+signals (= hiera with config signals=True): the Judge (triage, decision) and the Relation Analyzer (plan,
  synthesis) also read the scorer's distribution as their `scorer_evidence` input, described as evidence that can be
  wrong.
- hiera-cascade: a pair whose top scorer probability is >= tau gets the scorer's label with no LM call; the rest go
  through hiera+signals. `routed` ("scorer" | "llm") and `reached_llm` say which.

Each is a `Learner` (hiera_dspy.methods.learning): `prepare(train, dev)` fits the scorer on train and picks the
cascade's tau on dev; `learned_state()` is the cascade's {"tau": ...} (part of its run id), {} for the others. A
cascade whose tau was neither given, picked by prepare nor loaded refuses to judge. The scorer is saved in the
artifact through `dump_extra()` / `load_extra()`; a loaded judge never refits. Config (defaults once, in the
registrations below: `SCORER`, `CASCADE`; the graph's in `methods/graphs.py`): embedder "auto" (all-MiniLM-L6-v2 if
installed, else lexical) | "lexical" | a model id; C (inverse regularisation); cascade only: llm_share (max share of
dev pairs sent to the LLM), tau_rule, tau (fixed threshold).

tau rules (no LM call: the LLM's dev labels would cost a full HIERA run on dev):
- "share": the largest tau that sends at most `llm_share` of the dev pairs to the LLM (a quantile of the dev top
  probabilities).
- "kappa": among the taus that respect the same share limit, the one maximising Cohen's kappa of the scorer's labels on
  the pairs it keeps (a proxy for the cascade's kappa; ties go to the lower tau, i.e. fewer LM calls).
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Sequence

import dspy
import numpy as np

from hiera_dspy.errors import HieraError, NotFitted
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm import steps
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.feedback import FOLDS, FeedbackJudge, scorer_out_of_fold
from hiera_dspy.methods.graphs import HIERA
from hiera_dspy.methods.hiera import HieraProgram
from hiera_dspy.methods.learning import Learner
from hiera_dspy.metrics.agreement import kappa_of_labels
from hiera_dspy.records import Pair
from hiera_dspy.signals import RelevanceScorer
from signatures.signals import SCORER_EVIDENCE_FIELD, with_scorer_evidence

SCORER = {"embedder": "auto", "C": 1.0}  # the scorer's config, every method that fits one
SCORER_OPTIONS = ("features", "class_weight", "C_grid", "model")  # optional scorer keys (RelevanceScorer's; unset: not in ids)
CASCADE = {"llm_share": 0.3, "tau_rule": "share"}  # hiera-cascade's own config (besides HIERA's and SCORER's)


class ScorerState:
    """The fitted scorer and the threshold tau of a cascade using it; shared, never copied: an optimizer's candidates
    use one scorer."""

    def __init__(self, scheme: LabelScheme, train: Sequence[Pair], embedder: str = SCORER["embedder"],
                 C: float = SCORER["C"], **options):
        self.scheme, self.embedder, self.C = scheme, embedder, C
        self.options = {k: v for k, v in options.items() if v is not None}  # SCORER_OPTIONS given
        self.train = [p for p in train if p.label in scheme.labels]
        self.tau: float | None = None
        self._scorer: RelevanceScorer | None = None
        self._lock = threading.Lock()
        self._prefetched: dict[tuple[str, str, str], dict[str, float]] = {}

    def __deepcopy__(self, memo):
        return self

    @property
    def scorer(self) -> RelevanceScorer:
        """The fitted scorer (fitted on the build context's train pairs on first use when `fit` was not called)."""
        with self._lock:
            if self._scorer is None:
                self._scorer = self._fit(self.train)
        return self._scorer

    def fit(self, pairs: Sequence[Pair], rows=None) -> None:
        """Fit the scorer on the labelled `pairs` (pairs without a label of the scheme are left out; `rows`: their
        feature rows computed beforehand, `RelevanceScorer.train_rows`, one per pair given, all labelled)."""
        scorer = self._fit([p for p in pairs if p.label in self.scheme.labels], rows)
        with self._lock:
            self._scorer, self._prefetched = scorer, {}

    def new_scorer(self) -> RelevanceScorer:
        """An unfitted scorer of this state's options and embedder."""
        embedder = None if self.embedder == "lexical" else self.embedder
        return RelevanceScorer(self.scheme, embedder=embedder, C=self.C, **self.options)

    def _fit(self, pairs: list[Pair], rows=None) -> RelevanceScorer:
        if not pairs:
            raise NotFitted("the relevance scorer needs labelled train pairs: build with BuildContext(train=...), "
                               "call prepare(train, dev), or load a compiled artifact")
        return self.new_scorer().fit(pairs, rows)

    def score(self, query: str, item_title: str, item_text: str) -> dict[str, float]:
        """The label distribution, as an accounted step (role "scorer", no LM call); a prefetched pair's is read
        from the batch `prefetch` computed."""
        with steps.step("scorer.predict", "scorer", None) as record:
            scores = self._prefetched.get((query, item_title, item_text))
            if scores is None:
                scores = self.scorer.predict_proba(Pair("", query, item_title, item_text, None, "", ""))
            record.outputs = {"scores": scores}
        return scores

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Score pairs about to be judged in one batch (their texts embedded together, not one call a pair); only
        the last call's pairs are kept, so memory stays bounded by one batch of work."""
        if pairs:
            keys = [(p.query, p.item_title, p.item_text) for p in pairs]
            self._prefetched = dict(zip(keys, self.scorer.predict_proba_many(list(pairs))))

    def dump(self) -> dict | None:
        """The artifact's `extra`: the scorer and tau (None when there is nothing to fit on)."""
        try:
            return {"scorer": self.scorer.to_dict(), "tau": self.tau}
        except RuntimeError:  # nothing to fit on: an artifact without a scorer
            return None

    def load(self, extra: dict) -> None:
        """Restore the scorer and tau from an artifact's `extra`."""
        with self._lock:
            self._scorer, self._prefetched = RelevanceScorer.from_dict(extra["scorer"]), {}
        self.tau = extra.get("tau", self.tau)


def top(scores: dict[str, float]) -> tuple[str, float]:
    """The most probable label and its probability (ties go to the less relevant label: scheme order)."""
    label = max(scores, key=scores.get)
    return label, scores[label]


def format_evidence(scores: dict[str, float]) -> str:
    """The scorer's distribution as the `scorer_evidence` text an LLM agent reads."""
    dist = ", ".join(f"{label} {p:.2f}" for label, p in scores.items())
    return f"learned scorer: {dist} (most probable: {top(scores)[0]})"


def read_evidence(owner: dspy.Module, attr: str) -> None:
    """Give owner.attr (a Predict, or a ChainOfThought's inner Predict) the `scorer_evidence` input field: the same
    prompt plus that field, filled by the caller like every other input."""
    module = getattr(owner, attr)
    if isinstance(module, dspy.ChainOfThought):
        owner, attr, module = module, "predict", module.predict
    replacement = dspy.Predict(with_scorer_evidence(module.signature), **module.config)
    replacement.profile = getattr(module, "profile", None)  # the model profile its prompt was fitted to
    setattr(owner, attr, replacement)


class ScorerLearner(Learner):
    """prepare / dump_extra / load_extra of a program holding `self.scorer_state` (a ScorerState)."""

    scorer_state: ScorerState

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None):
        """Fit the scorer on `train` (default: the build context's train pairs); dev is unused."""
        if train:
            self.scorer_state.fit(train)
        else:
            self.scorer_state.scorer  # noqa: B018 - fits on the build context's train pairs
        return self

    def dump_extra(self) -> dict | None:
        """What the artifact keeps beside the DSPy state: the scorer (and tau)."""
        return self.scorer_state.dump()

    def load_extra(self, extra: dict) -> None:
        """Restore what `dump_extra` saved."""
        self.scorer_state.load(extra)


class ScorerProgram(ScorerLearner, FeedbackJudge, dspy.Module):
    """embed-lr: the learned scorer alone (no predictors, no LM call); with `feedback=true`, the feedback stage
    (`methods/feedback.py`) learned on the scorer's out-of-fold distributions."""

    def __init__(self, ctx: BuildContext, *, embedder: str, C: float, feedback: bool | None = None, **options):
        super().__init__()
        self.scheme, self.feedback_option = ctx.scheme, feedback
        self.scorer_state = ScorerState(ctx.scheme, ctx.train, embedder, C, **options)

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None):
        """Fit the scorer on `train`; with `feedback=true`, then the feedback stage on its out-of-fold scores."""
        super().prepare(train, dev)
        if self.feedback_option:
            pairs = [p for p in (train or self.scorer_state.train) if p.label in self.scheme.labels]
            folds = min(FOLDS, len({p.query_id or p.query for p in pairs}))
            self.learn_feedback(pairs, scorer_out_of_fold(self.scorer_state, pairs, folds, 0, "embed-lr: feedback")[0])
        return self

    def base_distributions(self, pairs: Sequence[Pair]) -> np.ndarray:
        """(n, K) the scorer's distributions (the feedback stage's base judge)."""
        return np.array([[d[label] for label in self.scheme.labels]
                         for d in self.scorer_state.scorer.predict_proba_many(list(pairs))])

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Score the pairs about to be judged in one batch (`ScorerState.prefetch`)."""
        self.scorer_state.prefetch(pairs)
        self.warm_feedback(pairs)

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The scorer's most probable label and its distribution (re-judged with its query's known judgments)."""
        scores = self.scorer_state.score(query, item_title, item_text)
        prediction = dspy.Prediction(label=top(scores)[0], scores=scores, routed="scorer", reached_llm=False,
                                     delegated=False)
        return self.with_feedback(prediction, query, item_title, item_text)

    def dump_extra(self) -> dict | None:
        """The scorer (and tau), and the feedback stage where one was learned."""
        scorer = self.scorer_state.dump()
        return None if scorer is None else {**scorer, **self.feedback_extra()}

    def load_extra(self, extra: dict) -> None:
        """Restore what `dump_extra` saved."""
        self.scorer_state.load(extra)
        self.load_feedback(extra)


class HieraSignalsProgram(ScorerLearner, HieraProgram):
    """HIERA whose Judge and Relation Analyzer also read the scorer's label distribution (`scorer_evidence`)."""

    def __init__(self, ctx: BuildContext, *, embedder: str, C: float, **graph):
        super().__init__(ctx, **graph)
        self.scorer_state = ScorerState(ctx.scheme, ctx.train, embedder, C)
        read_evidence(self.judge, "triage")
        read_evidence(self.judge, "decide")
        if self.relation is not None:
            read_evidence(self.relation, "plan")
            read_evidence(self.relation, "synthesize")

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """HIERA with the scorer's distribution as evidence; `scores` is that distribution."""
        scores = self.scorer_state.score(query, item_title, item_text)
        return self._hiera(query, item_title, item_text, scores)

    async def aforward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """`forward` through DSPy's async path (the scorer runs inline: no LM call)."""
        scores = self.scorer_state.score(query, item_title, item_text)
        return await self._ahiera(query, item_title, item_text, scores)

    def _hiera(self, query, item_title, item_text, scores) -> dspy.Prediction:
        evidence = {SCORER_EVIDENCE_FIELD: format_evidence(scores)}
        prediction = HieraProgram.forward(self, query, item_title, item_text, **evidence)
        prediction["scores"] = scores
        return prediction

    async def _ahiera(self, query, item_title, item_text, scores) -> dspy.Prediction:
        evidence = {SCORER_EVIDENCE_FIELD: format_evidence(scores)}
        prediction = await HieraProgram.aforward(self, query, item_title, item_text, **evidence)
        prediction["scores"] = scores
        return prediction


class HieraCascadeProgram(HieraSignalsProgram):
    """Scorer first: top probability >= tau -> its label, no LM call; else hiera+signals."""

    def __init__(self, ctx: BuildContext, *, llm_share: float, tau_rule: str, tau: float | None = None, **config):
        super().__init__(ctx, **config)
        if tau_rule not in TAU_RULES:
            raise HieraError(f"tau_rule must be one of {sorted(TAU_RULES)}; got {tau_rule!r}")
        self.llm_share, self.tau_rule, self.fixed_tau = float(llm_share), tau_rule, tau
        self.scorer_state.tau = tau  # a fixed tau; else prepare() picks one on dev

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None) -> HieraCascadeProgram:
        """Fit the scorer on train, then pick tau on dev (labels read only by tau_rule="kappa"); with no dev pairs,
        on the train pairs (said on stderr). A fixed `tau` is kept."""
        super().prepare(train)
        if self.fixed_tau is not None:
            self.scorer_state.tau = self.fixed_tau
        elif dev:
            self.scorer_state.tau = self.pick_tau(dev)
        else:
            print(f"hiera-cascade: no dev pairs to pick tau on; picking it on the {len(self.scorer_state.train)} "
                  "train pairs", file=sys.stderr)
            self.scorer_state.tau = self.pick_tau(self.scorer_state.train)
        return self

    def learned_state(self) -> dict:
        """{"tau": tau}: the threshold is part of the run's identity."""
        return {"tau": self.tau}

    def reads_dev_labels(self) -> bool:
        """tau_rule="kappa" picks tau with the dev labels (a fixed tau reads none)."""
        return self.tau_rule == "kappa" and self.fixed_tau is None

    def pick_tau(self, pairs: Sequence[Pair]) -> float:
        """tau by this cascade's rule on `pairs` (no LM call)."""
        dists = self.scorer_state.scorer.predict_proba_many(list(pairs))
        labels, probs = zip(*(top(d) for d in dists))
        return TAU_RULES[self.tau_rule](list(probs), self.llm_share, list(labels), [p.label for p in pairs])

    @property
    def tau(self) -> float:
        """The threshold: given (config tau), picked by `prepare`, or loaded from an artifact. Reading it changes
        nothing; a cascade with none raises."""
        if self.scorer_state.tau is None:
            raise NotFitted("hiera-cascade has no tau yet: call prepare(train, dev) (eval.run does), load a "
                               "compiled judge (optimize.compile), or set tau")
        return self.scorer_state.tau

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The scorer's label when it is sure (top probability >= tau), else hiera+signals."""
        scores = self.scorer_state.score(query, item_title, item_text)
        if top(scores)[1] >= self.tau:
            return self._scorer_label(scores)
        return self._escalated(self._hiera(query, item_title, item_text, scores))

    async def aforward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """`forward` through DSPy's async path."""
        scores = self.scorer_state.score(query, item_title, item_text)
        if top(scores)[1] >= self.tau:
            return self._scorer_label(scores)
        return self._escalated(await self._ahiera(query, item_title, item_text, scores))

    @staticmethod
    def _scorer_label(scores: dict[str, float]) -> dspy.Prediction:
        return dspy.Prediction(label=top(scores)[0], scores=scores, cascade="scorer", routed="scorer",
                               reached_llm=False, delegated=False)

    @staticmethod
    def _escalated(prediction: dspy.Prediction) -> dspy.Prediction:
        prediction["cascade"] = prediction["routed"] = "llm"
        prediction["reached_llm"] = True
        return prediction


def tau_for_share(top_probs: list[float], llm_share: float, *_) -> float:
    """The largest tau with at most floor(llm_share * n) of the top probabilities below it."""
    ranked = sorted(top_probs)
    k = math.floor(max(0.0, llm_share) * len(ranked) + 1e-9)
    return ranked[k] if k < len(ranked) else math.nextafter(1.0, 2.0)  # above every probability: all to the LLM


def tau_for_kappa(top_probs: list[float], llm_share: float, labels: list[str], gold: list[str]) -> float:
    """Among taus within the share limit, the one maximising kappa of the scorer-routed pairs (ties: lower tau)."""
    limit = tau_for_share(top_probs, llm_share)
    best, best_kappa = min(top_probs), -math.inf
    for tau in sorted(set(top_probs)):
        if tau > limit:
            break
        kept = [(g, y) for p, y, g in zip(top_probs, labels, gold) if p >= tau]
        kappa = kappa_of_labels([g for g, _ in kept], [y for _, y in kept])
        if kappa > best_kappa:
            best, best_kappa = tau, kappa
    return best


TAU_RULES = {"share": tau_for_share, "kappa": tau_for_kappa}


def _graph(config: dict) -> dict:
    config.pop("signals", None)
    config["specialists"] = tuple(config.get("specialists", ()))
    return config


@register("embed-lr", "Learned scorer alone: logistic regression over lexical + embedding features, no LM call",
          family="signals", lm_roles=(), options=SCORER_OPTIONS + ("feedback",), **SCORER)
def _embed_lr(ctx: BuildContext, **config) -> ScorerProgram:
    return ScorerProgram(ctx, **config)


@register("hiera+signals", "HIERA whose Judge and Relation Analyzer also read the learned scorer's label distribution",
          family="signals", **HIERA, **SCORER, signals=True)
def _hiera_signals(ctx: BuildContext, **config) -> HieraSignalsProgram:
    return HieraSignalsProgram(ctx, **_graph(config))


@register("hiera-cascade", "Cascade: the learned scorer labels the pairs it is sure of (top probability >= tau, picked "
          "on dev for an LLM share); hiera+signals the rest", family="signals", options=("tau",), **HIERA, **SCORER,
          **CASCADE)
def _hiera_cascade(ctx: BuildContext, **config) -> HieraCascadeProgram:
    return HieraCascadeProgram(ctx, **_graph(config))
