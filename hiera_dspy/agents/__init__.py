"""HIERA's four agents (arXiv 2608.00785, Sec. 4.2) as DSPy modules: every predictor is an attribute, so optimizers,
`named_predictors()` and `save()` see them. Each step runs under its role's LM and is accounted in the ledger.

Query and item analyses do not depend on the pair: they are computed once per distinct query / item per program and
handed to the specialist as context when the Relation Analyzer asks it a question about one pair. Length caps and
output budgets come from the model profile (`hiera_dspy.lm.profiles`). Every module has an `aforward` too (DSPy's
`acall` path, used by `--engine async`): the same steps, awaited.
"""

from __future__ import annotations

import asyncio

import dspy

import signatures
from hiera_dspy.agents.memo import Memo, fingerprint
from hiera_dspy.knowledge import Knowledge, NoKnowledge, Passage, render
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm import ledger, profiles, steps
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.lm.steps import arun_step, run_step
from hiera_dspy.records import Step
from signatures.hiera import (
    DIMENSIONS,
    REASONING_DESC,
    ItemAnalysis,
    ItemQuestion,
    JudgeAssessment,
    JudgeDecision,
    JudgeTriage,
    QueryAnalysis,
    QueryQuestion,
    RelationPlan,
    RelationSynthesis,
)


class _Specialist(dspy.Module):
    """Q or I, with two prompts. `analyze`: a pair-independent analysis of its own text (the query, or the item),
    computed once per distinct text (and prompt) per program. `answer` (directed consultation): the Relation
    Analyzer's question about one pair, answered with the pair in view and the cached analysis as context; it may name
    up to `max_lookups` look-ups of its own (paper A.1), searched once, after which it answers again with the passages.
    """

    role: str
    signature: type[dspy.Signature]
    directed: type[dspy.Signature]

    def __init__(self, lms: RoleLMs, profile: str | None = None, knowledge: Knowledge | None = None,
                 k: int | None = None, max_lookups: int = 1, directed: bool = False):
        super().__init__()
        self.lms = lms
        fitted = profiles.resolve(profile, lms, self.role)
        self.analyze = profiles.tag(dspy.Predict(profiles.fit(self.signature, fitted)), fitted)
        if directed:
            self.answer = profiles.tag(dspy.Predict(profiles.fit(self.directed, fitted)), fitted)
        self.knowledge = knowledge or NoKnowledge()
        self.k, self.max_lookups = k, max_lookups
        self.memo = Memo()

    def forward(self, **inputs: str) -> dspy.Prediction:
        (text,) = inputs.values()
        name = f"{self.role}.analyze"

        def compute():
            return self._analysis(run_step(name, self.role, self.lms, self.analyze, **inputs))

        value, reused = self.memo.get_or_compute((text, fingerprint(self.analyze)), compute)
        if reused:
            _record_reuse(name, self.role, value)
        return dspy.Prediction(**value)

    async def aforward(self, **inputs: str) -> dspy.Prediction:
        (text,) = inputs.values()
        name = f"{self.role}.analyze"

        async def compute():
            return self._analysis(await arun_step(name, self.role, self.lms, self.analyze, **inputs))

        value, reused = await self.memo.aget_or_compute((text, fingerprint(self.analyze)), compute)
        if reused:
            _record_reuse(name, self.role, value)
        return dspy.Prediction(**value)

    def _analysis(self, out: dspy.Prediction) -> dict:
        value = {field: getattr(out, field) for field in self.signature.output_fields}
        return {**value, "parse_recovered": True} if out.get("parse_recovered") else value

    def ask(self, question: str, query: str, item: str) -> dspy.Prediction:
        """Answer the Relation Analyzer's question about this pair (its own look-ups bounded, cached, accounted)."""
        analysis = self.describe(self(**{self.role: query if self.role == "query" else item}))
        can_look = self.max_lookups > 0 and not isinstance(self.knowledge, NoKnowledge)
        knowledge = NO_LOOKUPS_YET if can_look else NO_KNOWLEDGE
        name = f"{self.role}.answer"
        inputs = dict(query=query, item=item, analysis=analysis, question=question)
        out = run_step(name, self.role, self.lms, self.answer, **inputs, knowledge=knowledge)
        wanted = [str(s) for s in (out.get("lookups") or []) if str(s).strip()][:self.max_lookups] if can_look else []
        passages = lookup(self.knowledge, wanted, self.k, name=f"{self.role}.search", limit=self.max_lookups)
        if passages:
            out = run_step(name, self.role, self.lms, self.answer, **inputs, knowledge=render(passages))
        return dspy.Prediction(question=question, answer=out.answer, analysis=analysis, lookups=wanted,
                               passages=len(passages))

    async def aask(self, question: str, query: str, item: str) -> dspy.Prediction:
        """`ask` through DSPy's async path (look-ups run on a worker thread: a web search blocks)."""
        analysis = self.describe(await self.acall(**{self.role: query if self.role == "query" else item}))
        can_look = self.max_lookups > 0 and not isinstance(self.knowledge, NoKnowledge)
        knowledge = NO_LOOKUPS_YET if can_look else NO_KNOWLEDGE
        name = f"{self.role}.answer"
        inputs = dict(query=query, item=item, analysis=analysis, question=question)
        out = await arun_step(name, self.role, self.lms, self.answer, **inputs, knowledge=knowledge)
        wanted = [str(s) for s in (out.get("lookups") or []) if str(s).strip()][:self.max_lookups] if can_look else []
        passages = await asyncio.to_thread(lookup, self.knowledge, wanted, self.k, name=f"{self.role}.search",
                                           limit=self.max_lookups)
        if passages:
            out = await arun_step(name, self.role, self.lms, self.answer, **inputs, knowledge=render(passages))
        return dspy.Prediction(question=question, answer=out.answer, analysis=analysis, lookups=wanted,
                               passages=len(passages))

    @staticmethod
    def describe(analysis: dspy.Prediction) -> str:
        raise NotImplementedError


NO_LOOKUPS_YET = "(none yet: name look-ups if a fact must be verified)"
NO_KNOWLEDGE = "(no knowledge source: answer from the pair and what you know)"


class QueryAnalyzer(_Specialist):
    """Q: explicit requirements and implicit intent of the query (reused per distinct query); answers R's questions."""

    role, signature, directed = "query", QueryAnalysis, QueryQuestion

    @staticmethod
    def describe(analysis: dspy.Prediction) -> str:
        """One line of an analysis: the query's explicit requirements and implicit intent."""
        return f"explicit requirements: {analysis.explicit_requirements}; implicit intent: {analysis.implicit_intent}"


class ItemAnalyzer(_Specialist):
    """I: stated and inferred properties of the item (reused per distinct item); answers R's questions."""

    role, signature, directed = "item", ItemAnalysis, ItemQuestion

    @staticmethod
    def describe(analysis: dspy.Prediction) -> str:
        """One line of an analysis: the item's stated and inferred properties."""
        return f"stated: {analysis.stated_properties}; inferred: {analysis.inferred_properties}"


def _record_reuse(name: str, role: str, outputs: dict) -> None:
    book = ledger.current()
    if book is not None:
        book.add(Step(name=name, role=role, outputs={**outputs, "reused": True}))


def lookup(knowledge: Knowledge, queries: list[str], k: int | None, name: str = "knowledge.search",
           limit: int = 2) -> list[Passage]:
    """At most `limit` knowledge look-ups as one accounted step (no LM call); k None: the source's default."""
    if not queries and name != "knowledge.search":
        return []
    passages: list[Passage] = []
    with steps.step(name, "knowledge", None) as record:
        for text in queries[:limit]:
            passages += knowledge.search(str(text)) if k is None else knowledge.search(str(text), k)
        record.outputs = {"lookups": list(queries[:limit]), "passages": [p.to_dict() for p in passages]}
    return passages


def format_query_analysis(q: dspy.Prediction) -> str:
    """A query analysis as a finding for the Judge's evidence."""
    return f"Query Analyzer: {QueryAnalyzer.describe(q)}"


def format_item_analysis(i: dspy.Prediction) -> str:
    """An item analysis as a finding for the Judge's evidence."""
    return f"Item Analyzer: {ItemAnalyzer.describe(i)}"


def format_answer(title: str, a: dspy.Prediction) -> str:
    """A specialist's directed answer as a finding for the Relation Analyzer's synthesis."""
    return f"{title}, asked: {a.question}\n  answer: {a.answer}\n  its analysis: {a.analysis}"


class RelationAnalyzer(dspy.Module):
    """R: plans which specialists and look-ups the Judge's gaps need and what to ask each, consults them, synthesises
    one argument. `consultation="directed"` (the paper, Sec. 4.2): each consulted specialist answers R's question about
    this pair; `"undirected"`: each returns its pair-independent analysis (cheaper where many pairs share a query);
    `"auto"`: the profile's choice (directed for the paper's, undirected for the embedded model's).

    Specialists never talk to the Judge: everything they find passes through this synthesis.
    """

    def __init__(self, lms: RoleLMs, knowledge: Knowledge | None = None, k: int | None = None,
                 specialists: tuple[str, ...] = ("query", "item"), use_knowledge: bool = True,
                 consultation: str = "auto", specialist_lookups: int = 1, profile: str | None = None):
        super().__init__()
        self.lms = lms
        self.knowledge = knowledge or NoKnowledge()
        self.k = k
        self.specialists = specialists
        self.use_knowledge = use_knowledge
        fitted = profiles.resolve(profile, lms, "relation")
        self.directed = (fitted.consultation if consultation == "auto" else consultation) == "directed"
        plan = RelationPlan if self.directed else RelationPlan.delete(QUESTIONS["query"]).delete(QUESTIONS["item"])
        self.plan = profiles.tag(dspy.Predict(profiles.fit(plan, fitted)), fitted)
        self.synthesize = profiles.tag(dspy.Predict(profiles.fit(RelationSynthesis, fitted)), fitted)
        own = dict(profile=profile, knowledge=self.knowledge if use_knowledge else None, k=k,
                   max_lookups=specialist_lookups, directed=self.directed)
        self.query_analyzer = QueryAnalyzer(lms, **own) if "query" in specialists else None
        self.item_analyzer = ItemAnalyzer(lms, **own) if "item" in specialists else None

    def forward(self, query: str, item: str, guidance: str, **extra: str) -> dspy.Prediction:
        """Plan, consult, synthesise one argument; `extra`: further inputs of the plan and synthesis steps (a
        variant's, e.g. hiera+signals' `scorer_evidence`)."""
        plan = run_step("relation.plan", "relation", self.lms, self.plan, query=query, item=item, guidance=guidance,
                        **extra)
        findings, questions = [], {}
        for role, title, analyzer in (("query", "Query Analyzer", self.query_analyzer),
                                      ("item", "Item Analyzer", self.item_analyzer)):
            if analyzer is None or not plan.get(f"consult_{role}_analyzer"):
                continue
            if self.directed:  # an empty question still gets the Judge's gaps
                questions[role] = str(plan.get(QUESTIONS[role]) or "").strip() or f"The Judge's gaps: {guidance}"
                findings.append(format_answer(title, analyzer.ask(questions[role], query, item)))
            else:
                analysis = analyzer(**{role: query if role == "query" else item})
                findings.append(f"{title}: {analyzer.describe(analysis)}")
        passages = self._lookups(plan, findings)
        out = run_step("relation.synthesize", "relation", self.lms, self.synthesize, query=query, item=item,
                       guidance=guidance, findings="\n".join(findings) or "(no specialist consulted)", **extra)
        return dspy.Prediction(argument=out.argument, consulted=_consulted(plan, self), questions=questions,
                               passages=len(passages))

    async def aforward(self, query: str, item: str, guidance: str, **extra: str) -> dspy.Prediction:
        """`forward` through DSPy's async path."""
        plan = await arun_step("relation.plan", "relation", self.lms, self.plan, query=query, item=item,
                               guidance=guidance, **extra)
        findings, questions = [], {}
        for role, title, analyzer in (("query", "Query Analyzer", self.query_analyzer),
                                      ("item", "Item Analyzer", self.item_analyzer)):
            if analyzer is None or not plan.get(f"consult_{role}_analyzer"):
                continue
            if self.directed:
                questions[role] = str(plan.get(QUESTIONS[role]) or "").strip() or f"The Judge's gaps: {guidance}"
                findings.append(format_answer(title, await analyzer.aask(questions[role], query, item)))
            else:
                analysis = await analyzer.acall(**{role: query if role == "query" else item})
                findings.append(f"{title}: {analyzer.describe(analysis)}")
        passages = await asyncio.to_thread(self._lookups, plan, findings)  # a web search blocks: off the loop
        out = await arun_step("relation.synthesize", "relation", self.lms, self.synthesize, query=query, item=item,
                              guidance=guidance, findings="\n".join(findings) or "(no specialist consulted)",
                              **extra)
        return dspy.Prediction(argument=out.argument, consulted=_consulted(plan, self), questions=questions,
                               passages=len(passages))

    def _lookups(self, plan, findings: list[str]) -> list[Passage]:
        """The planned knowledge look-ups; their passages are appended to `findings`."""
        passages = lookup(self.knowledge, list(plan.lookups or []), self.k) if self.use_knowledge else []
        if passages:
            findings.append("Knowledge:\n" + render(passages))
        return passages


QUESTIONS = {"query": "question_for_query_analyzer", "item": "question_for_item_analyzer"}


def _consulted(plan, relation: RelationAnalyzer) -> list[str]:
    names = []
    if relation.query_analyzer is not None and plan.consult_query_analyzer:
        names.append("query")
    if relation.item_analyzer is not None and plan.consult_item_analyzer:
        names.append("item")
    if relation.use_knowledge and plan.lookups:
        names.append("knowledge")
    return names


def format_triage(dimensions: list[str], guidance: str) -> str:
    """The Judge's own triage as its decision step reads it."""
    dims = "; ".join(f"{d.replace('_', ' ')}: {v}" for d, v in zip(DIMENSIONS, dimensions))
    return f"{dims}. Guidance (the gaps): {guidance or '(none)'}"


class RelevanceJudge(dspy.Module):
    """J: triage over the three dimensions (a direct label when all are clear, with its reasoning), and the final
    decision reading its own triage and the evidence. `alone=True` (judge-only, delegation=never): one decision that
    performs the three-dimension assessment itself."""

    def __init__(self, scheme: LabelScheme, lms: RoleLMs, reasoning: bool = True, profile: str | None = None,
                 alone: bool = False):
        super().__init__()
        self.scheme = scheme
        self.lms = lms
        fitted = profiles.resolve(profile, lms, "judge")
        triage = profiles.fit(signatures.with_labels(JudgeTriage, scheme), fitted)
        self.triage = profiles.tag(dspy.Predict(triage), fitted)
        if alone:
            assessment = profiles.fit(signatures.with_labels(JudgeAssessment, scheme), fitted)
            self.decide = dspy.Predict(assessment if reasoning else assessment.delete("reasoning"))
        else:
            decision = signatures.with_labels(JudgeDecision, scheme)
            rationale = profiles.reasoning_field(fitted, REASONING_DESC)
            self.decide = dspy.ChainOfThought(decision, rationale_field=rationale) if reasoning else dspy.Predict(decision)
        self.alone = alone
        profiles.tag(self.decide, fitted)

    def assess(self, query: str, item: str, **extra: str) -> dspy.Prediction:
        """The triage: a label, the three dimensions, and guidance naming the gaps (`extra`: a variant's inputs)."""
        out = run_step("judge.triage", "judge", self.lms, self.triage, self.scheme, query=query, item=item,
                       label_definitions=self.scheme.describe(), **extra)
        return self._triaged(out)

    async def aassess(self, query: str, item: str, **extra: str) -> dspy.Prediction:
        """`assess` through DSPy's async path."""
        out = await arun_step("judge.triage", "judge", self.lms, self.triage, self.scheme, query=query, item=item,
                              label_definitions=self.scheme.describe(), **extra)
        return self._triaged(out)

    @staticmethod
    def _triaged(out: dspy.Prediction) -> dspy.Prediction:
        # a recovered (malformed) triage keeps only its label: its dimensions count as unclear, so it delegates
        dims = [getattr(out, f, "unclear") for f in DIMENSIONS]
        return dspy.Prediction(label=out.label, guidance=getattr(out, "guidance", ""),
                               reasoning=out.get("reasoning"), all_clear=all(d == "clear" for d in dims),
                               dimensions=dims, parse_recovered=out.get("parse_recovered"))

    def decide_label(self, query: str, item: str, evidence: str, triage: str = "", **extra: str) -> dspy.Prediction:
        """The final label from the triage and the evidence (alone: with its own assessment); `extra`: a variant's
        inputs."""
        if self.alone:
            return run_step("judge.decide", "judge", self.lms, self.decide, self.scheme, query=query, item=item,
                            label_definitions=self.scheme.describe(), **extra)
        return run_step("judge.decide", "judge", self.lms, self.decide, self.scheme, query=query, item=item,
                        label_definitions=self.scheme.describe(), triage=triage or NO_TRIAGE,
                        evidence=evidence or "(none)", **extra)

    async def adecide_label(self, query: str, item: str, evidence: str, triage: str = "",
                            **extra: str) -> dspy.Prediction:
        """`decide_label` through DSPy's async path."""
        if self.alone:
            return await arun_step("judge.decide", "judge", self.lms, self.decide, self.scheme, query=query,
                                   item=item, label_definitions=self.scheme.describe(), **extra)
        return await arun_step("judge.decide", "judge", self.lms, self.decide, self.scheme, query=query, item=item,
                               label_definitions=self.scheme.describe(), triage=triage or NO_TRIAGE,
                               evidence=evidence or "(none)", **extra)


NO_TRIAGE = "(not assessed: every pair is delegated)"
