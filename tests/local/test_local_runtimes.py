"""The llama.cpp runtimes (hiera_dspy/local/runtimes): choosing one, and xllamacpp's and llama-cpp-python's adapters
driven by fake modules (the real model is never loaded here; `pytest -m real_model` runs it)."""

from __future__ import annotations

import ctypes
import sys
import types
import uuid

import numpy as np
import pytest

from hiera_dspy.local import model as local
from hiera_dspy.local import runtimes
from hiera_dspy.local.runtimes import llama_cpp_runtime, xllamacpp_runtime


class FakeServer:
    """xllamacpp.Server: records the params and the request bodies, answers like llama.cpp's server."""

    instances: list["FakeServer"] = []

    def __init__(self, params):
        self.params, self.bodies = params, []
        FakeServer.instances.append(self)

    def handle_chat_completions(self, body):
        self.bodies.append(body)
        if body["messages"][-1]["content"] == "too long":
            return {"error": {"code": 400, "message": "the request exceeds the available context size"}}
        logprobs = {"content": [{"id": 1, "token": "Re", "logprob": -0.1,
                                 "top_logprobs": [{"id": 1, "token": "Re", "logprob": -0.1},
                                                  {"id": 2, "token": "Ir", "logprob": -2.3}]}]}
        return {"id": "chatcmpl-x", "choices": [{"message": {"role": "assistant", "content": "Relevant"},
                                                 "finish_reason": "stop", "logprobs": logprobs}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1}}

    def handle_embeddings(self, body):
        self.bodies.append(body)
        return {"data": [{"index": i, "embedding": [float(len(t)), float(i)]} for i, t in
                         reversed(list(enumerate(body["input"])))]}


def _params():
    return types.SimpleNamespace(model=types.SimpleNamespace(path=None), cpuparams=types.SimpleNamespace(),
                                 cpuparams_batch=types.SimpleNamespace())


@pytest.fixture
def fake_x(monkeypatch):
    module = types.SimpleNamespace(CommonParams=_params, Server=FakeServer,
                                   llama_pooling_type=types.SimpleNamespace(LLAMA_POOLING_TYPE_LAST=3))
    monkeypatch.setitem(sys.modules, "xllamacpp", module)
    FakeServer.instances = []
    local.unload_all()
    yield module
    local.unload_all()


def test_choose_takes_the_environment_then_the_first_installed(monkeypatch):
    monkeypatch.setenv("HIERA_LOCAL_RUNTIME", "nope")
    with pytest.raises(runtimes.RuntimeUnavailable, match="not a runtime"):
        runtimes.choose()
    monkeypatch.setenv("HIERA_LOCAL_RUNTIME", "llama-cpp-python")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(runtimes.RuntimeUnavailable, match=r"hiera-dspy\[local-source\]"):
        runtimes.choose()
    monkeypatch.delenv("HIERA_LOCAL_RUNTIME")
    monkeypatch.setitem(sys.modules, "xllamacpp", types.ModuleType("xllamacpp"))
    monkeypatch.setattr(runtimes.Runtime, "installed", lambda self: self.name == "xllamacpp")
    assert runtimes.choose().name == "xllamacpp"
    assert runtimes.PREFERENCE == ["llama-cpp-python", "xllamacpp"]


def test_chat_server_maps_the_request_and_keeps_its_port_closed(fake_x):
    chat = xllamacpp_runtime.ChatServer("/m.gguf", 4096, 2)
    params = FakeServer.instances[0].params
    assert params.model.path == "/m.gguf" and params.n_ctx == 4096 and params.cpuparams.n_threads == 2
    assert len(params.api_keys) == 1 and len(params.api_keys[0]) == 48  # a random key: the HTTP port answers no one
    out = chat.create_chat_completion(messages=[{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=5,
                                      stop=["\n"], seed=0, response_format={"type": "json_object", "schema": {"a": 1}},
                                      top_logprobs=5, logits_processor=None)
    body = FakeServer.instances[0].bodies[-1]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"schema": {"a": 1}}}
    assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["max_tokens"] == 5
    assert "logits_processor" not in body and out["choices"][0]["message"]["content"] == "Relevant"
    with pytest.raises(ValueError, match="exceed context window"):
        chat.create_chat_completion(messages=[{"role": "user", "content": "too long"}])


def test_engine_on_xllamacpp_returns_native_logprobs(fake_x, monkeypatch, tmp_path):
    from dspy.lm15 import Config, ContextLengthError, Message, Request

    monkeypatch.setattr(local, "_runtime", lambda: runtimes.RUNTIMES["xllamacpp"])
    gguf = tmp_path / "toy.gguf"
    gguf.write_bytes(b"GGUF" + uuid.uuid4().bytes * 8)
    lm = local.make_local_lm(str(gguf), cache=False)
    req = Request(model=lm.model, messages=(Message.user("judge"),), config=Config(logprobs=5, max_tokens=3))
    resp = lm._engine_spec.complete(req)
    assert resp.text == "Relevant" and resp.usage.input_tokens == 12
    (first,) = resp.logprobs
    assert first.token == "Re" and [t.token for t in first.top] == ["Re", "Ir"]
    with pytest.raises(ContextLengthError):
        lm._engine_spec.complete(Request(model=lm.model, messages=(Message.user("too long"),), config=Config()))


def test_embed_server_is_in_embedding_mode_and_keeps_the_order(fake_x):
    embed = xllamacpp_runtime.EmbedServer("/m.gguf", 2, n_seq=4)
    params = FakeServer.instances[0].params
    assert params.embedding is True and params.pooling_type == 3 and params.embd_normalize == -1
    assert params.n_parallel == 4 and params.n_ctx == 4 * xllamacpp_runtime.PER_SEQUENCE_CTX
    out = embed.embed(["a", "bbb"])
    assert [v.tolist() for v in out] == [[1.0, 0.0], [3.0, 1.0]] and embed.embed([]) == []


def test_llama_cpp_embedder_parses_special_tokens_and_reuses_the_shared_prefix(monkeypatch):

    class FakeLlama:
        """Tokens are characters; the context is one KV sequence (cells) driven by the low-level calls below."""

        def __init__(self, **kwargs):
            self.kwargs, self.special, self.cells, self.reads = kwargs, [], [], []
            self._ctx = types.SimpleNamespace(ctx=self)

        def tokenize(self, text, add_bos=True, special=False):
            self.special.append(special)
            return [ord(c) for c in text.decode()]

        def n_embd(self):
            return 2

        def close(self):
            self.closed = True

    def decode(ctx, batch):
        n = batch.n_tokens
        assert [batch.pos[i] for i in range(n)] == list(range(len(ctx.cells), len(ctx.cells) + n))
        ctx.cells.extend(batch.token[i] for i in range(n))
        ctx.reads.append(n)
        ctx.out = (ctypes.c_float * 2)(len(ctx.cells), sum(ctx.cells))  # a function of everything read
        return 0

    def batch_init(n, embd, n_seq):
        return types.SimpleNamespace(token=[0] * n, pos=[0] * n, n_seq_id=[0] * n, logits=[0] * n,
                                     seq_id=[[0] for _ in range(n)], n_tokens=0)

    def seq_rm(memory, seq, p0, p1):
        assert seq == 0 and p1 == -1
        del memory.cells[p0:]
        return True

    fake = types.SimpleNamespace(Llama=FakeLlama, LLAMA_POOLING_TYPE_NONE=0,
                                 llama_print_system_info=lambda: b"AMX_INT8 = 0",
                                 llama_cpp=types.SimpleNamespace(llama_model_default_params=lambda: object()),
                                 llama_get_memory=lambda ctx: ctx, llama_batch_init=batch_init,
                                 llama_batch_free=lambda b: None, llama_memory_seq_rm=seq_rm, llama_decode=decode,
                                 llama_get_embeddings_ith=lambda ctx, i: ctx.out)
    monkeypatch.setattr(llama_cpp_runtime, "import_llama_cpp", lambda: fake)
    embedder = llama_cpp_runtime.Embedder("/m.gguf", 2, n_seq=2)
    llama = embedder.llama
    assert llama.kwargs["embedding"] is True and llama.kwargs["pooling_type"] == 0
    prompts = ["sys q1 item-b", "sys q2 item", "sys q1 item-a"]
    out = embedder.embed(prompts)
    expected = [[float(len(p)), float(sum(map(ord, p)))] for p in prompts]
    assert [v.tolist() for v in out] == expected  # each prompt's own vector, in the caller's order
    # sorted: "sys q1 item-a" whole (13), "sys q1 item-b" its last token, "sys q2 item" from "q" on (6)
    assert llama.reads == [13, 1, 6] and embedder.reuse.fed == 20
    assert set(llama.special) == {True} and np.asarray(out[0]).dtype == np.float32
    alone = llama_cpp_runtime.Embedder("/m.gguf", 2, share_prefix=False)
    assert [v.tolist() for v in alone.embed(prompts)] == expected and alone.llama.reads == [13, 13, 11]
    embedder.close()
    assert llama.closed and embedder._batch is None
