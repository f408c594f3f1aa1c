"""hiera-react: the Judge and the Relation Analyzer as nested ReAct agents, driven by scripted tool calls."""

from __future__ import annotations

import json

from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.records import Pair
from hiera_dspy.runs.runner import judge_one
from hiera_dspy.testing import FakeKnowledge

PAIR = Pair("p1", "tom cruise spy movie", "Mission: Impossible", "A spy film.", "Relevant", "q1", "i1")


def test_react_graph_delegates_through_the_relation_agent(fake_lms):
    def tool(prompt):
        if "consult_relation_analyzer" in prompt:  # the Judge's turn
            return "finish" if "observation_0" in prompt else "consult_relation_analyzer"
        return "finish" if "observation_1" in prompt else ("ask_item_analyzer" if "observation_0" in prompt
                                                            else "ask_query_analyzer")

    def args(prompt):
        if "consult_relation_analyzer" in prompt and "observation_0" not in prompt:
            return json.dumps({"guidance": "relational transparency is unclear"})
        if "observation_0" not in prompt:
            return json.dumps({"question": "QUESTION-ABOUT-INTENT"})
        if "observation_1" not in prompt:
            return json.dumps({"question": "QUESTION-ABOUT-ITEM"})
        return "{}"

    def answer(prompt):  # a specialist answers the question it was asked, with the pair in view
        assert PAIR.query in prompt and PAIR.item_title in prompt
        return "ANSWER-TO " + prompt.split("[[ ## question ## ]]", 1)[1].split("[[", 1)[0].strip()

    knowledge = FakeKnowledge()
    lms = fake_lms({"next_tool_name": tool, "next_tool_args": args, "label": "Relevant", "answer": answer,
                    "lookups": lambda prompt: ["SPECIALIST-LOOKUP", "another"]})
    program = build("hiera-react", BuildContext(get_scheme("msrd"), lms, knowledge))
    row = judge_one(program, PAIR)
    assert row["error"] is None and row["label"] == "Relevant" and row["delegated"] is True
    names = [s["name"] for s in row["steps"]]
    assert names == ["query.analyze", "query.answer", "query.search", "query.answer", "item.analyze", "item.answer",
                     "item.search", "item.answer", "relation.react", "judge.react"]
    # each specialist's own look-ups: bounded (specialist_lookups=1), accounted, passages back in its second answer
    assert knowledge.calls == [("SPECIALIST-LOOKUP", 3), ("SPECIALIST-LOOKUP", 3)]
    answers = [s["outputs"]["answer"] for s in row["steps"] if s["name"].endswith(".answer")]
    assert answers[0] == "ANSWER-TO QUESTION-ABOUT-INTENT" and answers[2] == "ANSWER-TO QUESTION-ABOUT-ITEM"
    assert {n for n, _ in program.named_predictors()} >= {"judge.react", "relation.agent.react"}


def test_react_graph_survives_a_model_that_breaks_the_tool_format(fake_lms):
    program = build("hiera-react", BuildContext(get_scheme("msrd"), fake_lms({"label": "Irrelevant"})))
    row = judge_one(program, PAIR)
    assert row["error"] is None and row["label"] == "Irrelevant"
