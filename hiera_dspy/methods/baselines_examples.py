"""The baselines that learn from labelled train pairs (`ctx.train`): self-instruct and rag-mmr (family "baseline").

Both need labelled pairs: without them (the paper's EVS case) a judgment fails with a clear error. A saved
self-instruct program carries its guidelines in its state, so it needs no train pairs once loaded; rag-mmr needs
them whenever it runs.
"""

from __future__ import annotations

import random

import dspy
import numpy as np

from hiera_dspy.agents.memo import Memo
from hiera_dspy.errors import HieraError
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.baselines import BASELINE, Baseline
from hiera_dspy.records import Pair
from hiera_dspy.untrusted.blocks import item_block
from signatures import with_labels
from signatures.baselines import DeriveGuidelines, FewShotJudgment, GuidedJudgment

EXAMPLE_TEXT_BUDGET = 300  # characters of item text per in-context example


def format_examples(pairs: list[Pair]) -> str:
    """Labelled pairs as numbered examples (item text within the example budget)."""
    return "\n\n".join(f"Example {i}\nQuery: {p.query}\n{item_block(p.item_title, p.item_text, EXAMPLE_TEXT_BUDGET, judged=False)}"
                       f"\nLabel: {p.label}" for i, p in enumerate(pairs, 1))


def per_label(pairs: list[Pair], labels: tuple[str, ...], n: int, seed: int = 0) -> list[Pair]:
    """Up to `n` pairs of each label (least relevant first), sampled with a fixed seed."""
    rng, chosen = random.Random(seed), []
    for label in labels:
        group = [p for p in pairs if p.label == label]
        chosen += rng.sample(group, min(n, len(group)))
    return chosen


class SelfInstruct(Baseline):
    """Guidelines are derived once (on the first judgment, accounted as its step `self_instruct.guidelines`) from
    `n_per_label` train pairs per label, kept as state (`dump_state()["guidelines"]`, so saved and loaded with the
    program), then applied to every pair."""

    def __init__(self, ctx: BuildContext, n_per_label: int = 3, seed: int = 0, **config):
        super().__init__(ctx, **config)
        self.examples = format_examples(per_label(ctx.train, ctx.scheme.labels, n_per_label, seed))
        self.guidelines = ""
        self.derive = dspy.Predict(DeriveGuidelines)
        self.apply = dspy.Predict(with_labels(GuidedJudgment, ctx.scheme))
        self.memo = Memo()  # one derivation even when threads start together

    def ensure_guidelines(self) -> str:
        """The guidelines, derived on first use from the train examples (once, across threads)."""
        if not self.guidelines:
            if not self.examples:
                raise HieraError("self-instruct needs labelled train pairs (ctx.train) to derive its guidelines")
            self.guidelines = self.memo.get_or_compute("guidelines", lambda: {"text": self.step(
                "self_instruct.guidelines", self.derive, label_definitions=self.scheme.describe(),
                examples=self.examples).guidelines})[0]["text"]
        return self.guidelines

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge the pair by the derived guidelines."""
        guidelines = self.ensure_guidelines()
        out = self.step("self_instruct.judge", self.apply, query=query, item=self.item(query, item_title, item_text),
                        label_definitions=self.scheme.describe(), guidelines=guidelines)
        return dspy.Prediction(label=out.label, parse_recovered=out.get("parse_recovered"))

    def dump_state(self, json_mode=True):
        """The DSPy state plus the derived `guidelines`."""
        return {**super().dump_state(json_mode=json_mode), "guidelines": self.guidelines}

    def load_state(self, state, **kwargs):
        """Restore the DSPy state and the `guidelines` that `dump_state` saved."""
        super().load_state({k: v for k, v in state.items() if k != "guidelines"}, **kwargs)
        self.guidelines = state.get("guidelines") or ""
        return self


@register("self-instruct", "Self-Instruct (Soviero et al. 2024): derive annotation guidelines from labelled "
          "examples once, then apply them", n_per_label=3, seed=0, **BASELINE)
def _self_instruct(ctx: BuildContext, **config) -> dspy.Module:
    return SelfInstruct(ctx, **config)


def mmr(relevance: np.ndarray, similarity: np.ndarray, k: int, lambda_mmr: float = 0.5) -> list[int]:
    """Maximal marginal relevance: greedily take argmax λ·relevance(d) − (1−λ)·max similarity(d, taken); ties go
    to the lower index. `relevance[i] = -inf` excludes candidate i."""
    candidates = [i for i in range(len(relevance)) if np.isfinite(relevance[i])]
    chosen: list[int] = []
    while candidates and len(chosen) < k:
        def score(i):
            return lambda_mmr * relevance[i] - (1 - lambda_mmr) * max((similarity[i][j] for j in chosen), default=0.0)
        best = max(candidates, key=lambda i: (score(i), -i))
        chosen.append(best)
        candidates.remove(best)
    return chosen


class ExamplePool:
    """TF-IDF vectors (L2-normalised, so dot product = cosine) of texts, fitted once; shared by program copies."""

    def __init__(self, texts: list[str]):
        from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn (~1 s) only for these methods

        self.vectorizer = TfidfVectorizer(sublinear_tf=True).fit(texts) if texts else None
        self.matrix = self.vectorizer.transform(texts) if texts else None

    def __deepcopy__(self, memo):
        return self

    def select(self, text: str, k: int = 4, lambda_mmr: float = 0.5, exclude: set[int] = frozenset(),
               candidates: int = 50) -> list[int]:
        """Indices of `k` pooled texts: cosine-similar to `text`, diversified with MMR among the top `candidates`."""
        if self.matrix is None:
            return []
        relevance = (self.matrix @ self.vectorizer.transform([text]).T).toarray().ravel()
        relevance[list(exclude)] = -np.inf
        top = [int(i) for i in np.argsort(-relevance, kind="stable")[:candidates] if np.isfinite(relevance[i])]
        vectors = self.matrix[top]
        picked = mmr(relevance[top], (vectors @ vectors.T).toarray(), k, lambda_mmr)
        return [top[i] for i in picked]


def retrieve(text: str, texts: list[str], k: int = 4, lambda_mmr: float = 0.5) -> list[int]:
    """Pure: indices of the `k` texts chosen by TF-IDF cosine similarity to `text` + MMR."""
    return ExamplePool(texts).select(text, k, lambda_mmr)


class RagMMR(Baseline):
    """Retrieve labelled train pairs similar to the pair (TF-IDF cosine over "query item_title"), diversify them with
    MMR, give them as in-context examples. A train pair with the same query and title is never its own example."""

    def __init__(self, ctx: BuildContext, n_examples: int = 4, lambda_mmr: float = 0.5, **config):
        super().__init__(ctx, **config)
        self.pool_pairs = [p for p in ctx.train if p.label in ctx.scheme.labels]
        self.pool = ExamplePool([f"{p.query} {p.item_title}" for p in self.pool_pairs])
        self.n_examples, self.lambda_mmr = n_examples, lambda_mmr
        self.judge = dspy.Predict(with_labels(FewShotJudgment, ctx.scheme))

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge the pair with train examples retrieved by MMR (the pair itself excluded)."""
        if not self.pool_pairs:
            raise HieraError("rag-mmr needs labelled train pairs (ctx.train) to retrieve examples from")
        same = {i for i, p in enumerate(self.pool_pairs) if p.query == query and p.item_title == item_title}
        picked = self.pool.select(f"{query} {item_title}", self.n_examples, self.lambda_mmr, exclude=same)
        examples = [self.pool_pairs[i] for i in picked]
        out = self.step("rag_mmr.judge", self.judge, query=query, item=self.item(query, item_title, item_text),
                        label_definitions=self.scheme.describe(), examples=format_examples(examples))
        return dspy.Prediction(label=out.label, evidence="examples: " + ", ".join(p.id for p in examples),
                               parse_recovered=out.get("parse_recovered"))


@register("rag-mmr", "RAG-MMR (Sachdev et al. 2024): similar labelled pairs (TF-IDF cosine) diversified by MMR as "
          "in-context examples", n_examples=4, lambda_mmr=0.5, **BASELINE)
def _rag_mmr(ctx: BuildContext, **config) -> dspy.Module:
    return RagMMR(ctx, **config)
