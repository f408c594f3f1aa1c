"""RoleLMs: a typed holder of one LM per role and the ensemble pool, each built on first use; lm_factory is the
supported way to make the CLIs build other LMs."""

from __future__ import annotations

import copy

import pytest

from hiera_dspy.lm.roles import ROLES, LMPool, LMSpec, RoleLMs, build_lms, current_factory, lm_factory, make_lm
from hiera_dspy.testing import fake_lm


def counting_factory():
    built = []

    def make(spec, role):
        built.append((spec.model, role))
        return fake_lm(name=spec.model)

    return built, make


def test_nothing_is_built_until_a_role_is_used_and_each_lm_once():
    built, make = counting_factory()
    with lm_factory(make):
        lms = build_lms({role: LMSpec(model=f"openai/{role}") for role in ROLES},
                        {"openai/a": LMSpec(model="openai/a"), "openai/b": LMSpec(model="openai/b")})
        assert set(lms) == set(ROLES) and "judge" in lms and list(lms.ensemble) == ["openai/a", "openai/b"]
        assert lms.built() == [] and built == []
        assert lms.describe() == {**{role: f"openai/{role}" for role in ROLES}, "blend": "openai/a,openai/b"}
        assert built == []  # describing remote models builds nothing
        judge = lms["judge"]
        assert lms.for_role("judge") is judge and built == [("openai/judge", "judge")]
        assert lms.built() == [judge]
        member = lms.member("openai/b")
        assert built == [("openai/judge", "judge")]  # a member is built on its judge's first use
        assert member.for_role("judge") is lms.ensemble["openai/b"] and built[-1] == ("openai/b", "judge")
        assert len(lms.every()) == 6 and len(built) == 6  # every role and pool LM, each built once
        assert lms.every() == lms.every() and len(built) == 6


def test_roles_with_the_same_spec_share_one_lm_and_a_missing_role_falls_back_to_the_judge():
    with lm_factory(lambda spec, role: fake_lm(name=spec.model)):
        lms = build_lms({"judge": LMSpec("openai/m", max_tokens=9), "item": LMSpec("openai/m", max_tokens=9),
                         "query": LMSpec("openai/m")})
        assert lms["judge"] is lms["item"] and lms["query"] is not lms["judge"]  # no cap: the role's own default
        assert lms.for_role("relation") is lms["judge"]
    with pytest.raises(KeyError):
        RoleLMs()["judge"]
    assert RoleLMs().for_role("judge") is None


def test_role_lms_are_shared_not_copied_and_compare_by_identity():
    lms = RoleLMs.of(judge=fake_lm(), ensemble={"x": fake_lm()})
    assert copy.deepcopy(lms) is lms and copy.deepcopy(lms.ensemble) is lms.ensemble
    other = RoleLMs.of(judge=lms["judge"])
    assert other != lms and len({lms, other}) == 2  # hashable: a dict key or set member
    assert lms.specs == {} and lms.describe() == {}  # ready-made LMs record no spec
    assert isinstance(lms.roles, LMPool) and lms.ensemble.built() == {"x": lms.ensemble["x"]}


def test_lm_factory_nests_and_is_gone_after_its_block():
    assert current_factory() is make_lm
    first, second = (lambda spec, role: fake_lm(name="fake/1")), (lambda spec, role: fake_lm(name="fake/2"))
    with lm_factory(first):
        with lm_factory(second):
            assert build_lms({"judge": LMSpec("openai/m")})["judge"].model == "fake/2"
        assert build_lms({"judge": LMSpec("openai/m")})["judge"].model == "fake/1"
        lazy = build_lms({"judge": LMSpec("openai/m")})
    assert current_factory() is make_lm
    assert lazy["judge"].model == "openai/m"  # built after the block: by make_lm
