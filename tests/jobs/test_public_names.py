"""The public names live in one list (`hiera_dspy._API`): hiera_dspy.api exports exactly it, and each name reaches a
caller both as `hiera_dspy.NAME` (imported on first use) and from hiera_dspy.api."""

import hiera_dspy
from hiera_dspy import api


def test_the_api_exports_the_one_list():
    assert api.__all__ == list(hiera_dspy._API)
    assert [name for name in hiera_dspy._API if not hasattr(api, name)] == []
    assert all(getattr(hiera_dspy, name) is getattr(api, name) for name in hiera_dspy._API)


def test_plan_returns_a_typed_result():
    assert api.SamplePlan.__dataclass_params__.frozen  # type: ignore[attr-defined]
