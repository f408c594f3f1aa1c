"""Model profiles: the paper's budgets and cap-free prompts for hosted models, tight caps for the embedded model, and
prompts that differ only there."""

from __future__ import annotations

import json

import pytest

from hiera_dspy.knowledge import NoKnowledge
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm import profiles
from hiera_dspy.lm.roles import DEFAULT_MAX_TOKENS, LOCAL_MAX_TOKENS, PRESETS, LMSpec, make_lm
from hiera_dspy.methods import BuildContext, build

MSRD = get_scheme("msrd")
DELEGATE = {"relational_transparency": "unclear", "lookups": []}


def prompts(h, method: str, profile: str, lm_profile: str | None = None) -> list[str]:
    """Every message (system and user) of one delegated judgment, in order."""
    lms = h.make_role_lms(DELEGATE)
    if lm_profile:
        lms["judge"].hiera_profile = lm_profile
    config = {"consultation": "directed"} if method in ("hiera", "judge+qi") else {}  # auto follows the profile
    program = build(method, BuildContext(MSRD, lms, NoKnowledge()), profile=profile, **config)
    h.judge_once(program, h.pair())
    return [json.dumps(entry["messages"]) for entry in lms["judge"].history]


@pytest.mark.parametrize("method", ["hiera", "judge-only", "judge+qi", "hiera-react"])
def test_prompts_differ_only_in_the_caps(h, method):
    paper, local = prompts(h, method, "paper"), prompts(h, method, "local")
    assert len(paper) == len(local)
    assert not any("at most" in p or "one or two sentences" in p for p in paper)
    uncapped = []
    for text in local:
        for cap in profiles.LOCAL.caps.values():
            text = text.replace(f"{cap}: ", "")
        uncapped.append(text)
    assert uncapped == paper
    if method != "hiera-react":  # the ReAct graph's fake run never reaches a capped field
        assert local != paper and any(cap in p for cap in profiles.LOCAL.caps.values() for p in local)


def test_auto_follows_the_lm(h):
    assert prompts(h, "hiera", "auto") == prompts(h, "hiera", "paper")
    assert prompts(h, "hiera", "auto", lm_profile="local") == prompts(h, "hiera", "local")


def test_budgets_come_from_the_profiles():
    assert DEFAULT_MAX_TOKENS == {"judge": 3000, "relation": 1500, "query": 1000, "item": 1000}  # paper, App. A.1
    assert DEFAULT_MAX_TOKENS is profiles.PAPER.max_tokens and LOCAL_MAX_TOKENS is profiles.LOCAL.max_tokens
    assert {role: spec["max_tokens"] for role, spec in PRESETS["paper"].items()} == DEFAULT_MAX_TOKENS
    for role, budget in DEFAULT_MAX_TOKENS.items():  # any hosted model gets the paper's budget for its role
        assert make_lm(LMSpec("openai/some-model"), role).kwargs["max_tokens"] == budget
    assert profiles.of_lm(make_lm(LMSpec("openai/some-model"))) is profiles.PAPER


def test_unknown_profile_is_refused(h):
    with pytest.raises(ValueError, match=r"auto \| paper \| local"):
        build("hiera", BuildContext(MSRD, h.make_role_lms()), profile="tiny")


def test_auto_consultation_is_the_profiles(h):
    def plan_fields(profile):
        program = build("hiera", BuildContext(MSRD, h.make_role_lms()), profile=profile)
        return program.relation.directed, set(program.relation.plan.signature.output_fields)

    assert plan_fields("paper") == (True, {"consult_query_analyzer", "question_for_query_analyzer",
                                           "consult_item_analyzer", "question_for_item_analyzer", "lookups"})
    assert plan_fields("local") == (False, {"consult_query_analyzer", "consult_item_analyzer", "lookups"})
    local_directed = build("hiera", BuildContext(MSRD, h.make_role_lms()), profile="local", consultation="directed")
    assert local_directed.relation.directed is True
