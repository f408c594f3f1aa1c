"""The fastest scoring path that keeps the judge's labels (`signals/fast_path.py`), on a tiny BERT: candidates fastest
first, the first whose labels agree with the full-length fp32 reference (and whose kappa holds) is used, a path that
changes labels is passed over, and the choice (precision, tokens read) survives save and load. (A random tiny model's
scores sit near each other, where int8 noise would flip a real threshold's labels: the judges here are chosen so
that the selection rule, not the tiny model's precision, decides.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.signals.test_onnx_encoder import _tiny, _triples

pytest.importorskip("onnxruntime")


def _labels_of(probs):
    """A judge whose labels every path keeps: the triples alternate (the check set's order), whatever the scores."""
    return ["Relevant" if i % 2 else "Irrelevant" for i in range(len(probs))]


def test_candidates_fastest_first_reference_last():
    from hiera_dspy.signals.fast_path import candidates

    assert candidates(128) == [("int8", 64), ("int8", 128), ("fp32", 64), ("fp32", 128)]
    assert candidates(48) == [("int8", 48), ("fp32", 48)]


def test_a_path_that_changes_labels_is_passed_over_and_the_choice_round_trips(tmp_path):
    from hiera_dspy.signals.cross_encoder import CrossEncoder
    from hiera_dspy.signals.fast_path import choose_path

    ce = _tiny(tmp_path)
    ce.max_len = ce.score_len = 96
    triples = _triples(60)
    ce.accelerate(triples)
    gold = _labels_of(triples)

    def spoiled_by_int8(probs):  # int8 flips every label here: it must never be chosen
        labels = _labels_of(probs)
        if ce.runner is ce._onnx.runners["int8"]:
            return ["Irrelevant" if x == "Relevant" else "Relevant" for x in labels]
        return labels

    choice = choose_path(ce, triples, spoiled_by_int8, gold)
    assert (choice["use"], choice["score_max_len"]) == ("fp32", 64) and ce.runner is ce._onnx.runners["fp32"]
    assert choice["paths"]["int8@64"]["agreement"] == 0.0 and choice["paths"]["int8@64"]["kappa"] == -1.0
    assert choice["paths"]["fp32@96"]["agreement"] == 1.0 and ce.score_len == 64

    choice = choose_path(ce, triples, _labels_of, gold)  # every path keeps the labels: the fastest one
    assert (choice["use"], choice["score_max_len"]) == ("int8", 64)
    assert set(choice["paths"]) == {"int8@64", "int8@96", "fp32@64", "fp32@96"}

    folder = tmp_path / "weights"
    digests = ce.save(folder)
    manifest = json.loads((folder / "onnx.json").read_text())
    assert manifest["use"] == "int8" and manifest["score_max_len"] == 64 and "int8 at 64 tokens" in manifest["why"]
    loaded = CrossEncoder.load(folder, digests, 96)
    assert loaded.score_len == 64 and loaded.runner.path.name == "model.int8.onnx"
    np.testing.assert_allclose(loaded.grade_probs(triples), ce.grade_probs(triples), atol=1e-6)
