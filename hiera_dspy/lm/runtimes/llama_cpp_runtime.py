"""Last-token hidden states with llama-cpp-python (the source-built binding), a shared prompt prefix read once.

The model runs in embedding mode with pooling NONE on one sequence whose KV cache is kept between prompts
(`hiera_dspy.lm.prefix_reuse`): a prompt is read from the end of its longest common token prefix with the prompt read
before it, and the final hidden state of its last token is its vector (what pooling LAST returns, without clearing the
cache). Prompts are read in sorted order, so the prompts of one query share all of the template, the system line and
the query. Tokenized with special tokens parsed: the chat template's markers are markers (the prompt builder has
already broken any marker inside untrusted text), the same tokens xllamacpp's server makes of the same prompt.

Measured (`bench/probe_timing.py`, docs/local-model.md): several sequences per llama.cpp batch were slower than one
at a time (the unified KV cache makes every sequence attend over the whole batch's cells), so `n_seq` is accepted for
the runtime interface and prompts are read one after another.
"""

from __future__ import annotations

import numpy as np

from hiera_dspy.lm.prefix_reuse import PrefixReuse

CTX_TOKENS = 2048  # the KV cache of the one sequence; a longer prompt is cut to this (the probe's are ~200 tokens)
UBATCH = 512  # tokens per llama.cpp micro-batch (measured: 128-512 read at the same speed)


class Embedder:
    """Raw last-token hidden states for one GGUF file, the shared prefix read once (see the module doc)."""

    def __init__(self, path: str, threads: int, n_seq: int = 8, share_prefix: bool = True):
        from hiera_dspy.lm.local import _import_llama_cpp, _model_params, _use_extra_bufts

        llama_cpp = self.lib = _import_llama_cpp()
        with _model_params(llama_cpp, use_extra_bufts=_use_extra_bufts(llama_cpp)):
            self.llama = llama_cpp.Llama(model_path=str(path), embedding=True,
                                         pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, n_ctx=CTX_TOKENS,
                                         n_batch=CTX_TOKENS, n_ubatch=UBATCH, n_threads=threads,
                                         n_threads_batch=threads, verbose=False)
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
            raise RuntimeError(f"llama_decode failed ({code}) on a prompt of {start + len(tokens)} tokens")
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
