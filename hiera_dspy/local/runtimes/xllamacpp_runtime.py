"""The xllamacpp runtime: llama.cpp's own C++ server engine, in process (prebuilt CPU wheel, no compiler needed).

`xllamacpp.Server(params)` loads a GGUF file and answers OpenAI-shaped requests as Python dicts
(`handle_chat_completions`, `handle_embeddings`); it is thread-safe and batches concurrent work itself. It also opens an
HTTP port on 127.0.0.1 (the engine always does): every server here gets a random API key that nothing else knows, so
that port answers nobody. Both classes below are what `hiera_dspy.local.runtimes` promises:

- `ChatServer`: `create_chat_completion(messages=..., **llama-cpp-python-style kwargs)` -> the OpenAI dict, with
  `logprobs`/`top_logprobs` answered natively (`native_logprobs = True`);
- `EmbedServer`: embedding mode, pooling LAST, `n_seq` slots so up to `n_seq` prompts share one llama.cpp batch; the raw
  (unnormalised) last-token hidden state of each prompt.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from hiera_dspy.errors import HieraError

PER_SEQUENCE_CTX = 1024  # tokens per embedding slot (the probe's prompts are ~200 tokens)


def _import():
    import xllamacpp

    return xllamacpp


def _params(xllamacpp, path: str, n_ctx: int, threads: int):
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = int(n_ctx)
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = int(threads)
    params.api_keys = [secrets.token_hex(24)]  # the engine's HTTP port on 127.0.0.1 answers no one
    params.warmup = False
    params.verbosity = -1  # only errors on stderr (as llama-cpp-python with verbose=False)
    return params


def _error(out: Any) -> None:
    """Raise what llama.cpp's server reports as an error (ValueError, the wording local.py maps)."""
    if isinstance(out, dict) and "error" in out:
        err = out["error"]
        message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
        if "context" in message and ("exceed" in message or "size" in message):
            raise HieraError(f"Requested tokens exceed context window: {message}")
        raise HieraError(message)


def _response_format(fmt: dict | None) -> dict | None:
    """llama-cpp-python's {"type": "json_object", "schema": S} as the server's json_schema form."""
    if not fmt:
        return None
    if fmt.get("schema"):
        return {"type": "json_schema", "json_schema": {"schema": fmt["schema"]}}
    return {"type": "json_object"}


class ChatServer:
    """Chat completions for one GGUF file (see the module doc)."""

    native_logprobs = True

    def __init__(self, path: str, n_ctx: int, threads: int):
        xllamacpp = _import()
        params = _params(xllamacpp, path, n_ctx, threads)
        params.n_parallel = 1  # one slot: calls are serialised by the engine's lock anyway; the whole window is its
        self.server = xllamacpp.Server(params)

    def create_chat_completion(self, messages: list[dict], **kwargs) -> dict:
        """An OpenAI chat completion dict (llama-cpp-python's keyword names accepted)."""
        body: dict[str, Any] = {"messages": messages}
        for key in ("temperature", "max_tokens", "stop", "seed", "repeat_penalty", "top_p", "top_k"):
            if kwargs.get(key) is not None:
                body[key] = kwargs[key]
        fmt = _response_format(kwargs.get("response_format"))
        if fmt:
            body["response_format"] = fmt
        if kwargs.get("top_logprobs"):
            body["logprobs"], body["top_logprobs"] = True, int(kwargs["top_logprobs"])
        out = self.server.handle_chat_completions(body)
        _error(out)
        return out

    def set_cache(self, cache) -> None:
        """No-op: the server keeps and reuses prompt prefixes itself."""

    def close(self) -> None:
        """Free the weights (the server stops when its last reference goes)."""
        self.server = None


class EmbedServer:
    """Last-token hidden states, `n_seq` prompts per batch (see the module doc)."""

    def __init__(self, path: str, threads: int, n_seq: int = 8):
        xllamacpp = _import()
        n_seq = max(1, int(n_seq))
        params = _params(xllamacpp, path, PER_SEQUENCE_CTX * n_seq, threads)
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_LAST
        params.embd_normalize = -1  # the raw hidden state, as llama-cpp-python's embed(normalize=False)
        params.n_parallel = n_seq
        params.n_batch = params.n_ubatch = PER_SEQUENCE_CTX * min(n_seq, 4)
        self.n_seq = n_seq
        self.server = xllamacpp.Server(params)

    def embed(self, prompts: list[str]) -> list[np.ndarray]:
        """The hidden state of each prompt (special tokens in the prompt are parsed: build prompts accordingly)."""
        if not prompts:
            return []
        out = self.server.handle_embeddings({"input": list(prompts)})
        _error(out)
        rows = sorted(out["data"], key=lambda d: d["index"])
        return [np.asarray(row["embedding"], dtype=np.float32).reshape(-1) for row in rows]

    def close(self) -> None:
        """Free the weights."""
        self.server = None
