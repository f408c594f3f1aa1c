"""HIERA's graph: triage, delegation, the Relation Analyzer's plan, reuse of analyses, and every ablation graph."""

from __future__ import annotations

import dspy
import pytest

from hiera_dspy.knowledge import NoKnowledge
from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.methods.graphs import ABLATIONS

MSRD = get_scheme("msrd")
RELATION_STEPS = {"relation.plan", "relation.synthesize", "query.analyze", "item.analyze", "knowledge.search",
                  "query.answer", "item.answer", "query.search", "item.search"}
# directed consultation: each specialist's cached analysis, its answer to R's question, its own look-up, its answer
# again with the passages; then R's own look-ups
FULL_DELEGATED = ["judge.triage", "relation.plan",
                  "query.analyze", "query.answer", "query.search", "query.answer",
                  "item.analyze", "item.answer", "item.search", "item.answer",
                  "knowledge.search", "relation.synthesize", "judge.decide"]
UNDIRECTED = ["judge.triage", "relation.plan", "query.analyze", "item.analyze", "knowledge.search",
              "relation.synthesize", "judge.decide"]


def names(ledger) -> list[str]:
    return [s.name for s in ledger.steps]


def triage_then_decide(h, triage_label="Irrelevant", decide_label="Relevant"):
    """A label answer that differs between the triage and the decision prompts."""
    return lambda prompt: decide_label if h.is_decision(prompt) else triage_label


def program(lms, method="hiera", knowledge=None, **config):
    return build(method, BuildContext(MSRD, lms, knowledge or NoKnowledge()), **config)


def judge(prog, h, **kw):
    p = h.pair(**kw)
    return h.judge_once(prog, p)


# --- triage: direct vs delegated ---------------------------------------------------------------------------------

def test_all_clear_triage_labels_directly(h):
    lms = h.make_role_lms({"label": triage_then_decide(h)})  # every Clarity defaults to "clear"
    out, ledger = judge(program(lms, knowledge=h.FakeKnowledge()), h)
    assert out.label == "Irrelevant"  # the triage's label, not the decision's
    assert out.delegated is False
    assert names(ledger) == ["judge.triage"]
    assert not RELATION_STEPS & set(names(ledger))
    assert h.engine_calls(lms)["judge"] == 1
    assert ledger.calls == 1 and ledger.tokens > 0


@pytest.mark.parametrize("unclear", ["query_interpretability", "information_completeness", "relational_transparency"])
def test_one_unclear_dimension_delegates(h, unclear):
    knowledge = h.FakeKnowledge()
    lms = h.make_role_lms({unclear: "unclear", "label": triage_then_decide(h)})
    out, ledger = judge(program(lms, knowledge=knowledge), h)
    assert out.delegated is True
    assert out.label == "Relevant"  # the decision's label
    assert names(ledger) == FULL_DELEGATED
    for step in ledger.steps:  # a look-up is not an LM call
        assert step.calls == (0 if step.name.endswith(".search") else 1), step.name
    assert ledger.steps[0].outputs[unclear] == "unclear"
    assert ledger.calls == 10


def test_roles_use_their_own_lm(h):
    lms = h.make_role_lms({"relational_transparency": "unclear"}, per_role=True)
    judge(program(lms), h)  # no knowledge source: the specialists answer without look-ups
    assert h.engine_calls(lms) == {"judge": 2, "relation": 2, "query": 2, "item": 2}


# --- the Relation Analyzer's plan ---------------------------------------------------------------------------------

def test_plan_skips_the_query_analyzer(h):
    knowledge = h.FakeKnowledge()
    lms = h.make_role_lms({"relational_transparency": "unclear", "consult_query_analyzer": False,
                           "lookups": ["who directed it"]}, per_role=True)
    out, ledger = judge(program(lms, knowledge=knowledge), h)
    assert "query.analyze" not in names(ledger)
    assert "item.analyze" in names(ledger)
    assert h.engine_calls(lms)["query"] == 0


def test_plan_skips_both_analyzers(h):
    lms = h.make_role_lms({"relational_transparency": "unclear", "consult_query_analyzer": False,
                           "consult_item_analyzer": False, "lookups": []}, per_role=True)
    recorder = h.Recorder()
    lms["relation"].engine.answers["argument"] = recorder.answer("synth", "ARG")
    out, ledger = judge(program(lms, knowledge=h.FakeKnowledge()), h)
    assert not {"query.analyze", "item.analyze"} & set(names(ledger))
    assert "(no specialist consulted)" in recorder.of("synth")[0]


def test_no_lookups_means_no_knowledge(h):
    knowledge = h.FakeKnowledge()
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "lookups": [],
                           "argument": recorder.answer("synth", "ARG")})
    out, ledger = judge(program(lms, knowledge=knowledge), h)
    assert knowledge.calls == []
    searches = [s for s in ledger.steps if s.name == "knowledge.search"]
    assert all(s.outputs["passages"] == [] for s in searches)
    assert "Knowledge:" not in recorder.of("synth")[0]
    assert "KB-PASSAGE-TEXT" not in recorder.of("synth")[0]


def test_lookups_reach_the_synthesis_prompt(h):
    knowledge = h.FakeKnowledge()
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "lookups": ["first lookup", "second", "third"],
                           "argument": recorder.answer("synth", "ARG")})
    out, ledger = judge(program(lms, knowledge=knowledge, k=2), h)
    # each specialist one look-up of its own (specialist_lookups=1), R at most two; k passages each
    assert knowledge.calls == [("first lookup", 2), ("first lookup", 2), ("first lookup", 2), ("second", 2)]
    search = next(s for s in ledger.steps if s.name == "knowledge.search")
    assert search.outputs["lookups"] == ["first lookup", "second"]
    assert len(search.outputs["passages"]) == 2
    synth = recorder.of("synth")[0]
    assert "Knowledge:" in synth and "KB-PASSAGE-TEXT" in synth and "<knowledge source=" in synth


def test_guidance_reaches_the_relation_analyzer(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "guidance": "GUIDE-42",
                           "consult_item_analyzer": recorder.answer("plan", True),
                           "argument": recorder.answer("synth", "ARG")})
    judge(program(lms), h)
    assert "GUIDE-42" in recorder.of("plan")[0]
    assert "GUIDE-42" in recorder.of("synth")[0]


def test_specialists_reach_the_judge_only_through_the_argument(h):
    knowledge = h.FakeKnowledge()
    recorder = h.Recorder()
    lms = h.make_role_lms({
        "relational_transparency": "unclear", "lookups": ["a lookup"],
        "explicit_requirements": "QA-EXPLICIT", "implicit_intent": "QA-IMPLICIT",
        "stated_properties": "IA-STATED", "inferred_properties": "IA-INFERRED",
        "argument": recorder.answer("synth", "ARG-SYNTHESIS"),
        "label": recorder.answer("label", triage_then_decide(h)),
    })
    out, ledger = judge(program(lms, knowledge=knowledge), h)
    synth = recorder.of("synth")[0]
    for marker in ("QA-EXPLICIT", "QA-IMPLICIT", "IA-STATED", "IA-INFERRED", "KB-PASSAGE-TEXT"):
        assert marker in synth
    decisions = [p for p in recorder.of("label") if h.is_decision(p)]
    assert len(decisions) == 1
    assert "ARG-SYNTHESIS" in decisions[0]
    for marker in ("QA-EXPLICIT", "QA-IMPLICIT", "IA-STATED", "IA-INFERRED", "KB-PASSAGE-TEXT", "KB-TITLE"):
        assert marker not in decisions[0]
    assert out.evidence == "ARG-SYNTHESIS"


# --- delegation policy --------------------------------------------------------------------------------------------

def test_delegation_always_skips_triage(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"consult_item_analyzer": recorder.answer("plan", True)})  # triage would say all clear
    out, ledger = judge(program(lms, knowledge=h.FakeKnowledge(), delegation="always"), h)
    assert names(ledger) == FULL_DELEGATED[1:]
    assert out.delegated is True
    assert "Assess every dimension." in recorder.of("plan")[0]


def test_delegation_never_decides_alone(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear",
                           "label": recorder.answer("label", triage_then_decide(h))})
    out, ledger = judge(program(lms, knowledge=h.FakeKnowledge(), delegation="never"), h)
    assert names(ledger) == ["judge.decide"]
    assert out.delegated is False and out.label == "Irrelevant"  # one call, no triage prompt to tell apart
    assert len(recorder.of("label")) == 1
    # deciding alone, the Judge still performs the three-dimension assessment
    assert ledger.steps[0].outputs["relational_transparency"] == "unclear"
    assert {"query_interpretability", "information_completeness", "reasoning"} <= set(ledger.steps[0].outputs)


# --- reuse of pair-independent analyses ---------------------------------------------------------------------------

def test_same_query_is_analysed_once(h):
    lms = h.make_role_lms({"relational_transparency": "unclear"}, per_role=True)
    prog = program(lms, consultation="undirected")
    _, first = judge(prog, h, i=1, title="Mission: Impossible")
    _, second = judge(prog, h, i=2, title="Top Gun")
    assert h.engine_calls(lms)["query"] == 1
    assert h.engine_calls(lms)["item"] == 2  # different items
    q1 = next(s for s in first.steps if s.name == "query.analyze")
    q2 = next(s for s in second.steps if s.name == "query.analyze")
    assert q1.calls == 1 and "reused" not in q1.outputs
    assert q2.calls == 0 and q2.prompt_tokens == 0 and q2.outputs["reused"] is True
    assert q2.outputs["explicit_requirements"] == q1.outputs["explicit_requirements"]
    assert second.by_role()["query"]["calls"] == 0

    _, third = judge(prog, h, i=3, query="another query", title="Top Gun")
    assert h.engine_calls(lms)["query"] == 2  # a new query is analysed
    assert h.engine_calls(lms)["item"] == 2  # the same item is reused
    assert next(s for s in third.steps if s.name == "item.analyze").outputs["reused"] is True


def test_reuse_is_per_prompt_and_per_copy(h):
    lms = h.make_role_lms({"relational_transparency": "unclear"}, per_role=True)
    prog = program(lms, consultation="undirected")
    judge(prog, h)
    judge(prog, h)
    assert h.engine_calls(lms)["query"] == 1
    copy = prog.deepcopy()  # an optimizer's candidate starts with an empty memo
    judge(copy, h)
    assert h.engine_calls(lms)["query"] == 2
    # a changed prompt (here: a demo) is never served an analysis made with the old prompt
    prog.relation.query_analyzer.analyze.demos = [
        dspy.Example(query="x", explicit_requirements="a", implicit_intent="b")]
    judge(prog, h)
    assert h.engine_calls(lms)["query"] == 3


def test_concurrent_same_query_pays_once(h):
    from concurrent.futures import ThreadPoolExecutor

    lms = h.make_role_lms({"relational_transparency": "unclear"}, per_role=True, latency=0.02)
    prog = program(lms, consultation="undirected")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: judge(prog, h, i=i, title=f"movie {i}"), range(4)))
    assert h.engine_calls(lms)["query"] == 1
    assert h.engine_calls(lms)["item"] == 4


# --- ablation graphs ----------------------------------------------------------------------------------------------

EXPECTED = {
    "hiera": FULL_DELEGATED,
    "judge-only": ["judge.decide"],
    "judge+web": ["judge.triage", "knowledge.search", "judge.decide"],
    "judge+relation": ["judge.triage", "relation.plan", "relation.synthesize", "judge.decide"],
    "judge+relation+web": ["judge.triage", "relation.plan", "knowledge.search", "relation.synthesize",
                           "judge.decide"],
    "judge+qi": ["judge.triage", "query.analyze", "item.analyze", "judge.decide"],
    "judge+qi+web": ["judge.triage", "query.analyze", "item.analyze", "knowledge.search", "judge.decide"],
    "judge+all-uncoordinated": ["judge.triage", "relation.plan", "relation.synthesize", "query.analyze",
                                "item.analyze", "knowledge.search", "judge.decide"],
}


def test_every_ablation_has_expectations():
    assert set(ABLATIONS) == set(EXPECTED)


@pytest.mark.parametrize("method", ABLATIONS)
def test_ablation_graph_steps(h, method):
    knowledge = h.FakeKnowledge()
    recorder = h.Recorder()
    label = "Relevant" if method == "judge-only" else triage_then_decide(h)  # judge-only: no triage prompt
    lms = h.make_role_lms({"relational_transparency": "unclear", "argument": "ARG-SYNTHESIS",
                           "explicit_requirements": "QA-EXPLICIT", "stated_properties": "IA-STATED",
                           "label": recorder.answer("label", label)})
    prog = program(lms, method, knowledge=knowledge)
    assert prog.method == method
    out, ledger = judge(prog, h)
    assert names(ledger) == EXPECTED[method]
    assert out.label == "Relevant"
    assert out.delegated is (method != "judge-only")
    decision = recorder.of("label")[-1]  # the decision is always the last labelling prompt
    if method in ("hiera", "judge+relation", "judge+relation+web"):  # hierarchical: one argument reaches the Judge
        assert out.evidence == "ARG-SYNTHESIS"
        assert "QA-EXPLICIT" not in decision and "KB-PASSAGE-TEXT" not in decision
    if method in ("judge+qi", "judge+qi+web", "judge+all-uncoordinated"):  # concatenated analyses reach the Judge
        assert "QA-EXPLICIT" in decision and "IA-STATED" in decision
    if method in ("judge+web", "judge+qi+web", "judge+all-uncoordinated"):  # knowledge goes straight to the Judge
        assert knowledge.calls == [("tom cruise spy movie Mission: Impossible", 3)]
        assert "KB-PASSAGE-TEXT" in decision
    if method == "judge+all-uncoordinated":
        assert "Relation Analyzer: ARG-SYNTHESIS" in decision
    if method in ("judge-only", "judge+relation", "judge+qi"):
        assert knowledge.calls == []


@pytest.mark.parametrize("method", [m for m in ABLATIONS if m != "judge-only"])
def test_ablation_all_clear_is_direct(h, method):
    lms = h.make_role_lms()
    out, ledger = judge(program(lms, method, knowledge=h.FakeKnowledge()), h)
    assert names(ledger) == ["judge.triage"] and out.delegated is False


# --- directed consultation (paper Sec. 4.2) -----------------------------------------------------------------------

def test_plan_question_reaches_the_specialist_with_the_pair_in_view(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "guidance": "GAP-COLOUR",
                           "question_for_item_analyzer": recorder.answer("plan", "VERIFY-GRAY-FINISH"),
                           "question_for_query_analyzer": "DOES-GRAY-MEAN-COLOUR",
                           "stated_properties": "IA-STATED", "explicit_requirements": "QA-EXPLICIT",
                           "answer": recorder.answer("answer", lambda p: "ANS-" + p.split("## question ## ]]")[1]
                                                     .split("[[")[0].strip()),
                           "argument": recorder.answer("synth", "ARG"), "lookups": []})
    out, ledger = judge(program(lms, knowledge=h.FakeKnowledge()), h)
    assert "GAP-COLOUR" in recorder.of("plan")[0]  # R plans from the Judge's gaps
    asked_query, asked_item = recorder.of("answer")
    assert "DOES-GRAY-MEAN-COLOUR" in asked_query and "VERIFY-GRAY-FINISH" in asked_item
    for prompt in (asked_query, asked_item):  # the pair in view
        assert "tom cruise spy movie" in prompt and "Mission: Impossible" in prompt
    assert "QA-EXPLICIT" in asked_query and "IA-STATED" in asked_item  # the cached analysis as context
    synth = recorder.of("synth")[0]
    assert "ANS-DOES-GRAY-MEAN-COLOUR" in synth and "ANS-VERIFY-GRAY-FINISH" in synth
    answers = [s for s in ledger.steps if s.name == "item.answer"]
    assert answers[0].outputs["answer"] == "ANS-VERIFY-GRAY-FINISH"
    assert out.evidence == "ARG"


def test_an_empty_question_still_carries_the_gaps(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "guidance": "GAP-42",
                           "question_for_item_analyzer": "", "consult_query_analyzer": False, "lookups": [],
                           "answer": recorder.answer("answer", "A")})
    judge(program(lms), h)
    assert "The Judge's gaps: GAP-42" in recorder.of("answer")[0]


def test_directed_answers_are_per_pair_analyses_per_query(h):
    lms = h.make_role_lms({"relational_transparency": "unclear", "lookups": []}, per_role=True)
    prog = program(lms)
    judge(prog, h, i=1, title="Mission: Impossible")
    _, second = judge(prog, h, i=2, title="Top Gun")
    assert h.engine_calls(lms)["query"] == 3  # one analysis of the shared query, one answer per pair
    analysis = next(s for s in second.steps if s.name == "query.analyze")
    assert analysis.outputs["reused"] is True and analysis.calls == 0


def test_undirected_consultation_is_the_pair_independent_flow(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "explicit_requirements": "QA-EXPLICIT",
                           "argument": recorder.answer("synth", "ARG")})
    prog = program(lms, knowledge=h.FakeKnowledge(), consultation="undirected")
    _, ledger = judge(prog, h)
    assert names(ledger) == UNDIRECTED
    assert "question_for_item_analyzer" not in prog.relation.plan.signature.output_fields
    assert "QA-EXPLICIT" in recorder.of("synth")[0]


# --- specialists' own look-ups (paper A.1) ------------------------------------------------------------------------

def test_specialist_lookups_are_bounded_accounted_and_answered_with(h):
    knowledge = h.FakeKnowledge()
    recorder = h.Recorder()
    lms = h.make_role_lms({"relational_transparency": "unclear", "consult_query_analyzer": False,
                           "lookups": lambda p: ["ITEM-FACT", "second", "third"] if "## question ##" in p else [],
                           "answer": recorder.answer("answer", "A")})
    _, ledger = judge(program(lms, knowledge=knowledge, specialist_lookups=1), h)
    assert knowledge.calls == [("ITEM-FACT", 3)]  # one look-up of its own, the source's default k
    search = next(s for s in ledger.steps if s.name == "item.search")
    assert search.calls == 0 and search.outputs["lookups"] == ["ITEM-FACT"] and len(search.outputs["passages"]) == 1
    first, second = recorder.of("answer")
    assert "KB-PASSAGE-TEXT" not in first and "KB-PASSAGE-TEXT" in second  # the passages come back to it

    knowledge.calls.clear()
    _, ledger = judge(program(lms, knowledge=knowledge, specialist_lookups=0), h)
    assert knowledge.calls == [] and "item.search" not in names(ledger)


def test_specialist_lookups_are_cached(h, tmp_path):
    from hiera_dspy.knowledge.cache import CachedKnowledge

    source = h.FakeKnowledge()
    cached = CachedKnowledge(source, str(tmp_path))
    lms = h.make_role_lms({"relational_transparency": "unclear", "consult_query_analyzer": False,
                           "lookups": lambda p: ["ITEM-FACT"] if "## question ##" in p else []})
    prog = program(lms, knowledge=cached)
    judge(prog, h, i=1)
    judge(prog, h, i=2)
    assert source.calls == [("ITEM-FACT", 3)] and cached.hits == 1


# --- the Judge keeps its triage -------------------------------------------------------------------------------------

def test_the_decision_reads_the_triage(h):
    recorder = h.Recorder()
    lms = h.make_role_lms({"information_completeness": "unclear", "guidance": "GAP-ITEM-INFO",
                           "label": recorder.answer("label", triage_then_decide(h))})
    judge(program(lms), h)
    decision = recorder.of("label")[-1]
    assert "[[ ## triage ## ]]" in decision
    assert "information completeness: unclear" in decision and "query interpretability: clear" in decision
    assert "GAP-ITEM-INFO" in decision


def test_a_direct_label_comes_with_reasoning(h):
    lms = h.make_role_lms({"reasoning": "TRIAGE-REASONING"})
    out, ledger = judge(program(lms), h)
    assert out.delegated is False and out.reasoning == "TRIAGE-REASONING"
    assert ledger.steps[0].outputs["reasoning"] == "TRIAGE-REASONING"


def test_judge_only_performs_the_three_dimension_assessment(h):
    lms = h.make_role_lms({"information_completeness": "unclear", "reasoning": "ALONE-REASONING"})
    prog = program(lms, "judge-only")
    out, ledger = judge(prog, h)
    assert names(ledger) == ["judge.decide"] and ledger.calls == 1
    outputs = ledger.steps[0].outputs
    assert outputs["information_completeness"] == "unclear" and outputs["query_interpretability"] == "clear"
    assert out.reasoning == "ALONE-REASONING"
    assert "relational transparency" in prog.judge.decide.signature.instructions
