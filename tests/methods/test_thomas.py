"""`thomas`, the field's reference judge: intent, M, T, then one grade of the scheme's own scale, mapped to its label;
a grade off the scale is an error, never a label; the prompt carries the scale; compilable (state round-trips)."""

import json

import pytest
from method_helpers import judge, make_ctx

from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import available, build
from hiera_dspy.methods.thomas import grade_scale, label_of
from hiera_dspy.testing import sent_texts


def test_registered_in_its_own_family_with_the_knowledge_option():
    info = available()["thomas"]
    assert info.family == "field" and "Thomas" in info.doc and "2024" in info.doc
    assert info.defaults == {"with_knowledge": False, "k": None}


@pytest.mark.parametrize("grade", [0, 1, 2, 3])
def test_each_trec_grade_is_the_label_of_that_index(grade):
    ctx, lm = make_ctx("trec", {"grade": grade, "match": 2, "trust": 1, "intent": "learn the height"})
    prediction, ledger = judge(build("thomas", ctx))
    assert prediction.label == get_scheme("trec").labels[grade]
    assert (prediction.match, prediction.trust, prediction.grade) == (2, 1, grade)
    assert ledger.calls == lm.engine.calls == 1


def test_the_prompt_shows_the_schemes_grades_with_their_definitions():
    ctx, lm = make_ctx("trec", {"grade": 2})
    judge(build("thomas", ctx))
    prompt = "\n".join(sent_texts(lm))
    assert "3 = Perfectly relevant: The passage is dedicated to the query" in prompt
    assert "0 = Irrelevant" in prompt and "4 =" not in prompt


def test_other_schemes_are_graded_on_their_own_scale():
    assert grade_scale(get_scheme("msrd")).splitlines()[1].startswith("1 = Relevant")
    assert label_of(2, get_scheme("wands")) == "Exact"
    ctx, _ = make_ctx("msrd", {"grade": 1})
    assert judge(build("thomas", ctx))[0].label == "Relevant"


@pytest.mark.parametrize("grade", [4, -1])
def test_a_grade_off_the_scale_is_an_error_not_a_label(grade):
    with pytest.raises(ValueError, match="outside the scale 0..3"):
        label_of(grade, get_scheme("trec"))
    ctx, _ = make_ctx("trec", {"grade": grade})
    with pytest.raises(ValueError, match="outside the scale"):
        judge(build("thomas", ctx))


def test_state_round_trips_as_a_compiled_artifact_keeps_it():
    ctx, _ = make_ctx("trec", {"grade": 1})
    program = build("thomas", ctx)
    (name, predictor), = program.named_predictors()
    predictor.signature = predictor.signature.with_instructions("CUSTOM")
    state = program.dump_state()
    json.dumps(state)
    fresh = build("thomas", make_ctx("trec")[0])
    fresh.load_state(state)
    assert dict(fresh.named_predictors())[name].signature.instructions == "CUSTOM"
