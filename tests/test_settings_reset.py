"""The suite's autouse fixture restores dspy.settings after every test (the two tests run in file order)."""

import dspy

from hiera_dspy.testing import fake_lm


def test_a_configures_a_global_lm_and_adapter():
    dspy.configure(lm=fake_lm(), adapter=dspy.JSONAdapter(), track_usage=True)
    assert dspy.settings.lm is not None


def test_b_the_next_test_starts_from_dspy_defaults():
    assert (dspy.settings.lm, dspy.settings.adapter, dspy.settings.track_usage) == (None, None, False)
