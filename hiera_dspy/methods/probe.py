"""A linear probe on the embedded LLM's hidden state, alone and stacked with the learned scorer (family "probe").

The LLM reads a relevance question about the pair; the final hidden state of its last token (`methods.probe_states`,
llama.cpp embedding mode, no text generated) is a 1,536-number summary of what it understood. A logistic regression
over it (standardised; multinomial for more than two labels) reads the label.

- llm-probe: the probe alone. `label_probs` is its distribution over the scheme's labels.
- probe-stacked: the learned scorer (embed-lr) and the probe stacked (`hiera_dspy.signals.stacking.Stacker`: a
  logistic regression over both distributions' log-odds), as the paper's "stacking" of a learned signal with the
  LLM's. The stacker is fitted on out-of-fold distributions of the train pairs (`folds` folds grouped by query, so no
  query is both fitted and scored); at judging time scorer and probe are fitted on all train pairs.

`prepare(train, dev)` fits everything on train (dev is unused); `dump_extra()` saves the fitted weights as JSON in the
artifact and `load_extra()` restores them, so a loaded judge never refits nor re-embeds train pairs.
Config: probe_C (the probe's inverse regularisation; `C` stays the scorer's), text_chars (item text in the prompt),
folds; probe-stacked also takes the scorer's options (features, class_weight, C_grid) and probe_pairs (hidden states
of a seeded sample of N train pairs, balanced within queries, for the probe and the stacker: a large train split,
e.g. msrd pool, is still fitted by the scorer in full). Each judgment is one ledger step "probe.embed" (role "probe", no LM call and no tokens: an embedding is not a
chat call; its seconds are the cost) and, for probe-stacked, the scorer's step. Fields: label_probs,
expected_relevance, probe_probs and (probe-stacked) scores, the scorer's distribution.
Only the embedded local model gives hidden states: with a hosted --lm the method fails with a HieraError.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence

import dspy
import numpy as np

from hiera_dspy.errors import HieraError, NotFitted
from hiera_dspy.lm import steps
from hiera_dspy.methods import BuildContext, probe_states, register
from hiera_dspy.methods.label_probs import expected_relevance
from hiera_dspy.methods.learned_scorer import SCORER, SCORER_OPTIONS, ScorerState, top
from hiera_dspy.methods.learning import Learner
from hiera_dspy.records import Pair
from hiera_dspy.signals.stacking import Stacker


class Probe:
    """StandardScaler + LogisticRegression over hidden states, kept as plain arrays (saved as JSON)."""

    def __init__(self, labels: Sequence[str], C: float = 0.01):
        self.labels, self.C = tuple(labels), float(C)
        self.classes: tuple[str, ...] = ()
        self.mean = self.scale = self.coef = self.intercept = None

    def fit(self, x: np.ndarray, gold: Sequence[str]) -> Probe:
        """Fit on hidden states `x` (n x d) and their gold labels."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        y = np.array([self.labels.index(g) for g in gold])
        if len(set(y.tolist())) < 2:
            raise HieraError(f"the probe needs pairs of at least two labels; got only {sorted(set(gold))}")
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=self.C, max_iter=3000).fit(scaler.transform(x), y)
        self.mean, self.scale = scaler.mean_.astype(float), scaler.scale_.astype(float)
        self.classes = tuple(self.labels[i] for i in model.classes_)
        self.coef, self.intercept = np.array(model.coef_, float), np.array(model.intercept_, float)
        return self

    def predict_proba(self, vec: np.ndarray) -> dict[str, float]:
        """{label: probability} in scheme order (labels absent from the train pairs get 0)."""
        if self.coef is None:
            raise NotFitted("Probe is not fitted: call fit() or from_dict()")
        z = ((np.asarray(vec, float) - self.mean) / self.scale) @ self.coef.T + self.intercept
        if len(self.classes) == 2:
            p1 = float(1.0 / (1.0 + np.exp(-z[0])))
            fitted = [1.0 - p1, p1]
        else:
            e = np.exp(z - z.max())
            fitted = (e / e.sum()).tolist()
        out = dict.fromkeys(self.labels, 0.0)
        out.update({label: float(p) for label, p in zip(self.classes, fitted)})
        return out

    def to_dict(self) -> dict:
        """The fitted probe as JSON data."""
        if self.coef is None:
            raise NotFitted("Probe is not fitted: nothing to save")
        return {"labels": list(self.labels), "C": self.C, "classes": list(self.classes), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "coef": self.coef.tolist(), "intercept": self.intercept.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Probe:
        """A probe saved by `to_dict` (shapes checked)."""
        probe = cls(d["labels"], d.get("C", 0.01))
        probe.classes = tuple(d["classes"])
        probe.mean, probe.scale = np.array(d["mean"], float), np.array(d["scale"], float)
        probe.coef, probe.intercept = np.array(d["coef"], float), np.array(d["intercept"], float)
        rows = 1 if len(probe.classes) == 2 else len(probe.classes)
        if probe.coef.shape != (rows, probe.mean.shape[0]) or probe.scale.shape != probe.mean.shape:
            raise HieraError(f"probe weights have shape {probe.coef.shape} for {probe.mean.shape[0]} features and "
                             f"{len(probe.classes)} classes")
        return probe


def grouped_folds(pairs: Sequence[Pair], folds: int) -> list[tuple[list[int], list[int]]]:
    """(train indices, test indices) per fold, grouped by query (sklearn GroupKFold: deterministic)."""
    from sklearn.model_selection import GroupKFold

    groups = [p.query_id or p.query for p in pairs]
    k = min(folds, len(set(groups)))
    if k < 2:
        raise HieraError(f"probe-stacked needs train pairs of at least 2 queries for its folds; got {len(set(groups))}")
    idx = np.arange(len(pairs))
    return [(tr.tolist(), te.tolist()) for tr, te in GroupKFold(k).split(idx, idx, groups)]


def probed_sample(pairs: list[Pair], limit: int | None, labels: Sequence[str] = (), seed: int = 0) -> list[Pair]:
    """`pairs`, or a seeded sample of `limit` of them (said on stderr), balanced within queries: queries in a seeded
    order, of each one pair of every label it has (of `labels`; drawn at random), round after round until `limit`.
    A hidden state costs ~1 s, so each should teach the probe the most: pairs of one query with different labels
    contrast the item with the query held fixed, and the probe and stacker see the labels about equally often whatever
    the split's prevalence (a pool ~15% relevant would otherwise tilt the stacker's prior). Returned in input order."""
    if not limit or len(pairs) <= limit:
        return pairs
    rng = random.Random(seed)
    by_query: dict[str, dict[str, list[int]]] = {}
    for i, p in enumerate(pairs):
        by_query.setdefault(p.query_id or p.query, {}).setdefault(p.label, []).append(i)
    order = sorted(by_query)
    rng.shuffle(order)
    for groups in by_query.values():
        for idx in groups.values():
            rng.shuffle(idx)
    keep: list[int] = []
    while len(keep) < limit:
        before = len(keep)
        for q in order:
            for label in labels or sorted(by_query[q]):
                idx = by_query[q].get(label)
                if idx and len(keep) < limit:
                    keep.append(idx.pop())
        if len(keep) == before:
            break
    print(f"probe-stacked: hidden states of a seeded sample of {len(keep)} of the {len(pairs)} train pairs "
          "(probe_pairs; balanced within queries); the scorer learns from all", file=sys.stderr)
    return [pairs[i] for i in sorted(keep)]


class LLMProbeProgram(Learner, dspy.Module):
    """llm-probe: the probe alone (one embedding of the pair, no text generated)."""

    def __init__(self, ctx: BuildContext, probe_C: float = 0.01, text_chars: int = 160, folds: int = 5):
        super().__init__()
        self.scheme, self.lms, self.train = ctx.scheme, ctx.lms, [p for p in ctx.train if p.label in ctx.scheme.labels]
        self.probe_C, self.text_chars, self.folds = float(probe_C), int(text_chars), int(folds)
        self.probe: Probe | None = None
        self._states: probe_states.HiddenStates | None = None
        self._prefetched: dict[str, np.ndarray] = {}  # the last prefetch's hidden states, by prompt

    # ── the hidden state ──
    def states(self) -> probe_states.HiddenStates:
        """The judge model's hidden states for this scheme (prompt builder, batched embedder, disk cache)."""
        if self._states is None:
            self._states = probe_states.states_for(self._judge_lm(), self.scheme.labels)
        return self._states

    def embed(self, query: str, item_title: str, item_text: str | None) -> np.ndarray:
        """The hidden state of the probe's prompt for one pair (cached on disk)."""
        states = self.states()
        prompt = states.prompt(query, item_title, item_text, self.text_chars)
        vector = self._prefetched.get(prompt)
        return vector if vector is not None else states(prompt)

    def _judge_lm(self):
        """The judge role's LM; None (a bare BuildContext): the registered default model."""
        return self.lms.for_role("judge") if self.lms is not None else None

    def embed_many(self, pairs: Sequence[Pair], what: str = "train") -> np.ndarray:
        """Hidden states of `pairs`, several per llama.cpp batch (progress on stderr)."""
        return self._embed_prompts(self._prompts(pairs), what)

    def _prompts(self, pairs: Sequence[Pair]) -> list[str]:
        states = self.states()
        return [states.prompt(p.query, p.item_title, p.item_text, self.text_chars) for p in pairs]

    def _embed_prompts(self, prompts: list[str], what: str) -> np.ndarray:
        def progress(done: int) -> None:
            print(f"{self.method_name}: hidden states of {done}/{len(prompts)} {what} pairs", file=sys.stderr)

        return np.stack(self.states().many(prompts, progress=progress))

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Compute the hidden states of pairs about to be judged, in batches (each judgment then reads its vector:
        only the last call's are kept, so memory stays bounded by one batch of work; the disk cache has them too)."""
        if pairs:
            prompts = self._prompts(pairs)
            self._prefetched = dict(zip(prompts, self._embed_prompts(prompts, "judged")))

    @property
    def method_name(self) -> str:
        """The registered name (set by `build`)."""
        return getattr(self, "method", "llm-probe")

    # ── fitting ──
    def _train_pairs(self, train: Sequence[Pair] | None) -> list[Pair]:
        pairs = [p for p in (train or self.train) if p.label in self.scheme.labels]
        if not pairs:
            raise NotFitted(f"{self.method_name} needs labelled train pairs: build with BuildContext(train=...), "
                               "call prepare(train, dev), or load a compiled artifact")
        return pairs

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None) -> LLMProbeProgram:
        """Fit the probe on the train pairs' hidden states (dev is unused)."""
        train = self._train_pairs(train)
        self.probe = Probe(self.scheme.labels, self.probe_C).fit(self.embed_many(train), [p.label for p in train])
        return self

    def dump_extra(self) -> dict | None:
        """The fitted probe (None when not fitted)."""
        return {"probe": self.probe.to_dict()} if self.probe is not None else None

    def load_extra(self, extra: dict) -> None:
        """Restore the probe saved by `dump_extra`."""
        self.probe = Probe.from_dict(extra["probe"])

    # ── judging ──
    def probe_probs(self, query: str, item_title: str, item_text: str) -> dict[str, float]:
        """The probe's distribution for one pair, as an accounted step (role "probe", no LM call)."""
        if self.probe is None:
            raise NotFitted(f"{self.method_name}: not fitted; call prepare(train, dev) or load a compiled artifact")
        with steps.step("probe.embed", "probe", None) as record:
            probs = self.probe.predict_proba(self.embed(query, item_title, item_text))
            record.outputs = {"probe_probs": probs}
        return probs

    def _prediction(self, probs: dict[str, float], **fields) -> dspy.Prediction:
        return dspy.Prediction(label=top(probs)[0], label_probs=probs,
                               expected_relevance=expected_relevance(probs, self.scheme.labels), **fields)

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The probe's label and distribution for one pair."""
        probs = self.probe_probs(query, item_title, item_text)
        return self._prediction(probs, probe_probs=probs)


class ProbeStackedProgram(LLMProbeProgram):
    """probe-stacked: the learned scorer and the probe, combined by a Stacker fitted on out-of-fold train
    distributions."""

    def __init__(self, ctx: BuildContext, probe_C: float = 0.01, text_chars: int = 160, folds: int = 5,
                 stack_C: float = 1.0, embedder="auto", C: float = 1.0, probe_pairs: int | None = None, **options):
        super().__init__(ctx, probe_C, text_chars, folds)
        self.stack_C = float(stack_C)
        self.probe_pairs = probe_pairs
        self.scorer_state = ScorerState(ctx.scheme, ctx.train, embedder, C, **options)
        self.stacker: Stacker | None = None

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None) -> ProbeStackedProgram:
        """Fit the scorer on all train pairs; the probe and the stacker on the probed pairs (all, or a seeded sample of
        `probe_pairs`: a hidden state costs ~1 s, a scorer feature row ~1 ms), the stacker on out-of-fold
        distributions (each fold's scorer fitted on every train pair of the other folds' queries)."""
        everything = self._train_pairs(train)
        train = probed_sample(everything, self.probe_pairs, self.scheme.labels)
        x = self.embed_many(train)
        gold = [p.label for p in train]
        scorer_oof: list = [None] * len(train)
        probe_oof: list = [None] * len(train)
        state = self.scorer_state
        for tr, te in grouped_folds(train, self.folds):
            held = {train[i].query_id or train[i].query for i in te}
            fit_on = [p for p in everything if (p.query_id or p.query) not in held]
            fold = ScorerState(self.scheme, fit_on, state.embedder, state.C, **state.options)
            for i, d in zip(te, fold.scorer.predict_proba_many([train[i] for i in te])):
                scorer_oof[i] = d
            probe = Probe(self.scheme.labels, self.probe_C).fit(x[tr], [gold[i] for i in tr])
            for i in te:
                probe_oof[i] = probe.predict_proba(x[i])
        self.stacker = Stacker(self.scheme.labels, self.stack_C).fit(scorer_oof, probe_oof, gold)
        self.scorer_state.fit(everything)
        self.probe = Probe(self.scheme.labels, self.probe_C).fit(x, gold)
        return self

    def dump_extra(self) -> dict | None:
        """Scorer, probe and stacker (None when not fitted)."""
        scorer = self.scorer_state.dump()
        if scorer is None or self.probe is None or self.stacker is None:
            return None
        return {**scorer, "probe": self.probe.to_dict(), "stacker": self.stacker.to_dict()}

    def load_extra(self, extra: dict) -> None:
        """Restore what `dump_extra` saved."""
        self.scorer_state.load(extra)
        super().load_extra(extra)
        self.stacker = Stacker.from_dict(extra["stacker"])

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The stacked label and distribution for one pair, with the scorer's and the probe's distributions."""
        if self.stacker is None:
            raise NotFitted(f"{self.method_name}: not fitted; call prepare(train, dev) or load a compiled artifact")
        scores = self.scorer_state.score(query, item_title, item_text)
        probe = self.probe_probs(query, item_title, item_text)
        return self._prediction(self.stacker.predict_proba(scores, probe), scores=scores, probe_probs=probe)


PROBE = dict(family="probe", lm_roles=("judge",), votes=False, probe_C=0.01, text_chars=160, folds=5)  # 160: docs/local-model.md


@register("llm-probe", "Linear probe (logistic regression, fitted on train) on the embedded LLM's last-token hidden "
          "state for a relevance prompt; no text generated", **PROBE)
def _llm_probe(ctx: BuildContext, **config) -> LLMProbeProgram:
    return LLMProbeProgram(ctx, **config)


@register("probe-stacked", "The learned scorer and the LLM probe stacked: logistic regression over both label "
          "distributions, fitted on out-of-fold train distributions", **PROBE, stack_C=1.0, **SCORER,
          options=(*SCORER_OPTIONS, "probe_pairs"))
def _probe_stacked(ctx: BuildContext, **config) -> ProbeStackedProgram:
    return ProbeStackedProgram(ctx, **config)
