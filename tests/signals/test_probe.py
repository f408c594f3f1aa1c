"""llm-probe and probe-stacked (hiera_dspy/methods/probe.py) with an injected fake embedder: never the real model."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from hiera_dspy.data import load_dataset
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm import hidden
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.records import Pair
from hiera_dspy.testing import judge_once, role_lms


class FakeEmbedder:
    """A hashed bag of the prompt's words (deterministic, 64 floats); counts its calls."""

    def __init__(self):
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> np.ndarray:
        self.prompts.append(prompt)
        vec = np.zeros(64, np.float32)
        for word in prompt.lower().split():
            vec[int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % 64] += 1.0
        return vec


@pytest.fixture
def fake():
    embed = FakeEmbedder()
    with hidden.use_embedder(embed):
        yield embed


MSRD = load_dataset("msrd")
TRAIN, DEV = MSRD.split("train")[:80], MSRD.split("dev")[:6]


def fitted(name, train=TRAIN, scheme=MSRD.scheme, **config):
    program = build(name, BuildContext(scheme, train=list(train)), embedder="lexical" if name == "probe-stacked"
                    else None, **config)
    return program.prepare(train)


def test_prompt_is_the_measured_one_and_keys_the_cache_as_before():
    prompt = hidden.probe_prompt("q", "T", "x" * 700)
    assert prompt.count("x") == 600 and prompt.startswith("<|im_start|>system\nYou judge search relevance")
    assert hidden.prompt_key(prompt) == hashlib.sha256(prompt.encode()).hexdigest()[:24]


@pytest.mark.parametrize("name", ["llm-probe", "probe-stacked"])
def test_fit_judge_dump_load_round_trip(fake, name):
    program = fitted(name)
    extra = json.loads(json.dumps(program.dump_extra()))  # JSON data, nothing else
    loaded = build(name, BuildContext(MSRD.scheme), **({"embedder": "lexical"} if name == "probe-stacked" else {}))
    loaded.load_extra(extra)
    before = len(fake.prompts)
    for p in DEV:
        (a, book), (b, _) = judge_once(loaded, p), judge_once(program, p)
        assert a.label_probs == pytest.approx(b.label_probs) and a.label == b.label
        assert set(a.label_probs) == set(MSRD.scheme.labels) and sum(a.label_probs.values()) == pytest.approx(1.0)
        assert a.probe_probs == pytest.approx(b.probe_probs)
        step = next(s for s in book.steps if s.name == "probe.embed")
        assert step.calls == 0 and step.prompt_tokens == 0 and step.seconds >= 0.0
        if name == "probe-stacked":
            assert a.scores == b.scores and a.label_probs != a.probe_probs
    assert len(fake.prompts) == before + 2 * len(DEV)  # no train pair re-embedded by the loaded judge


def test_stacked_is_fitted_on_query_grouped_out_of_fold_distributions(fake):
    from hiera_dspy.methods.probe import grouped_folds

    for tr, te in grouped_folds(TRAIN, 5):
        assert not {TRAIN[i].query_id for i in tr} & {TRAIN[i].query_id for i in te}
    program = fitted("probe-stacked")
    assert program.stacker.coef.shape == (1, 3)


def test_a_hosted_lm_is_refused_with_a_clear_error():
    program = build("llm-probe", BuildContext(MSRD.scheme, lms=role_lms(), train=list(TRAIN)))
    with pytest.raises(HieraError, match="hidden state.*embedded local model.*HIERA_MODEL_PATH"):
        program.prepare(TRAIN)


def test_three_level_scheme_gets_a_multinomial_probe(fake):
    scheme = get_scheme("wands")
    assert len(scheme.labels) == 3
    words = {label: f"w{k}" for k, label in enumerate(scheme.labels)}
    train = [Pair(f"p{label}{i}", f"query {i % 7}", f"Item {i}", f"{words[label]} text {i}", label, f"q{i % 7}",
                  f"i{label}{i}") for label in scheme.labels for i in range(14)]
    for name in ("llm-probe", "probe-stacked"):
        program = fitted(name, train, scheme)
        assert program.probe.coef.shape == (3, 64)
        loaded = build(name, BuildContext(scheme), **({"embedder": "lexical"} if name == "probe-stacked" else {}))
        loaded.load_extra(json.loads(json.dumps(program.dump_extra())))
        for p in train[::9]:
            out, _ = judge_once(loaded, p)
            assert list(out.label_probs) == list(scheme.labels) and out.label in scheme.labels
            assert 0.0 <= out.expected_relevance <= 2.0
        assert sum(judge_once(program, p)[0].label == p.label for p in train) > len(train) * 0.6


def test_disk_cache_is_hit_by_prompt_key(tmp_path):
    embed = FakeEmbedder()
    cached = hidden.cached(embed, tmp_path)
    prompt = hidden.probe_prompt("q", "T", "text")
    first, again = cached(prompt), cached(prompt)
    assert np.array_equal(first, again) and len(embed.prompts) == 1
    assert (tmp_path / f"{hidden.prompt_key(prompt)}.npy").is_file()


def test_compile_saves_the_weights_and_eval_run_judges_without_refitting(fake, tmp_path, monkeypatch,
                                                                          patch_make_lm):
    import eval.run as run_cli
    import optimize.compile as compile_cli

    monkeypatch.setenv("HIERA_REFERENCE", "none")
    patch_make_lm({"label": "Relevant"})
    data, art = tmp_path / "pairs.jsonl", tmp_path / "probe.json"
    with open(data, "w") as fh:
        for p in MSRD.split("train")[:40] + MSRD.split("dev")[:20]:
            fh.write(json.dumps({**p._asdict(), "label": p.label}) + "\n")
    common = ["--dataset", f"jsonl:{data}", "--scheme", "msrd", "--knowledge", "none", "--lm", "fake"]
    compile_cli.main([*common, "--method", "probe-stacked", "--set", "embedder=lexical", "--optimizer", "none",
                      "--budget", "smoke", "--skip-before", "--out", str(art)])
    extra = json.loads(art.read_text())["extra"]
    assert {"probe", "stacker", "scorer"} <= set(extra) and len(extra["probe"]["mean"]) == 64
    before = len(fake.prompts)
    metrics = run_cli.main([*common, "--split", "dev", "--judge", str(art), "--limit", "4",
                            "--out", str(tmp_path / "run")])
    assert metrics["n"] == 4 and metrics["errors"] == 0
    assert len(fake.prompts) - before == 4  # the four judged pairs, no train pair
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    for row in rows:
        assert set(row["fields"]) >= {"label_probs", "probe_probs", "scores", "expected_relevance"}
        assert row["lm_calls"] == 0
