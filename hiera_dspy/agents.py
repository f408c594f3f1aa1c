"""HIERA's four agents (arXiv 2608.00785, Sec. 4.2) as DSPy modules: every predictor is an attribute, so optimizers,
`named_predictors()` and `save()` see them. Each step runs under its role's LM and is accounted in the ledger.

Query and item analyses do not depend on the pair: they are computed once per distinct query / item per program.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Callable

import dspy
from dspy.utils.exceptions import AdapterParseError

import signatures
from hiera_dspy import accounting
from hiera_dspy.knowledge import Knowledge, NoKnowledge, Passage, render
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lms import RoleLMs
from signatures.hiera import REASONING, ItemAnalysis, JudgeDecision, JudgeTriage, QueryAnalysis, RelationPlan, RelationSynthesis


class Memo:
    """Per-program reuse of pair-independent analyses. Fresh on deepcopy (an optimizer's candidate starts empty)."""

    def __init__(self):
        self._values: dict = {}
        self._locks: dict = {}
        self._guard = threading.Lock()

    def __deepcopy__(self, memo):
        return Memo()

    def get_or_compute(self, key, compute: Callable[[], dict]) -> tuple[dict, bool]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # two threads on one query wait for one analysis instead of paying twice
            if key in self._values:
                return self._values[key], True
            value = compute()
            self._values[key] = value
            return value, False


def fingerprint(predictor: dspy.Predict) -> str:
    """Identifies a predictor's prompt (instructions + demos): compiled and uncompiled analyses are never mixed."""
    state = json.dumps(predictor.dump_state(), sort_keys=True, default=str)
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def run_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
             **inputs) -> dspy.Prediction:
    """Call one predictor as a named, accounted step; recover the label from an unparseable answer when possible."""
    with accounting.step(name, role, lms.for_role(role)) as record:
        try:
            prediction = predictor(**inputs)
        except AdapterParseError as exc:
            prediction = salvage(exc, scheme)
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction


def salvage(exc: AdapterParseError, scheme: LabelScheme | None) -> dspy.Prediction:
    """A usable prediction from an answer that did not parse (e.g. cut off at the token cap): the fields that can be
    read, cautious defaults for the rest (consult, unclear, no look-ups, empty text), the label recovered from the text.
    Re-raises when a label was expected and none can be found."""
    text = str(exc.lm_response or "")
    found = _partial_fields(text)
    values = {}
    for name, field in exc.signature.output_fields.items():
        annotation = field.annotation
        raw = found.get(name)
        if name == "label":
            label = recover_label(str(raw), scheme) if raw is not None and scheme else None
            label = label or (recover_label(text, scheme) if scheme else None)
            if label is None:
                raise exc
            values[name] = label
        elif annotation is bool:
            values[name] = raw if isinstance(raw, bool) else True
        elif getattr(annotation, "__origin__", None) is list:
            values[name] = raw if isinstance(raw, list) else []
        elif getattr(annotation, "__args__", None) and str(annotation).startswith("typing.Literal"):
            options = annotation.__args__
            values[name] = raw if raw in options else options[-1]
        else:
            values[name] = str(raw) if raw is not None else ""
    return dspy.Prediction(**values, parse_recovered=True)


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


def recover_label(text: str | None, scheme: LabelScheme) -> str | None:
    """The last scheme label named in a malformed answer (longest labels first, so 'Partially relevant' wins)."""
    if not text:
        return None
    tail = str(text).split("label", 1)[-1] if "label" in str(text) else str(text)
    pattern = r"\b(?:" + "|".join(re.escape(label) for label in sorted(scheme.labels, key=len, reverse=True)) + r")\b"
    found = re.findall(pattern, tail, flags=re.I)
    if not found:
        return None
    return scheme.from_raw(found[-1])


class _Specialist(dspy.Module):
    """A pair-independent analysis of one input text, computed once per distinct text (and prompt) per program."""

    role: str
    signature: type[dspy.Signature]

    def __init__(self, lms: RoleLMs):
        super().__init__()
        self.lms = lms
        self.analyze = dspy.Predict(self.signature)
        self.memo = Memo()

    def forward(self, **inputs: str) -> dspy.Prediction:
        (text,) = inputs.values()
        name = f"{self.role}.analyze"

        def compute():
            out = run_step(name, self.role, self.lms, self.analyze, **inputs)
            return {field: getattr(out, field) for field in self.signature.output_fields}

        value, reused = self.memo.get_or_compute((text, fingerprint(self.analyze)), compute)
        if reused:
            _record_reuse(name, self.role, value)
        return dspy.Prediction(**value)


class QueryAnalyzer(_Specialist):
    """Q: explicit requirements and implicit intent of the query (reused per distinct query)."""

    role, signature = "query", QueryAnalysis


class ItemAnalyzer(_Specialist):
    """I: stated and inferred properties of the item (reused per distinct item)."""

    role, signature = "item", ItemAnalysis


def _record_reuse(name: str, role: str, outputs: dict) -> None:
    ledger = accounting.current()
    if ledger is not None:
        ledger.add(accounting.Step(name=name, role=role, outputs={**outputs, "reused": True}))


def lookup(knowledge: Knowledge, queries: list[str], k: int) -> list[Passage]:
    """Knowledge look-ups as an accounted step (no LM call)."""
    passages: list[Passage] = []
    with accounting.step("knowledge.search", "knowledge", None) as record:
        for text in queries[:2]:
            passages += knowledge.search(str(text), k)
        record.outputs = {"lookups": list(queries[:2]), "passages": [p.to_dict() for p in passages]}
    return passages


def format_query_analysis(q: dspy.Prediction) -> str:
    return f"Query Analyzer: explicit requirements: {q.explicit_requirements}; implicit intent: {q.implicit_intent}"


def format_item_analysis(i: dspy.Prediction) -> str:
    return f"Item Analyzer: stated: {i.stated_properties}; inferred: {i.inferred_properties}"


class RelationAnalyzer(dspy.Module):
    """R: plans which specialists and look-ups the Judge's gaps need, consults them, synthesises one argument.

    Specialists never talk to the Judge: everything they find passes through this synthesis.
    """

    def __init__(self, lms: RoleLMs, knowledge: Knowledge | None = None, k: int = 3,
                 specialists: tuple[str, ...] = ("query", "item"), use_knowledge: bool = True):
        super().__init__()
        self.lms = lms
        self.knowledge = knowledge or NoKnowledge()
        self.k = k
        self.specialists = specialists
        self.use_knowledge = use_knowledge
        self.plan = dspy.Predict(RelationPlan)
        self.synthesize = dspy.Predict(RelationSynthesis)
        self.query_analyzer = QueryAnalyzer(lms) if "query" in specialists else None
        self.item_analyzer = ItemAnalyzer(lms) if "item" in specialists else None

    def forward(self, query: str, item: str, guidance: str) -> dspy.Prediction:
        plan = run_step("relation.plan", "relation", self.lms, self.plan, query=query, item=item, guidance=guidance)
        findings = []
        if self.query_analyzer is not None and plan.consult_query_analyzer:
            findings.append(format_query_analysis(self.query_analyzer(query=query)))
        if self.item_analyzer is not None and plan.consult_item_analyzer:
            findings.append(format_item_analysis(self.item_analyzer(item=item)))
        passages = lookup(self.knowledge, list(plan.lookups or []), self.k) if self.use_knowledge else []
        if passages:
            findings.append("Knowledge:\n" + render(passages))
        out = run_step("relation.synthesize", "relation", self.lms, self.synthesize, query=query, item=item,
                       guidance=guidance, findings="\n".join(findings) or "(no specialist consulted)")
        return dspy.Prediction(argument=out.argument, consulted=_consulted(plan, self), passages=len(passages))


def _consulted(plan, relation: RelationAnalyzer) -> list[str]:
    names = []
    if relation.query_analyzer is not None and plan.consult_query_analyzer:
        names.append("query")
    if relation.item_analyzer is not None and plan.consult_item_analyzer:
        names.append("item")
    if relation.use_knowledge and plan.lookups:
        names.append("knowledge")
    return names


class RelevanceJudge(dspy.Module):
    """J: triage over the three dimensions, and the final decision given the evidence."""

    def __init__(self, scheme: LabelScheme, lms: RoleLMs, reasoning: bool = True):
        super().__init__()
        self.scheme = scheme
        self.lms = lms
        self.triage = dspy.Predict(signatures.with_labels(JudgeTriage, scheme))
        decision = signatures.with_labels(JudgeDecision, scheme)
        self.decide = dspy.ChainOfThought(decision, rationale_field=REASONING) if reasoning else dspy.Predict(decision)

    def assess(self, query: str, item: str) -> dspy.Prediction:
        out = run_step("judge.triage", "judge", self.lms, self.triage, self.scheme, query=query, item=item,
                       label_definitions=self.scheme.describe())
        # a recovered (malformed) triage keeps only its label: its dimensions count as unclear, so it delegates
        dims = [getattr(out, f, "unclear") for f in ("query_interpretability", "information_completeness",
                                                     "relational_transparency")]
        return dspy.Prediction(label=out.label, guidance=getattr(out, "guidance", ""),
                               all_clear=all(d == "clear" for d in dims), dimensions=dims,
                               parse_recovered=out.get("parse_recovered"))

    def decide_label(self, query: str, item: str, evidence: str) -> dspy.Prediction:
        return run_step("judge.decide", "judge", self.lms, self.decide, self.scheme, query=query, item=item,
                        label_definitions=self.scheme.describe(), evidence=evidence or "(none)")
