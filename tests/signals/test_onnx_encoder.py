"""The cross-encoder through ONNX Runtime, with a tiny randomly initialised BERT (MiniLM's tokenizer, 1 layer of width
32, as tests/methods/test_ce_blend.py builds it): the same logits as torch in input order whatever the batching, int8
only where it keeps the labels on the check pairs, the ONNX files saved beside the weights and checked by SHA-256 (a
changed file is an error naming it), torch with a note when onnxruntime is missing, and any head width (K-1 logits)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")


def _tiny(tmp_path, num_labels: int = 1):
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from hiera_dspy.signals.cross_encoder import CrossEncoder, base_folder

    try:
        source = base_folder()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    tok = AutoTokenizer.from_pretrained(source)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=num_labels)
    import torch

    torch.manual_seed(0)
    return CrossEncoder(BertForSequenceClassification(config).eval(), tok, 48)


def _triples(n: int = 24):
    words = ("alien", "space horror", "toy story of a long journey home", "fox", "owl ship")
    return [(words[i % 5], f"title {i}", "Year: 1999\nOverview: " + "plot words " * (i % 7)) for i in range(n)]


@pytest.fixture(scope="module")
def accelerated(tmp_path_factory):
    """A tiny encoder, its check triples, torch's logits of them, and the encoder accelerated on them (one export
    shared by the tests: an export takes seconds)."""
    ce = _tiny(tmp_path_factory.mktemp("tiny"))
    triples = _triples()
    reference = ce.logits(triples)
    manifest = ce.accelerate(triples)
    return ce, triples, reference, manifest


def test_onnx_logits_equal_torch_in_input_order_whatever_the_batching(accelerated):
    ce, triples, torch_64, manifest = accelerated
    runner = ce.runner
    try:
        ce.runner = None
        one_by_one = np.concatenate([ce.logits([t]) for t in triples])  # no padding at all
        assert torch_64.shape == (len(triples), 1)
        np.testing.assert_allclose(torch_64, one_by_one, atol=1e-5)  # padding and sorting change nothing
        assert runner is not None and manifest["against_torch"]["fp32"]["label_agreement"] == 1.0
        assert manifest["against_torch"]["fp32"]["max_abs_dp"] < 1e-5
        from hiera_dspy.signals.onnx_encoder import OnnxRunner

        ce.runner = OnnxRunner(ce._onnx.tmp.name + "/model.onnx")
        np.testing.assert_allclose(ce.logits(triples, batch=5), torch_64, atol=1e-4)
    finally:
        ce.runner = runner


def test_an_int8_judgment_does_not_depend_on_what_is_judged_beside_it(accelerated):
    ce, triples, _, _ = accelerated
    runner = ce.runner
    try:
        ce.runner = ce._onnx.runners["int8"]
        assert ce.runner.one_text_a_run  # int8 scales activations per run: each text runs alone
        alone = np.concatenate([ce.logits([t]) for t in triples])
        np.testing.assert_array_equal(ce.logits(triples, batch=7), alone)
        from hiera_dspy.signals.onnx_encoder import OnnxRunner

        batched = OnnxRunner(ce.runner.path)  # the same model run a batch at a time moves with its neighbours
        ce.runner = batched
        assert not np.array_equal(ce.logits(triples, batch=7), alone)
    finally:
        ce.runner = runner


def test_int8_only_where_it_keeps_the_labels(accelerated):
    from hiera_dspy.signals.onnx_encoder import INT8_MIN_AGREEMENT, choose

    ce, triples, reference, manifest = accelerated
    q = manifest["against_torch"]["int8"]
    assert q["pairs"] == len(triples) and manifest["use"] == choose(q)
    if manifest["use"] == "int8":  # then its labels are torch's on the check pairs, to the agreement required
        from hiera_dspy.signals.onnx_encoder import ordinal_labels

        same = np.mean(ordinal_labels(ce.logits(triples)) == ordinal_labels(reference))
        assert same >= INT8_MIN_AGREEMENT
    assert choose({"pairs": 200, "label_agreement": 0.995}) == "int8"
    assert choose({"pairs": 200, "label_agreement": 0.99}) == "fp32"  # 2 flips in 200: kappa may move 0.02
    assert choose({"pairs": 0, "label_agreement": None}) == "fp32"  # nothing to verify int8 on


def test_saved_onnx_is_loaded_checked_and_a_changed_file_is_an_error(accelerated, tmp_path):
    from hiera_dspy.signals.cross_encoder import CrossEncoder

    ce, triples, _, _ = accelerated
    expected = ce.logits(triples)
    folder = tmp_path / "w"
    digests = ce.save(folder)
    assert {"model.safetensors", "model.onnx", "model.int8.onnx", "onnx.json"} <= set(digests)
    loaded = CrossEncoder.load(folder, digests, 48)
    assert loaded.runner is not None
    assert loaded.runner.path.name == ("model.int8.onnx" if json.loads((folder / "onnx.json").read_text())["use"]
                                       == "int8" else "model.onnx")
    np.testing.assert_allclose(loaded.logits(triples), expected, atol=1e-6)
    for name in ("model.int8.onnx", "onnx.json"):
        path = folder / name
        data = bytearray(path.read_bytes())
        original = bytes(data)
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=name.replace(".", r"\.") + ".*SHA-256"):
            CrossEncoder.load(folder, digests, 48)
        path.write_bytes(original)


def test_without_onnxruntime_torch_scores_with_a_note(tmp_path, monkeypatch, capsys):
    from hiera_dspy.signals.cross_encoder import CrossEncoder

    ce = _tiny(tmp_path)
    triples = _triples(6)
    folder = tmp_path / "w"
    digests = ce.save(folder)  # exported at save time: fp32, int8 unverified
    assert json.loads((folder / "onnx.json").read_text())["use"] == "fp32"
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` raises ImportError
    loaded = CrossEncoder.load(folder, digests, 48)
    assert loaded.runner is None
    assert "onnxruntime is not installed" in capsys.readouterr().err
    np.testing.assert_allclose(loaded.logits(triples), ce.logits(triples), atol=1e-6)
    assert loaded.accelerate(triples) is None and loaded.runner is None


def test_any_head_width_comes_back_whole(tmp_path):
    ce = _tiny(tmp_path, num_labels=3)  # a graded head: K-1 = 3 cumulative logits
    triples = _triples(10)
    reference = ce.logits(triples)
    ce.accelerate(triples)
    assert reference.shape == (10, 3) and ce.logits(triples).shape == (10, 3)
    from hiera_dspy.signals.onnx_encoder import ordinal_labels

    assert set(ordinal_labels(reference)) <= {0, 1, 2, 3}
