"""The bundled probe seed (hiera_dspy/methods/probe_seed.py) still matches the prompt builder, and is used as a cache."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.data import load_dataset
from hiera_dspy.methods import probe_seed, probe_states
from hiera_dspy.methods.probe import PROBE
from hiera_dspy.methods.probe_prompt import PromptFormat


def test_seed_covers_every_train_prompt_as_built_today():
    info = probe_seed.seed_info()
    if not info:
        pytest.skip("no bundled seed")
    dataset = load_dataset("msrd")
    fmt = PromptFormat(dataset.scheme.labels, str(info["template"]) or None, tuple(str(s) for s in info["special"]),
                       str(info["bos"]), str(info["eos"]))
    assert int(info["text_chars"]) == PROBE["text_chars"]
    keys = {probe_states.prompt_key(fmt.render(p.query, p.item_title, p.item_text, PROBE["text_chars"]))
            for p in dataset.splits["train"]}
    missing = keys - {str(k) for k in info["keys"]}
    assert not missing, (f"{len(missing)} train prompts are not in the seed: the prompt builder changed; "
                         "remake it with bench/probe_seed.py of commit ad34371 (docs/studies.md; under the model lock)")


def test_seed_answers_before_the_model(tmp_path):
    calls = []
    seed = {probe_states.prompt_key("a"): np.ones(3, np.float16)}
    cached = probe_states.cached(lambda ps: calls.append(ps) or [np.zeros(3) for _ in ps], tmp_path, seed)
    out = cached(["a", "b"])
    assert calls == [["b"]] and out[0].dtype == np.float32 and out[0].tolist() == [1.0, 1.0, 1.0]
    assert not (tmp_path / f"{probe_states.prompt_key('a')}.npy").exists()  # the seed is not copied to disk


def test_seed_round_trip_and_other_models_get_nothing(tmp_path):
    path = tmp_path / "seed.npz"
    probe_seed.write_seed(path, ["k1", "k2"], np.eye(2), model_sha256="abc", fmt=PromptFormat(("A", "B")),
                          text_chars=256)
    assert set(probe_seed.seed_vectors("abc", path)) == {"k1", "k2"}
    assert probe_seed.seed_vectors("other", path) == {}
