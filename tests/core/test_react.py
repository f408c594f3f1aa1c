"""hiera-react: the Judge and the Relation Analyzer as nested ReAct agents, driven by scripted tool calls."""

from __future__ import annotations

import json

from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runner import judge_one
from hiera_dspy.types import Pair

PAIR = Pair("p1", "tom cruise spy movie", "Mission: Impossible", "A spy film.", "Relevant", "q1", "i1")


def test_react_graph_delegates_through_the_relation_agent(fake_lms):
    def tool(prompt):
        if "consult_relation_analyzer" in prompt:  # the Judge's turn
            return "finish" if "observation_0" in prompt else "consult_relation_analyzer"
        return "finish" if "observation_1" in prompt else ("analyze_item" if "observation_0" in prompt
                                                            else "analyze_query")

    def args(prompt):
        if "consult_relation_analyzer" in prompt and "observation_0" not in prompt:
            return json.dumps({"guidance": "relational transparency is unclear"})
        if "analyze_query" in prompt and "observation_0" not in prompt:
            return json.dumps({"query": PAIR.query})
        return "{}"

    lms = fake_lms({"next_tool_name": tool, "next_tool_args": args, "label": "Relevant"})
    program = build("hiera-react", BuildContext(get_scheme("msrd"), lms))
    row = judge_one(program, PAIR)
    assert row["error"] is None and row["label"] == "Relevant" and row["delegated"] is True
    names = [s["name"] for s in row["steps"]]
    assert "query.analyze" in names and "item.analyze" in names and names[-1] == "judge.react"
    assert {n for n, _ in program.named_predictors()} >= {"judge.react", "relation.agent.react"}


def test_react_graph_survives_a_model_that_breaks_the_tool_format(fake_lms):
    program = build("hiera-react", BuildContext(get_scheme("msrd"), fake_lms({"label": "Irrelevant"})))
    row = judge_one(program, PAIR)
    assert row["error"] is None and row["label"] == "Irrelevant"
