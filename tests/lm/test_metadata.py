"""DSPy's model metadata memoized: the same answer as DSPy's own lookup, each caller its own copy, one scan a model."""

from __future__ import annotations

import pytest

from hiera_dspy.lm.metadata import memoize_model_info


def test_the_memoized_lookup_answers_as_dspys_and_scans_once(monkeypatch):
    costs = pytest.importorskip("dspy.clients.costs")
    from dspy.clients import capabilities, model_metadata

    calls = []
    original = model_metadata.model_info

    def counted(provider, model, *, namespaces=None):
        calls.append((provider, model))
        return original(provider, model, namespaces=namespaces)

    monkeypatch.setattr(model_metadata, "model_info", counted)
    monkeypatch.setattr(costs, "model_info", original)  # as DSPy ships it: not memoized
    monkeypatch.setattr(capabilities, "model_info", original)
    memoize_model_info()
    first = costs.model_info("openai", "gpt-4o-mini")
    assert first == original("openai", "gpt-4o-mini") and first.get("input_cost_per_token")
    first["input_cost_per_token"] = -1  # a caller's copy: the next caller is not affected
    assert costs.model_info("openai", "gpt-4o-mini")["input_cost_per_token"] > 0
    assert capabilities.model_info("openai", "a-model-nobody-lists") == {}
    capabilities.model_info("openai", "a-model-nobody-lists")
    assert calls == [("openai", "gpt-4o-mini"), ("openai", "a-model-nobody-lists")]
