"""The paper's 11 baselines (arXiv 2608.00785, Sec. 5.2 and App. A.2), one `@register` each (family "baseline").

Here: the single-step zero-shot, multi-criteria, dna and the multi-step binary-graded, multi-stage, raer.
`baselines_examples.py`: self-instruct and rag-mmr (they learn from `ctx.train`). `baselines_ensembles.py`:
prompt-blender, llm-blender, collabeval.

Every judging call runs under the judge LM (role "judge"), except multi-stage's stage-1 filter, which runs under the
"query" role's LM: `--query-lm` sets the cheaper stage-1 model (the paper's Haiku). Every baseline takes
`with_knowledge` (paper Table 4): when true, the knowledge passages found for "query item_title" are concatenated to
the item block, which is the concatenation that HIERA's coordination is compared with.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import dspy

from hiera_dspy.agents import _record_reuse, lookup
from hiera_dspy.agents.memo import Memo, fingerprint
from hiera_dspy.errors import HieraError
from hiera_dspy.knowledge import render
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm.steps import arun_step, run_step
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.untrusted.blocks import item_block
from signatures import with_labels
from signatures.baselines import (
    BinaryJudgment,
    CriteriaJudgment,
    DNAJudgment,
    GenerateCriteria,
    GradedJudgment,
    MultiCriteriaJudgment,
    RefineCriteria,
    RelevanceFilter,
    ZeroShotJudgment,
)

BASELINE = dict(family="baseline", with_knowledge=False, k=None)  # k None: the knowledge source's default


class Baseline(dspy.Module):
    """Shared plumbing: the item block (plus concatenated knowledge when `with_knowledge`) and accounted steps."""

    def __init__(self, ctx: BuildContext, with_knowledge: bool = False, k: int | None = None):
        super().__init__()
        self.scheme, self.lms, self.knowledge = ctx.scheme, ctx.lms, ctx.knowledge
        self.with_knowledge, self.k = with_knowledge, k

    def item(self, query: str, item_title: str, item_text: str) -> str:
        """The item as the judge reads it: title and text, plus knowledge passages when `with_knowledge`."""
        block = item_block(item_title, item_text)
        if self.with_knowledge:
            passages = lookup(self.knowledge, [f"{query} {item_title}"], self.k)
            if passages:
                block += "\n" + render(passages)
        return block

    def step(self, name: str, predictor: dspy.Predict, role: str = "judge", lms=None, **inputs) -> dspy.Prediction:
        """One accounted call; label recovery only for predictors with a `label` output."""
        scheme = self.scheme if "label" in predictor.signature.output_fields else None
        return run_step(name, role, lms if lms is not None else self.lms, predictor, scheme, **inputs)

    async def astep(self, name: str, predictor: dspy.Predict, role: str = "judge", lms=None, **inputs):
        """`step` through DSPy's async path."""
        scheme = self.scheme if "label" in predictor.signature.output_fields else None
        return await arun_step(name, role, lms if lms is not None else self.lms, predictor, scheme, **inputs)


def restrict(signature: type[dspy.Signature], labels: tuple[str, ...]) -> type[dspy.Signature]:
    """The signature with its `label` output typed as a Literal of `labels` only."""
    return signature.with_updated_fields("label", type_=Literal[tuple(labels)])  # type: ignore[valid-type]


def definitions(scheme: LabelScheme, labels: tuple[str, ...]) -> str:
    """The definitions of `labels` only, one `- label: definition` line each, then the scheme's guidance (a team's
    instructions and worked examples, verbatim)."""
    lines = "\n".join(f"- {label}: {scheme.definitions.get(label, '')}".rstrip(": ") for label in labels)
    return lines + scheme.guidance()


def binary_view(scheme: LabelScheme, threshold: str | None = None) -> tuple[tuple[str, ...], str]:
    """The labels that count as relevant (at or above `threshold`, default the scheme's) and the binary question."""
    cut = scheme.labels.index(scheme.from_raw(threshold) if threshold else scheme.threshold)
    if cut == 0:
        raise HieraError(f"threshold {threshold!r} leaves no 'not relevant' label in scheme {scheme.name!r}")
    low, high = scheme.labels[:cut], scheme.labels[cut:]
    question = (f"Is the item relevant to the query? Relevant: it deserves {' or '.join(high)}. "
                f"Not relevant: it deserves {' or '.join(low)}.\nLabel definitions:\n{scheme.describe()}")
    return high, question


class SingleStep(Baseline):
    """One labelled call; the other outputs of the signature (criteria grades, intent...) become `evidence`."""

    def __init__(self, ctx: BuildContext, signature: type[dspy.Signature], step_name: str, **config):
        super().__init__(ctx, **config)
        self.step_name = step_name
        self.judge = dspy.Predict(with_labels(signature, ctx.scheme))

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """One judgment call."""
        item = self.item(query, item_title, item_text)
        out = self.step(f"{self.step_name}.judge", self.judge, query=query, item=item,
                        label_definitions=self.scheme.describe())
        return self._labelled(out)

    async def aforward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """`forward` through DSPy's async path (a knowledge look-up runs off the event loop)."""
        item = (await asyncio.to_thread(self.item, query, item_title, item_text) if self.with_knowledge  # a look-up
                else self.item(query, item_title, item_text))                                   # blocks: off the loop
        out = await self.astep(f"{self.step_name}.judge", self.judge, query=query, item=item,
                               label_definitions=self.scheme.describe())
        return self._labelled(out)

    @staticmethod
    def _labelled(out: dspy.Prediction) -> dspy.Prediction:
        evidence = "; ".join(f"{k}: {v}" for k, v in out.items() if k not in ("label", "parse_recovered"))
        return dspy.Prediction(label=out.label, evidence=evidence, parse_recovered=out.get("parse_recovered"))


@register("zero-shot", "Zero-Shot (Faggioli et al. 2023): direct prompting, no examples", **BASELINE)
def _zero_shot(ctx: BuildContext, **config) -> dspy.Module:
    return SingleStep(ctx, ZeroShotJudgment, "zero_shot", **config)


@register("multi-criteria", "Multi-Criteria (Mehrdad et al. 2024): grade exactness, coverage, topicality, fitness "
          "for purpose, aggregate into the label", **BASELINE)
def _multi_criteria(ctx: BuildContext, **config) -> dspy.Module:
    return SingleStep(ctx, MultiCriteriaJudgment, "multi_criteria", **config)


@register("dna", "DNA-Prompt (Thomas et al. 2024): Descriptive role, Narrative of the intent, Aspects, label",
          **BASELINE)
def _dna(ctx: BuildContext, **config) -> dspy.Module:
    return SingleStep(ctx, DNAJudgment, "dna", **config)


class BinaryGraded(Baseline):
    """Binary relevant / not relevant first (relevant = at or above `threshold`); not relevant -> the lowest label,
    relevant -> one graded call restricted to the relevant labels (skipped when only one label is relevant, as in
    binary schemes). Labels strictly between the lowest and the threshold (ESCI's Complement with the default
    threshold Substitute) are never given; `threshold=<second label>` makes every label reachable."""

    def __init__(self, ctx: BuildContext, threshold: str | None = None, **config):
        super().__init__(ctx, **config)
        self.relevant_labels, self.question = binary_view(ctx.scheme, threshold)
        self.binary = dspy.Predict(BinaryJudgment)
        self.grade = dspy.Predict(restrict(GradedJudgment, self.relevant_labels)) if len(self.relevant_labels) > 1 \
            else None

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The binary question first; a relevant item is then graded among the relevant labels."""
        item = self.item(query, item_title, item_text)
        relevance = self.step("binary_graded.binary", self.binary, query=query, item=item,
                              question=self.question).relevance
        if relevance != "relevant":
            label = self.scheme.labels[0]
        elif self.grade is None:
            label = self.relevant_labels[0]
        else:
            label = self.step("binary_graded.grade", self.grade, query=query, item=item,
                              label_definitions=definitions(self.scheme, self.relevant_labels)).label
        return dspy.Prediction(label=label, evidence=f"binary: {relevance}")


@register("binary-graded", "Binary-Graded (Rahmani et al. 2025): binary relevant/not, then a graded label only for "
          "the relevant", threshold=None, **BASELINE)
def _binary_graded(ctx: BuildContext, **config) -> dspy.Module:
    return BinaryGraded(ctx, **config)


class MultiStage(Baseline):
    """Stage 1 (role "query": `--query-lm` sets this cheaper LM) filters out the clearly irrelevant (lowest label);
    stage 2 (judge LM) classifies every kept item over the full label set, without stage 1's reasoning."""

    def __init__(self, ctx: BuildContext, **config):
        super().__init__(ctx, **config)
        self.filter = dspy.Predict(RelevanceFilter)
        self.classify = dspy.Predict(with_labels(ZeroShotJudgment, ctx.scheme))

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """A cheap filter (query role) first; an item it keeps is classified by the judge."""
        item, defs = self.item(query, item_title, item_text), self.scheme.describe()
        keep = self.step("multi_stage.filter", self.filter, role="query", query=query, item=item,
                         label_definitions=defs).keep
        if not keep:
            return dspy.Prediction(label=self.scheme.labels[0], evidence="stage 1: filtered out")
        out = self.step("multi_stage.classify", self.classify, query=query, item=item, label_definitions=defs)
        return dspy.Prediction(label=out.label, evidence="stage 1: kept", parse_recovered=out.get("parse_recovered"))


@register("multi-stage", "Multi-Stage (Schnabel et al. 2025): cheap binary filter (query-role LM), then "
          "fine-grained classification (judge LM)", **BASELINE)
def _multi_stage(ctx: BuildContext, **config) -> dspy.Module:
    return MultiStage(ctx, **config)


class Raer(Baseline):
    """Query-specific criteria, generated then refined `refine_rounds` times (once per distinct query per program,
    like HIERA's query analyses), and the item judged against them."""

    def __init__(self, ctx: BuildContext, refine_rounds: int = 1, **config):
        super().__init__(ctx, **config)
        self.refine_rounds = refine_rounds
        self.generate = dspy.Predict(GenerateCriteria)
        self.refine = dspy.Predict(RefineCriteria)
        self.judge = dspy.Predict(with_labels(CriteriaJudgment, ctx.scheme))
        self.memo = Memo()

    def criteria(self, query: str) -> list[str]:
        """The query's relevance criteria, generated and refined once per query (memoised)."""
        def compute():
            criteria = self.step("raer.generate", self.generate, query=query,
                                 label_definitions=self.scheme.describe()).criteria
            for _ in range(self.refine_rounds):
                criteria = self.step("raer.refine", self.refine, query=query, criteria=criteria).refined_criteria
            return {"criteria": list(criteria)}

        key = (query, fingerprint(self.generate), fingerprint(self.refine), self.refine_rounds)
        value, reused = self.memo.get_or_compute(key, compute)
        if reused:
            _record_reuse("raer.criteria", "judge", value)
        return value["criteria"]

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge the pair against its query's criteria."""
        criteria = self.criteria(query)
        out = self.step("raer.judge", self.judge, query=query, item=self.item(query, item_title, item_text),
                        label_definitions=self.scheme.describe(), criteria=criteria)
        return dspy.Prediction(label=out.label, evidence=f"criteria: {criteria}; assessment: {out.get('assessment')}",
                               parse_recovered=out.get("parse_recovered"))


@register("raer", "RAER (Hosseini et al. 2025): generate query-specific criteria, refine them, judge against them",
          refine_rounds=1, **BASELINE)
def _raer(ctx: BuildContext, **config) -> dspy.Module:
    return Raer(ctx, **config)

