"""DREAM's debate control flow with scripted debaters: agreement labels (binary and graded), persistent disagreement
escalates with the full history, and the runner turns an escalation into an unlabelled, escalated row."""

import pytest
from method_helpers import SCHEMES, judge, make_ctx

from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import build
from hiera_dspy.records import Pair
from hiera_dspy.runs.runner import judge_one
from hiera_dspy.testing import sent_texts

ADVOCATE = "[[ ## initial_stance ## ]]\nrelevant"


def stubborn(prompt):
    """Each debater keeps its initial stance."""
    return "relevant" if ADVOCATE in prompt else "not relevant"


def skeptic_concedes_in_round(n):
    """The advocate keeps 'relevant'; the skeptic holds until round n, then concedes."""
    def stance(prompt):
        return "relevant" if ADVOCATE in prompt or f"Round {n - 1}," in prompt else "not relevant"
    return stance


@pytest.mark.parametrize("scheme_name", SCHEMES)
def test_builds_and_labels_through_the_fake_lm(scheme_name):
    ctx, lm = make_ctx(scheme_name)
    prediction, ledger = judge(build("dream", ctx))
    assert prediction.label in get_scheme(scheme_name).labels and prediction.escalated is False
    assert ledger.calls == lm.engine.calls and {s.role for s in ledger.steps} == {"judge"}


@pytest.mark.parametrize("scheme_name, stance, expected, calls", [
    ("msrd", "relevant", "Relevant", 4), ("msrd", "not relevant", "Irrelevant", 4),
    ("esci", "not relevant", "Irrelevant", 4), ("esci", "relevant", "Exact", 5)])
def test_agreement_at_round_one_gives_the_label(scheme_name, stance, expected, calls):
    ctx, lm = make_ctx(scheme_name, {"stance": stance, "label": "Exact"})
    prediction, ledger = judge(build("dream", ctx))
    assert prediction.label == expected and prediction.escalated is False and prediction.rounds == 1
    assert len(prediction.history) == 4 and lm.engine.calls == calls
    opening = prediction.history[:2]  # round 0: stances fixed by role, whatever the LM would say
    assert [(t["round"], t["agent"], t["stance"]) for t in opening] == [
        (0, "advocate", "relevant"), (0, "skeptic", "not relevant")]
    assert [t["stance"] for t in prediction.history[2:]] == [stance, stance]


def test_graded_label_for_agreed_relevant_is_restricted_and_sees_the_debate():
    ctx, lm = make_ctx("esci", {"stance": "relevant", "argument": "ARG-9"})
    prediction, ledger = judge(build("dream", ctx))
    assert prediction.label == "Substitute"  # fake LM's first allowed option: the threshold, never Irrelevant
    assert ledger.steps[-1].name == "dream.grade"
    grade_prompt = lm.history[-1]["messages"]
    assert "Literal['Substitute', 'Exact']" in grade_prompt[0]["content"]
    assert "Round 1, skeptic (relevant): ARG-9" in grade_prompt[-1]["content"]
    ctx, _ = make_ctx("esci", {"stance": "relevant"})
    assert judge(build("dream", ctx, threshold="Complement"))[0].label == "Complement"


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_persistent_disagreement_escalates_with_the_whole_history(rounds):
    ctx, lm = make_ctx("esci", {"stance": stubborn})
    prediction, ledger = judge(build("dream", ctx, rounds=rounds))
    assert prediction.label is None and prediction.escalated is True
    assert len(prediction.history) == 2 * (rounds + 1) == lm.engine.calls
    assert [(t["round"], t["agent"], t["stance"]) for t in prediction.history] == [
        (r, agent, stance) for r in range(rounds + 1)
        for agent, stance in (("advocate", "relevant"), ("skeptic", "not relevant"))]
    assert all(set(t) == {"round", "agent", "stance", "argument"} for t in prediction.history)
    assert "dream.grade" not in [s.name for s in ledger.steps]


def test_agreement_in_a_later_round_stops_the_debate():
    ctx, lm = make_ctx("msrd", {"stance": skeptic_concedes_in_round(2)})
    prediction, _ = judge(build("dream", ctx, rounds=3))
    assert prediction.label == "Relevant" and prediction.rounds == 2 and len(prediction.history) == 6
    later = [p for p in sent_texts(lm) if "Round 1, skeptic (not relevant)" in p]
    assert later  # round-2 turns see round 1


def test_each_round_sees_only_earlier_rounds():
    ctx, lm = make_ctx("msrd", {"stance": stubborn})
    judge(build("dream", ctx, rounds=1))
    advocate_r1, skeptic_r1 = (h["messages"][-1]["content"] for h in lm.history[2:4])
    for prompt in (advocate_r1, skeptic_r1):
        assert "Round 0, advocate" in prompt and "Round 0, skeptic" in prompt and "Round 1" not in prompt


def test_rounds_must_allow_a_critique():
    with pytest.raises(ValueError, match="rounds"):
        build("dream", make_ctx("msrd")[0], rounds=0)


def test_runner_records_an_escalation_as_an_unlabelled_row():
    ctx, _ = make_ctx("msrd", {"stance": stubborn})
    pair = Pair("p1", "red running shoes", "Trail Runner", "A red running shoe.", "Relevant", "q1", "i1")
    row = judge_one(build("dream", ctx), pair)
    assert row["error"] is None and row["label"] is None and row["escalated"] is True
    assert len(row["fields"]["history"]) == 6 and row["lm_calls"] == 6
