"""Make method_helpers importable from the test modules (pytest runs with --import-mode=importlib); `tiny_base`, a
tiny random BERT in place of MiniLM for the cross-encoder tests."""
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import pytest  # noqa: E402

_BUILT: dict[str, Path] = {}  # the tiny base, built once a session (it is only read: a fit saves elsewhere)


@pytest.fixture
def tiny_base(tmp_path_factory, monkeypatch):
    """A 1-layer BERT of width 32 with MiniLM's tokenizer (seeded weights, built once a session), patched in as the
    cross-encoder's base folder."""
    pytest.importorskip("transformers")
    import hiera_dspy.signals.cross_encoder as ce

    if "folder" not in _BUILT:
        import torch
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

        try:
            source = ce.base_folder()
        except RuntimeError as exc:
            pytest.skip(str(exc))
        tok = AutoTokenizer.from_pretrained(source)
        config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=128, num_labels=1)
        folder = tmp_path_factory.mktemp("tiny")
        with torch.random.fork_rng():  # the same weights whichever test builds it, the tests' own seeds untouched
            torch.manual_seed(0)
            BertForSequenceClassification(config).save_pretrained(folder)
        tok.save_pretrained(folder)
        _BUILT["folder"] = folder
    folder = _BUILT["folder"]
    monkeypatch.setattr(ce, "base_folder", lambda: str(folder))
    return folder
