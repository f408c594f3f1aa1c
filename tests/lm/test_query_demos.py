"""The pair's demos in a predictor call (`lm/query_demos.py`): after the call's own, filled for the signature's
relevance answer (a label it may give, a grade, the Relation Analyzer's argument), none for any other step, and the
call's own list untouched outside a judgment that reads some."""

from typing import Literal

import dspy

from hiera_dspy.lm import query_demos
from hiera_dspy.lm.query_demos import NOT_SUPPLIED, Demo, extended, reading
from signatures.debate import DebateOpening
from signatures.hiera import QueryAnalysis, RelationSynthesis
from signatures.thomas import IntentMatchTrustGrade

DEMO = Demo("red shoes", "<item>\nTitle: Runner\nA red shoe.\n</item>", "Exact", 3, "i1")


class Labelled(dspy.Signature):
    """Label."""

    query: str = dspy.InputField()
    item: str = dspy.InputField()
    label_definitions: str = dspy.InputField()
    label: Literal["Irrelevant", "Exact"] = dspy.OutputField()


class Source:
    def select(self, pair):
        return [DEMO]


def test_outside_a_judgment_the_calls_own_demos_are_passed_as_they_are():
    own = [{"query": "q"}]
    assert extended(Labelled, own) is own and extended(Labelled, None) is None and query_demos.current() == ()


def test_each_relevance_step_reads_the_demo_after_its_own_every_other_field_not_supplied():
    with reading(type("P", (), {"query_demos": Source()})(), pair=None) as chosen:
        assert chosen == (DEMO,)
        rows = extended(Labelled, [{"query": "compiled"}])
        assert rows[0] == {"query": "compiled"}
        assert rows[1] == {"query": "red shoes", "item": DEMO.item, "label_definitions": NOT_SUPPLIED, "label": "Exact"}
        grade = extended(IntentMatchTrustGrade, [])[0]
        assert grade["grade"] == 3 and grade["intent"] == grade["grade_scale"] == NOT_SUPPLIED
        assert extended(RelationSynthesis, [])[0]["argument"] == "Conclusion: Exact."
        assert extended(DebateOpening, []) == [] and extended(QueryAnalysis, []) == []
        narrow = Labelled.with_updated_fields("label", type_=Literal["Irrelevant"])
        assert extended(narrow, []) == []  # a label the step may not give is not shown
    assert query_demos.current() == ()


def test_a_program_without_query_demos_reads_none():
    with reading(object(), pair=None) as chosen:
        assert chosen == () and extended(Labelled, []) == []
