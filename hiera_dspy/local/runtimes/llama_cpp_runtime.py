"""The llama-cpp-python runtime (the source-built binding): its chat model (`load_chat`) and last-token hidden states
(`Embedder`), a shared prompt prefix read once.

The chat model gets a lean prefix-state cache ($HIERA_LOCAL_RAM_CACHE_MB) and weight repacking off where llama.cpp was
built with AMX (`extra_buffers_on`).

The model runs in embedding mode with pooling NONE on one sequence whose KV cache is kept between prompts
(`hiera_dspy.local.prefix_reuse`): a prompt is read from the end of its longest common token prefix with the prompt read
before it, and the final hidden state of its last token is its vector (what pooling LAST returns, without clearing the
cache). Prompts are read in sorted order, so the prompts of one query share all of the template, the system line and
the query. Tokenized with special tokens parsed: the chat template's markers are markers (the prompt builder has
already broken any marker inside untrusted text), the same tokens xllamacpp's server makes of the same prompt.

Measured (`bench/probe_timing.py`, docs/local-model.md): several sequences per llama.cpp batch were slower than one
at a time (the unified KV cache makes every sequence attend over the whole batch's cells), so `n_seq` is accepted for
the runtime interface and prompts are read one after another.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from hiera_dspy import settings
from hiera_dspy.local.prefix_reuse import PrefixReuse
from hiera_dspy.local.runtimes import INSTALL_HINT, RuntimeUnavailable

CTX_TOKENS = 2048  # the KV cache of the one sequence; a longer prompt is cut to this (the probe's are ~200 tokens)
UBATCH = 512  # tokens per llama.cpp micro-batch (measured: 128-512 read at the same speed)
DEFAULT_RAM_CACHE_MB = 256  # KV states of recent prompts (~28 KB per token for the 1.5B model): ~20 prompts of 400


def import_llama_cpp():
    """The llama_cpp module (RuntimeUnavailable, with the install command, when it cannot be imported)."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise RuntimeUnavailable(f"{INSTALL_HINT} ({exc})") from exc
    return llama_cpp


def new_llama(llama_cpp, **kwargs):
    """`llama_cpp.Llama(**kwargs)` with weight repacking off where llama.cpp was built with AMX (`extra_buffers_on`)."""
    with model_params(llama_cpp, use_extra_bufts=extra_buffers_on(llama_cpp)):
        return llama_cpp.Llama(**kwargs)


def load_chat(path: str, n_ctx: int, threads: int):
    """llama-cpp-python's `Llama` for `path` (the llama-cpp-python runtime's chat model), with the lean prefix-state
    cache and weight repacking off where llama.cpp was built with AMX (see `extra_buffers_on`)."""
    llama_cpp = import_llama_cpp()
    llama = new_llama(llama_cpp, model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                      n_batch=512, seed=0, verbose=False)
    ram_mb = settings.local_ram_cache_mb(DEFAULT_RAM_CACHE_MB)
    if ram_mb:
        llama.set_cache(prefix_state_cache(llama_cpp, ram_mb << 20))
    return llama


def extra_buffers_on(llama_cpp) -> bool:
    """llama.cpp's extra weight buffers (CPU repacking; AMX on Sapphire Rapids and later). A llama.cpp built with
    AMX_INT8 (pip's source build uses -march=native, so any AMX machine) segfaults in ggml_backend_amx_mul_mat on the
    first batched decode (ggml-org/llama.cpp#20824, still open; seen here with this very model), so with AMX compiled
    in they are off unless HIERA_LOCAL_EXTRA_BUFTS=1. Without AMX (or with HIERA_LOCAL_EXTRA_BUFTS=0) the default."""
    forced = settings.local_extra_bufts()
    if forced is not None:
        return forced
    try:
        info = llama_cpp.llama_print_system_info().decode(errors="replace")
    except Exception:  # noqa: BLE001 - binding missing: keep llama.cpp's default
        return True
    return "AMX_INT8 = 1" not in info


def prefix_state_cache(llama_cpp, capacity_bytes: int):
    """llama-cpp-python's LlamaRAMCache (KV states of earlier prompts, restored by longest common prefix), minus its
    memory trap: each saved state also copies the logits of every prompt token (n_tokens x 151,936 floats, ~300 MB for
    a 500-token prompt with this vocabulary) and does not count them against the capacity. A restored state always
    re-decodes at least its last token before sampling (`_requires_eval`), so those logits are never read: keep one
    row (load_state broadcasts it)."""

    class PrefixStateCache(llama_cpp.LlamaRAMCache):
        def __setitem__(self, key, value):
            scores = getattr(value, "scores", None)
            if scores is not None and getattr(scores, "ndim", 0) == 2 and scores.shape[0] > 1:
                value.scores = scores[:1].copy()
            super().__setitem__(key, value)

    return PrefixStateCache(capacity_bytes=capacity_bytes)


@contextmanager
def model_params(llama_cpp, *, use_extra_bufts: bool):
    """`Llama()` exposes no use_extra_bufts argument: set it on the defaults it starts from, for this construction
    only (the caller serialises model loads)."""
    module = llama_cpp.llama_cpp
    original = module.llama_model_default_params
    if use_extra_bufts or not hasattr(original(), "use_extra_bufts"):
        yield
        return

    def defaults():
        params = original()
        params.use_extra_bufts = False
        return params

    module.llama_model_default_params = defaults
    try:
        yield
    finally:
        module.llama_model_default_params = original


class Embedder:
    """Raw last-token hidden states for one GGUF file, the shared prefix read once (see the module doc)."""

    def __init__(self, path: str, threads: int, n_seq: int = 8, share_prefix: bool = True):
        llama_cpp = self.lib = import_llama_cpp()
        self.llama = new_llama(llama_cpp, model_path=str(path), embedding=True,
                               pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, n_ctx=CTX_TOKENS, n_batch=CTX_TOKENS,
                               n_ubatch=UBATCH, n_threads=threads, n_threads_batch=threads, verbose=False)
        self.n_seq = max(1, int(n_seq))
        self._ctx = self.llama._ctx.ctx
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(CTX_TOKENS, 0, 1)
        self._n_embd = int(self.llama.n_embd())
        self.reuse = PrefixReuse(self._decode, self._truncate, share=share_prefix)

    def _truncate(self, keep: int) -> None:
        """Drop the KV cells at positions >= keep (keep 0: the whole sequence)."""
        self.lib.llama_memory_seq_rm(self._memory, 0, keep, -1)

    def _decode(self, tokens: list[int], start: int) -> np.ndarray:
        """Read `tokens` at positions start.. of sequence 0; the last one's final hidden state. Every token is marked
        as an output (llama.cpp does so itself in embedding mode; marking them saves its warning)."""
        batch = self._batch
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + i, 1
            batch.seq_id[i][0], batch.logits[i] = 0, 1
        batch.n_tokens = len(tokens)
        code = self.lib.llama_decode(self._ctx, batch)
        if code != 0:
            raise RuntimeUnavailable(f"llama_decode failed ({code}) on a prompt of {start + len(tokens)} tokens: a shorter "
                                     "item text (HIERA_ITEM_CHARS) or a larger context (HIERA_LOCAL_CTX) may fit it")
        ptr = self.lib.llama_get_embeddings_ith(self._ctx, len(tokens) - 1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_embd,)).astype(np.float32, copy=True)

    def tokens(self, prompt: str) -> list[int]:
        """The prompt's tokens, special tokens parsed, cut to the context."""
        return list(self.llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))[:CTX_TOKENS]

    def embed(self, prompts: list[str]) -> list[np.ndarray]:
        """The hidden state of each prompt, in the order given (read in sorted order, prefixes shared)."""
        return self.reuse.many([self.tokens(p) for p in prompts])

    def close(self) -> None:
        """Free the batch and the weights."""
        if self._batch is not None:
            self.lib.llama_batch_free(self._batch)
            self._batch = None
        self.llama.close()
