"""HIERA's four agents (arXiv 2608.00785, Sec. 4.2) as DSPy modules: every predictor is an attribute, so optimizers,
`named_predictors()` and `save()` see them. Each step runs under its role's LM and is accounted in the ledger.

Query and item analyses do not depend on the pair: they are computed once per distinct query / item per program and
handed to the specialist as context when the Relation Analyzer asks it a question about one pair. Length caps and
output budgets come from the model profile (`hiera_dspy.lm.profiles`). Every module has an `aforward` too (DSPy's
`acall` path, used by `--engine async`): the same steps, awaited.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import re
import threading
from contextlib import contextmanager
from typing import Callable

import dspy
from dspy.adapters.utils import parse_value
from dspy.utils.exceptions import AdapterParseError

import signatures
from hiera_dspy.knowledge import Knowledge, NoKnowledge, Passage, render
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm import ledger, profiles
from hiera_dspy.lm.roles import RoleLMs
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

_provisional: contextvars.ContextVar["dict | None"] = contextvars.ContextVar("hiera_memo_provisional", default=None)


@contextmanager
def provisional_memos():
    """Within the block, analyses computed are kept aside (visible to this context only) instead of entering the
    programs' memos; `commit_memos(scratch)` adds them afterwards. The batch engine judges a pair this way and
    commits only when the pair finished, so an analysis is paid for by exactly one finished pair."""
    scratch: dict = {}
    token = _provisional.set(scratch)
    try:
        yield scratch
    finally:
        _provisional.reset(token)


def commit_memos(scratch: dict) -> None:
    """Add the analyses a `provisional_memos()` block kept aside to their programs' memos (one already there
    wins)."""
    for memo, key, value in scratch.values():
        with memo._guard:
            memo._values.setdefault(key, value)


class Memo:
    """Per-program reuse of pair-independent analyses. Fresh on deepcopy (an optimizer's candidate starts empty).
    A value marked `parse_recovered` (salvaged from a malformed answer) is returned but never reused."""

    def __init__(self):
        self._values: dict = {}
        self._locks: dict = {}
        self._guard = threading.Lock()

    def __deepcopy__(self, memo):
        return Memo()

    def get_or_compute(self, key, compute: Callable[[], dict]) -> tuple[dict, bool]:
        """The value under `key` and whether it was reused; computes it once (threads on one key wait for it)."""
        scratch = _provisional.get()
        if scratch is not None:  # the batch engine's replay: keep it aside until the pair finishes
            with self._guard:
                if key in self._values:
                    return self._values[key], True
            if (id(self), key) in scratch:
                return scratch[(id(self), key)][2], True
            value = compute()
            if not value.get("parse_recovered"):
                scratch[(id(self), key)] = (self, key, value)
            return value, False
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # two threads on one query wait for one analysis instead of paying twice
            if key in self._values:
                return self._values[key], True
            value = compute()
            if not value.get("parse_recovered"):  # salvaged from a malformed answer: not reused, the next pair asks
                self._values[key] = value
            return value, False

    async def aget_or_compute(self, key, compute) -> tuple[dict, bool]:
        """`get_or_compute` for coroutines on one event loop: concurrent tasks on one key await one analysis."""
        with self._guard:
            if key in self._values:
                return self._values[key], True
            pending = self._locks.get(("async", key))
            owner = pending is None
            if owner:
                pending = self._locks[("async", key)] = asyncio.get_running_loop().create_future()
        if not owner:
            return await asyncio.shield(pending), True
        try:
            value = await compute()
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # retrieved: a failure nobody else awaited is not logged as "never retrieved"
            raise
        finally:
            with self._guard:
                self._locks.pop(("async", key), None)
        with self._guard:
            if not value.get("parse_recovered"):
                self._values[key] = value
        pending.set_result(value)
        return value, False


def fingerprint(predictor: dspy.Predict) -> str:
    """Identifies a predictor's prompt (instructions + demos): compiled and uncompiled analyses are never mixed."""
    state = json.dumps(predictor.dump_state(), sort_keys=True, default=str)
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def run_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
             **inputs) -> dspy.Prediction:
    """Call one predictor as a named, accounted step. An answer that still does not parse after the retries is salvaged
    (see `salvage`): the step is `parse_recovered`, and `degraded` when some of its outputs had to be defaulted; an
    answer with no label, or with nothing readable, fails the step (an `AdapterParseError` naming it)."""
    with ledger.step(name, role, lms.for_role(role)) as record:
        record.inputs, record.profile = ledger.shown(inputs), getattr(predictor, "profile", None)
        try:
            prediction = predictor(**inputs)
        except AdapterParseError as exc:
            prediction, record.degraded = salvage(exc, scheme, name)
            record.parse_recovered = True
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction


async def arun_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
                    **inputs) -> dspy.Prediction:
    """`run_step` through DSPy's async path (`predictor.acall`)."""
    with ledger.step(name, role, lms.for_role(role)) as record:
        record.inputs, record.profile = ledger.shown(inputs), getattr(predictor, "profile", None)
        try:
            prediction = await predictor.acall(**inputs)
        except AdapterParseError as exc:
            prediction, record.degraded = salvage(exc, scheme, name)
            record.parse_recovered = True
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction


def salvage(exc: AdapterParseError, scheme: LabelScheme | None, step: str = "") -> tuple[dspy.Prediction, list[str]]:
    """A usable prediction from an answer that did not parse (e.g. cut off at the token cap), and the output fields
    that had to be defaulted (consult, unclear, no look-ups, no text: see `_default`).

    The label comes only from an unambiguous label token in the label position (`recover_label`); without one, or
    when no output at all could be read, the step fails: a failure is never turned into a label or into empty
    evidence."""
    text = str(exc.lm_response or "")
    found = _partial_fields(text)
    values, defaulted = {}, []
    for name, field in exc.signature.output_fields.items():
        if name == "label":
            values[name] = recover_label(text, scheme) if scheme else None
            if values[name] is None:
                raise step_failed(exc, step, "no unambiguous label in the label position") from exc
            continue
        value = _read(found.get(name), field.annotation)
        if value is _UNREAD:
            value = _default(field.annotation)
            defaulted.append(name)
        values[name] = value
    if "label" not in values and len(defaulted) == len(values):
        raise step_failed(exc, step, "nothing in the answer could be read") from exc
    return dspy.Prediction(**values, parse_recovered=True), defaulted


def step_failed(exc: AdapterParseError, step: str, why: str) -> AdapterParseError:
    """The parse error, re-raised with the step that failed and why nothing could be salvaged."""
    return AdapterParseError(exc.adapter_name, exc.signature, exc.lm_response,
                             message=f"step {step or '?'} failed: {why}")


_UNREAD = object()


def _read(raw, annotation):
    """A salvaged field's value parsed to its type, or _UNREAD (absent, empty, or not of the field's type)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return _UNREAD
    options = getattr(annotation, "__args__", None) if str(annotation).startswith("typing.Literal") else None
    if options:
        by_case = {str(o).lower(): o for o in options}
        return by_case.get(str(raw).strip().strip("*'\"`").lower(), _UNREAD)
    if annotation is str:
        return str(raw).strip()
    try:
        return parse_value(raw, annotation)
    except Exception:  # noqa: BLE001 - any failure means the field was not readable
        return _UNREAD


def _default(annotation):
    """The cautious value of a field that could not be read: consult (True), unclear (a Literal's last option), no
    look-ups ([]), no text ("", so the caller's own fallback applies, e.g. the Judge's gaps for an empty question).
    The step is then `degraded`, and so is the judgment: counted, never a plain success."""
    if annotation is bool:
        return True
    if getattr(annotation, "__origin__", None) is list:
        return []
    if str(annotation).startswith("typing.Literal"):
        return annotation.__args__[-1]
    return "" if annotation is str else None


def _partial_fields(text: str) -> dict:
    """Fields of a possibly truncated JSON object, or of ChatAdapter's `[[ ## name ## ]]` sections."""
    if text.lstrip().startswith("{"):
        import json_repair

        try:
            parsed = json_repair.loads(text)
            if isinstance(parsed, dict):
                return parsed
        except Exception:  # noqa: BLE001 - salvage is best effort
            pass
    sections = re.split(r"\[\[ ## (\w+) ## \]\]", text)
    return {sections[i]: sections[i + 1].strip() for i in range(1, len(sections) - 1, 2)}


_LABEL_MARKER = re.compile(r"\blabel\b\s*(?:\bis\b|[:=])\s*", re.I)
_AFTER_LABEL = tuple(".,;:!)]*_\"'`-\u2013\u2014(")  # what may follow a label token: punctuation, never another word


def recover_label(text: str | None, scheme: LabelScheme) -> str | None:
    """The label of a malformed answer, only from an unambiguous label token in the label position.

    The label position is the `label` field of a JSON object or of `[[ ## label ## ]]` sections, else the whole answer;
    within it, the text after its last "label:" / "label is" / "label =", else its first line. It must start with one
    label (any case; markdown emphasis and quotes ignored) followed by nothing or by punctuation: "Highly Relevant!",
    "**Substitute**, as it..." and "the label is Irrelevant" are recovered; "not relevant", "I'm sorry, but this item
    is not relevant", "not an exact match" and "partial match" are not (None: the step fails, the row is an error).
    """
    if not text:
        return None
    text = str(text)
    fields = _partial_fields(text)
    if fields and "label" not in fields:
        return None  # a structured answer without its label: the label position is empty
    position = str(fields["label"]) if fields else text
    markers = list(_LABEL_MARKER.finditer(position))
    return _leading_label(position[markers[-1].end():] if markers else position, scheme)


def _leading_label(value: str, scheme: LabelScheme) -> str | None:
    value = value.strip().lstrip("*_\"'`").lstrip()
    for label in sorted(scheme.labels, key=len, reverse=True):  # longest first: "Partially relevant" before others
        if value[:len(label)].lower() != label.lower():
            continue
        rest = value[len(label):].split("\n", 1)[0].strip()
        return label if not rest or rest.startswith(_AFTER_LABEL) else None
    return None


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
        book.add(ledger.Step(name=name, role=role, outputs={**outputs, "reused": True}))


def lookup(knowledge: Knowledge, queries: list[str], k: int | None, name: str = "knowledge.search",
           limit: int = 2) -> list[Passage]:
    """At most `limit` knowledge look-ups as one accounted step (no LM call); k None: the source's default."""
    if not queries and name != "knowledge.search":
        return []
    passages: list[Passage] = []
    with ledger.step(name, "knowledge", None) as record:
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
