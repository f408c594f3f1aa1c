"""The 11 baselines: each builds for a binary (msrd) and a graded (esci) scheme and labels through a fake LM; voting,
retrieval + MMR, staged control flow, knowledge concatenation, accounting, and state round-trips."""

import itertools
import json

import numpy as np
import pytest
from method_helpers import FACT, SCHEMES, FakeKnowledge, judge, make_ctx

from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import ROLES
from hiera_dspy.methods import available, build
from hiera_dspy.methods.baselines_ensembles import vote
from hiera_dspy.methods.baselines_examples import ExamplePool, mmr, per_label, retrieve
from hiera_dspy.testing import fake_lm, sent_texts

EXPECTED = {"zero-shot", "multi-criteria", "dna", "binary-graded", "multi-stage", "self-instruct", "rag-mmr", "raer",
            "prompt-blender", "llm-blender", "collabeval"}
BASELINES = sorted(name for name, info in available().items() if info.family == "baseline")
METHODS = BASELINES + ["dream"]


def test_every_baseline_is_registered_with_a_reference_and_knowledge_option():
    assert set(BASELINES) == EXPECTED
    for name in BASELINES:
        info = available()[name]
        assert "(" in info.doc and "20" in info.doc, name  # one line naming its reference
        assert info.defaults["with_knowledge"] is False and info.defaults["k"] is None  # the source's default


@pytest.mark.parametrize("scheme_name", SCHEMES)
@pytest.mark.parametrize("name", BASELINES)
def test_builds_and_labels_through_the_fake_lm(name, scheme_name):
    scheme = get_scheme(scheme_name)
    for answer in (None, scheme.labels[-1]):  # default answers (first option) and a scripted top label
        ctx, lm = make_ctx(scheme_name, {"label": answer} if answer else None)
        program = build(name, ctx)
        prediction, ledger = judge(program)
        assert prediction.label in scheme.labels
        assert ledger.calls == lm.engine.calls > 0  # every LM call is an accounted step
        assert {s.role for s in ledger.steps} <= set(ROLES)


@pytest.mark.parametrize("name", METHODS)
def test_named_predictors_and_state_round_trip(name):
    ctx, _ = make_ctx("esci", {"guidelines": "1. Exact needs every attribute."})
    program = build(name, ctx)
    predictors = program.named_predictors()
    assert predictors
    judge(program)  # self-instruct derives its guidelines here
    first_name, first = predictors[0]
    first.signature = first.signature.with_instructions("CUSTOM INSTRUCTIONS")
    state = program.dump_state()
    json.dumps(state)  # saved as JSON in artifacts
    fresh = build(name, make_ctx("esci")[0])
    fresh.load_state(state)
    assert fresh.dump_state() == state
    assert dict(fresh.named_predictors())[first_name].signature.instructions == "CUSTOM INSTRUCTIONS"


@pytest.mark.parametrize("name", METHODS)
def test_with_knowledge_is_concatenated_to_the_prompt(name):
    knowledge = FakeKnowledge()
    ctx, lm = make_ctx("esci", knowledge=knowledge)
    judge(build(name, ctx))
    assert not knowledge.searches and not any(FACT in p for p in sent_texts(lm))
    ctx, lm = make_ctx("esci", knowledge=knowledge)
    _, ledger = judge(build(name, ctx, with_knowledge=True))
    assert knowledge.searches == ["red running shoes Trail Runner"]
    assert any(FACT in p for p in sent_texts(lm))
    assert [s.name for s in ledger.steps].count("knowledge.search") == 1


# Aggregation -------------------------------------------------------------------------------------------------------

def test_vote_majority_and_ties_toward_the_median():
    esci = get_scheme("esci")
    assert vote(["Exact", "Irrelevant", "Exact"], esci) == "Exact"
    assert vote(["Exact", "Irrelevant", "Substitute"], esci) == "Substitute"  # 3-way tie: the median vote
    assert vote(["Complement", "Exact", "Irrelevant"], esci) == "Complement"
    assert vote(["Exact", "Exact", "Irrelevant", "Irrelevant"], esci) == "Irrelevant"  # equidistant: less relevant
    assert vote(["Exact", "Exact", "Complement", "Complement", "Irrelevant"], esci) == "Complement"  # median C
    assert vote(["Relevant", "Irrelevant"], get_scheme("msrd")) == "Irrelevant"


@pytest.mark.parametrize("answers, expected", [(["Exact", "Irrelevant", "Exact"], "Exact"),
                                               (["Exact", "Irrelevant", "Substitute"], "Substitute")])
def test_prompt_blender_votes_over_its_prompts(answers, expected):
    scripted = iter(answers)
    ctx, lm = make_ctx("esci", {"label": lambda prompt: next(scripted)})
    program = build("prompt-blender", ctx)
    prediction, ledger = judge(program)
    assert prediction.votes == answers and prediction.label == expected
    assert lm.engine.calls == 3 and len(program.named_predictors()) == 3
    systems = [h["messages"][0]["content"] for h in lm.history]
    assert len(set(systems)) == 3  # three formulations


def test_llm_blender_votes_over_the_ensemble_pool_and_falls_back_to_the_judge():
    pool = {"a": fake_lm({"label": "Exact"}), "b": fake_lm({"label": "Complement"}), "c": fake_lm({"label": "Exact"})}
    ctx, judge_lm = make_ctx("esci", ensemble=pool)
    prediction, ledger = judge(build("llm-blender", ctx))
    assert prediction.votes == {"a": "Exact", "b": "Complement", "c": "Exact"} and prediction.label == "Exact"
    assert [lm.engine.calls for lm in pool.values()] == [1, 1, 1] and judge_lm.engine.calls == 0
    assert [(s.name, s.role, s.calls) for s in ledger.steps] == [
        ("llm_blender.a", "judge", 1), ("llm_blender.b", "judge", 1), ("llm_blender.c", "judge", 1)]
    ctx, judge_lm = make_ctx("esci")
    prediction, _ = judge(build("llm-blender", ctx, n_models=2))
    assert list(prediction.votes) == ["judge-1", "judge-2"] and judge_lm.engine.calls == 2


def test_collabeval_discusses_then_the_final_judge_decides():
    def label(prompt):
        return "Exact" if "[[ ## discussion ## ]]" in prompt else "Irrelevant"

    ctx, lm = make_ctx("esci", {"label": label, "rationale": lambda p: "because" if "other_judgments" in p else "x"})
    program = build("collabeval", ctx, rounds=2)
    prediction, ledger = judge(program)
    assert prediction.label == "Exact" and prediction.votes == ["Irrelevant"] * 3
    assert [t["round"] for t in prediction.history] == [0] * 3 + [1] * 3 + [2] * 3
    assert lm.engine.calls == 3 * 3 + 1
    round1 = [p for p in sent_texts(lm) if "[[ ## other_judgments ## ]]\nEvaluator 2 (round 0)" in p]
    assert round1  # agent 1 sees the others' round-0 judgments


# Multi-step control flow --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme_name, relevance, label, expected, calls", [
    ("msrd", "relevant", None, "Relevant", 1), ("msrd", "not relevant", None, "Irrelevant", 1),
    ("esci", "not relevant", "Exact", "Irrelevant", 1), ("esci", "relevant", "Exact", "Exact", 2)])
def test_binary_graded(scheme_name, relevance, label, expected, calls):
    ctx, lm = make_ctx(scheme_name, {"relevance": relevance, **({"label": label} if label else {})})
    prediction, _ = judge(build("binary-graded", ctx))
    assert prediction.label == expected and lm.engine.calls == calls


def test_binary_graded_restricts_the_graded_step_to_relevant_labels():
    ctx, lm = make_ctx("esci", {"relevance": "relevant"})
    prediction, _ = judge(build("binary-graded", ctx))
    assert prediction.label == "Substitute"  # the fake LM's first allowed option: the threshold, not Irrelevant
    ctx, _ = make_ctx("esci", {"relevance": "relevant"})
    assert judge(build("binary-graded", ctx, threshold="Complement"))[0].label == "Complement"


@pytest.mark.parametrize("keep, expected, judge_calls", [(False, "Irrelevant", 0), (True, "Exact", 1)])
def test_multi_stage_filters_with_the_query_role_lm(keep, expected, judge_calls):
    stage1 = fake_lm({"keep": keep})
    ctx, judge_lm = make_ctx("esci", {"label": "Exact"}, query=stage1)
    prediction, ledger = judge(build("multi-stage", ctx))
    assert prediction.label == expected
    assert stage1.engine.calls == 1 and judge_lm.engine.calls == judge_calls
    assert ledger.steps[0].name == "multi_stage.filter" and ledger.steps[0].role == "query"


def test_raer_criteria_are_generated_refined_and_reused_per_query():
    ctx, lm = make_ctx("esci", {"criteria": ["is a shoe"], "refined_criteria": ["is a red shoe (essential)"]})
    program = build("raer", ctx)
    judge(program)
    _, ledger = judge(program, title="Other shoe")
    assert lm.engine.calls == 2 + 2  # generate + refine once, then one judgment per pair
    assert [s.name for s in ledger.steps] == ["raer.criteria", "raer.judge"]
    assert any("is a red shoe (essential)" in p for p in sent_texts(lm)[-2:])


# Learning from train pairs ------------------------------------------------------------------------------------------

def test_self_instruct_derives_guidelines_once_and_keeps_them_as_state():
    ctx, lm = make_ctx("esci", {"guidelines": "RULE-7: colour must match."})
    program = build("self-instruct", ctx)
    _, first = judge(program)
    _, second = judge(program)
    assert [s.name for s in first.steps] == ["self_instruct.guidelines", "self_instruct.judge"]
    assert [s.name for s in second.steps] == ["self_instruct.judge"]
    examples = [p for p in sent_texts(lm) if "[[ ## examples ## ]]" in p and "Label: Complement" in p]
    assert len(examples) == 1  # one derivation, from examples of every label
    state = program.dump_state()
    assert state["guidelines"] == "RULE-7: colour must match."
    ctx, lm = make_ctx("esci", train=[])  # a loaded program needs no train pairs
    loaded = build("self-instruct", ctx)
    loaded.load_state(state)
    _, ledger = judge(loaded)
    assert [s.name for s in ledger.steps] == ["self_instruct.judge"]
    assert any("RULE-7" in p for p in sent_texts(lm))


def test_self_instruct_without_train_pairs_fails_clearly():
    ctx, _ = make_ctx("esci", train=[])
    with pytest.raises(ValueError, match="train pairs"):
        judge(build("self-instruct", ctx))


def test_per_label_sampling():
    scheme = get_scheme("esci")
    ctx, _ = make_ctx("esci")
    chosen = per_label(ctx.train + ctx.train, scheme.labels, 3, seed=1)
    assert [p.label for p in chosen] == [label for label in scheme.labels for _ in range(3)]


def test_mmr_on_given_similarities():
    relevance = np.array([0.9, 0.85, 0.5, 0.1])
    similarity = np.array([[1, .95, .1, 0], [.95, 1, .2, 0], [.1, .2, 1, 0], [0, 0, 0, 1]])
    assert mmr(relevance, similarity, 3, 0.5) == [0, 2, 3]  # 1 is a near-duplicate of 0
    assert mmr(relevance, similarity, 3, 1.0) == [0, 1, 2]  # lambda 1: plain relevance
    assert mmr(np.array([0.9, -np.inf, 0.5]), np.eye(3), 3, 0.5) == [0, 2]  # -inf excludes


def test_retrieve_tiny_pool_skips_the_duplicate():
    pool = ["red running shoes", "red running shoes", "trail running shoes", "red wine glass", "blue denim jacket"]
    query = "red running shoes for trail"
    assert retrieve(query, pool, k=3) == [2, 0, 4]
    assert retrieve(query, pool, k=3, lambda_mmr=1.0) == [2, 0, 1]
    assert ExamplePool([]).select(query) == []


def test_rag_mmr_gives_retrieved_examples_and_never_the_pair_itself():
    ctx, lm = make_ctx("esci")
    target = ctx.train[0]
    program = build("rag-mmr", ctx, n_examples=2)
    prediction, _ = judge(program, query=target.query, title=target.item_title)
    ids = prediction.evidence.removeprefix("examples: ").split(", ")
    assert len(ids) == 2 and target.id not in ids
    user = lm.history[-1]["messages"][-1]["content"]
    assert user.count("Label: ") == 2 and "Example 2" in user


@pytest.mark.parametrize("name", ["self-instruct", "rag-mmr"])
def test_learning_baselines_need_labelled_pairs(name):
    ctx, _ = make_ctx("msrd", train=[])
    with pytest.raises(ValueError, match="train pairs"):
        judge(build(name, ctx))


def test_ledgers_use_only_known_roles_for_every_method_and_scheme():
    for name, scheme_name in itertools.product(METHODS, SCHEMES):
        ctx, _ = make_ctx(scheme_name, knowledge=FakeKnowledge())
        _, ledger = judge(build(name, ctx, with_knowledge=True))
        assert {s.role for s in ledger.steps} <= set(ROLES) | {"knowledge"}, name
