"""HIERA (full) and the ablation graphs of the paper's Table 3: same agents and prompts, only the graph differs.

- hiera: Judge triage -> Relation Analyzer (consults Q, I, knowledge as planned) -> one argument -> Judge decision.
- judge+relation(+web): the Relation Analyzer without the Query/Item Analyzers (with knowledge look-ups).
- judge+qi(+web): the Query and Item Analyzers without the Relation Analyzer; their outputs concatenated.
- judge+web: knowledge passages go straight to the Judge.
- judge+all-uncoordinated: every specialist runs independently; outputs concatenated into the Judge's input.
- judge-only: the Judge decides alone.
Delegation policy: `triage` (the Judge decides when to delegate), `always`, or `never` (the Judge decides alone, with
its three-dimension assessment). Consultation: `directed` (R asks each specialist a question drawn from the Judge's
gaps), `undirected` (each specialist returns its pair-independent analysis) or `auto` (the profile's: directed for
hosted models, undirected for the embedded one). `profile`: output budgets and length
caps (`hiera_dspy.lm.profiles`; auto = from each role's LM).

HIERA's pieces: the prompts are `signatures/hiera.py`; the four agents `hiera_dspy/agents/__init__.py`; this module the program
(`HieraProgram`) and its registered graphs, whose defaults are `methods/graphs.py`; `methods/learned_scorer.py` adds
the learned scorer (hiera+signals, the cascade); each step runs through `lm/steps.py` (accounting, parse salvage in
`lm/salvage.py`) and reuses analyses through `agents/memo.py`.
"""

from __future__ import annotations

import asyncio

import dspy

from hiera_dspy.agents import (
    ItemAnalyzer,
    QueryAnalyzer,
    RelationAnalyzer,
    RelevanceJudge,
    format_item_analysis,
    format_query_analysis,
    format_triage,
    lookup,
)
from hiera_dspy.errors import HieraError
from hiera_dspy.knowledge import render
from hiera_dspy.methods import BuildContext, available, register
from hiera_dspy.methods.graphs import GRAPH_DEFAULTS, GRAPHS
from hiera_dspy.untrusted.blocks import item_block


class HieraProgram(dspy.Module):
    """A HIERA graph. `coordination="hierarchical"` routes specialists through the Relation Analyzer;
    `"concatenate"` runs them independently and concatenates their outputs for the Judge. The config's defaults are
    the registry's (`methods/graphs.py`: GRAPH_DEFAULTS, GRAPHS), not this constructor's."""

    def __init__(self, ctx: BuildContext, *, relation: bool, specialists: tuple[str, ...], knowledge: bool,
                 coordination: str, delegation: str, k: int | None, consultation: str, specialist_lookups: int,
                 profile: str, reasoning: bool = True):
        super().__init__()
        self.knowledge = ctx.knowledge
        self.k, self.coordination, self.delegation, self.use_knowledge = k, coordination, delegation, knowledge
        self.solo = not (relation or specialists or knowledge)
        self.judge = RelevanceJudge(ctx.scheme, ctx.lms, reasoning=reasoning, profile=profile,
                                    alone=self.solo or delegation == "never")
        hierarchical = relation and coordination == "hierarchical"
        self.relation = RelationAnalyzer(ctx.lms, ctx.knowledge, k, specialists if hierarchical else (),
                                         knowledge and hierarchical, consultation, specialist_lookups,
                                         profile) if relation else None
        self.query_analyzer = (QueryAnalyzer(ctx.lms, profile) if "query" in specialists and not hierarchical
                               else None)
        self.item_analyzer = ItemAnalyzer(ctx.lms, profile) if "item" in specialists and not hierarchical else None

    def forward(self, query: str, item_title: str, item_text: str, **extra: str) -> dspy.Prediction:
        """Judge one pair. `extra`: further inputs of the Judge's and the Relation Analyzer's steps, for a variant
        whose prompts have them (hiera+signals passes `scorer_evidence`)."""
        item = item_block(item_title, item_text)
        if self.judge.alone:  # judge-only, or delegation "never": one decision with its own assessment
            return self._decide(query, item, "", delegated=False, extra=extra)
        triage, triage_text = None, ""
        if self.delegation == "triage":
            triage = self.judge.assess(query, item, **extra)
            if triage.all_clear:  # a direct label, with the Judge's reasoning
                return self._direct(triage)
            triage_text = format_triage(triage.dimensions, triage.guidance)
        guidance = triage.guidance if triage else "Assess every dimension."
        evidence = self._gather(query, item_title, item, guidance, extra)
        return self._decide(query, item, evidence, delegated=True, guidance=guidance, triage=triage_text, extra=extra)

    async def aforward(self, query: str, item_title: str, item_text: str, **extra: str) -> dspy.Prediction:
        """`forward` through DSPy's async path: the same steps, each awaited (`--engine async`)."""
        item = item_block(item_title, item_text)
        if self.judge.alone:
            return await self._adecide(query, item, "", delegated=False, extra=extra)
        triage, triage_text = None, ""
        if self.delegation == "triage":
            triage = await self.judge.aassess(query, item, **extra)
            if triage.all_clear:
                return self._direct(triage)
            triage_text = format_triage(triage.dimensions, triage.guidance)
        guidance = triage.guidance if triage else "Assess every dimension."
        evidence = await self._agather(query, item_title, item, guidance, extra)
        return await self._adecide(query, item, evidence, delegated=True, guidance=guidance, triage=triage_text,
                                   extra=extra)

    @staticmethod
    def _direct(triage: dspy.Prediction) -> dspy.Prediction:
        return dspy.Prediction(label=triage.label, delegated=False, guidance=triage.guidance, evidence="",
                               dimensions=triage.dimensions, reasoning=triage.reasoning,
                               parse_recovered=triage.parse_recovered)

    def _gather(self, query: str, item_title: str, item: str, guidance: str, extra: dict) -> str:
        parts = []
        if self.relation is not None and self.coordination == "hierarchical":
            return self.relation(query=query, item=item, guidance=guidance, **extra).argument
        if self.relation is not None:  # uncoordinated: R analyses alone, its output is one more concatenated part
            argument = self.relation(query=query, item=item, guidance=guidance, **extra).argument
            parts.append("Relation Analyzer: " + argument)
        if self.query_analyzer is not None:
            parts.append(format_query_analysis(self.query_analyzer(query=query)))
        if self.item_analyzer is not None:
            parts.append(format_item_analysis(self.item_analyzer(item=item)))
        if self.use_knowledge and (self.relation is None or self.coordination != "hierarchical"):
            passages = lookup(self.knowledge, [f"{query} {item_title}"], self.k)
            if passages:
                parts.append("Knowledge:\n" + render(passages))
        return "\n".join(parts)

    async def _agather(self, query: str, item_title: str, item: str, guidance: str, extra: dict) -> str:
        if self.relation is not None and self.coordination == "hierarchical":
            return (await self.relation.acall(query=query, item=item, guidance=guidance, **extra)).argument
        parts = []
        if self.relation is not None:
            argument = (await self.relation.acall(query=query, item=item, guidance=guidance, **extra)).argument
            parts.append("Relation Analyzer: " + argument)
        if self.query_analyzer is not None:
            parts.append(format_query_analysis(await self.query_analyzer.acall(query=query)))
        if self.item_analyzer is not None:
            parts.append(format_item_analysis(await self.item_analyzer.acall(item=item)))
        if self.use_knowledge and (self.relation is None or self.coordination != "hierarchical"):
            passages = await asyncio.to_thread(lookup, self.knowledge, [f"{query} {item_title}"], self.k)
            if passages:
                parts.append("Knowledge:\n" + render(passages))
        return "\n".join(parts)

    async def _adecide(self, query, item, evidence, delegated, guidance="", triage="", extra=None) -> dspy.Prediction:
        out = await self.judge.adecide_label(query, item, evidence, triage, **(extra or {}))
        return self._decided(out, evidence, delegated, guidance)

    def _decide(self, query, item, evidence, delegated, guidance="", triage="", extra=None) -> dspy.Prediction:
        out = self.judge.decide_label(query, item, evidence, triage, **(extra or {}))
        return self._decided(out, evidence, delegated, guidance)

    @staticmethod
    def _decided(out, evidence, delegated, guidance) -> dspy.Prediction:
        return dspy.Prediction(label=out.label, delegated=delegated, guidance=guidance, evidence=evidence,
                               reasoning=getattr(out, "reasoning", None), parse_recovered=out.get("parse_recovered"))


def _builder(ctx: BuildContext, **config) -> HieraProgram:
    config["specialists"] = tuple(config.get("specialists", ()))
    if config.pop("signals", False):  # config signals=True: hiera+signals (methods/learned_scorer.py), found by name
        signals = available()["hiera+signals"]  # its scorer defaults under this graph's config
        return signals.builder(ctx, **{**signals.defaults, **config})
    scorer_keys = sorted({"embedder", "C"} & set(config))
    if scorer_keys:
        raise HieraError(f"{', '.join(scorer_keys)}: learned-scorer settings, used only with signals=true "
                         "(--set signals=true, or the hiera+signals method)")
    return HieraProgram(ctx, **config)


for _name, (_doc, _defaults) in GRAPHS.items():
    register(_name, _doc, family="ablation" if _name != "hiera" else "hiera", options=("signals", "embedder", "C"),
             **{**GRAPH_DEFAULTS, **_defaults})(_builder)
