"""Last-token hidden states with llama-cpp-python (the source-built binding), several prompts per batch.

`Llama(embedding=True, pooling_type=LAST).embed(prompts)` already packs several sequences into one llama.cpp batch;
it tokenizes without parsing special tokens, though, so the chat template's markers would reach the model as plain
text. `Embedder.embed` tokenizes with special tokens parsed (the prompt builder has already broken any marker inside
untrusted text), the same tokens xllamacpp's server makes of the same prompt.
"""

from __future__ import annotations

import numpy as np

BATCH_TOKENS = 2048


class Embedder:
    """Raw last-token hidden states for one GGUF file, batched (see the module doc)."""

    def __init__(self, path: str, threads: int, n_seq: int = 8):
        from hiera_dspy.lm.local import _import_llama_cpp, _model_params, _use_extra_bufts

        llama_cpp = _import_llama_cpp()
        with _model_params(llama_cpp, use_extra_bufts=_use_extra_bufts(llama_cpp)):
            self.llama = llama_cpp.Llama(model_path=str(path), embedding=True,
                                         pooling_type=llama_cpp.LLAMA_POOLING_TYPE_LAST, n_ctx=BATCH_TOKENS,
                                         n_batch=BATCH_TOKENS, n_ubatch=BATCH_TOKENS, n_threads=threads,
                                         n_threads_batch=threads, verbose=False)
        self.n_seq = max(1, int(n_seq))

    def embed(self, prompts: list[str]) -> list[np.ndarray]:
        """The hidden state of each prompt, up to `n_seq` prompts per llama.cpp batch."""
        llama, out = self.llama, []
        tokenize = llama.tokenize
        llama.tokenize = lambda text, add_bos=True, special=False: tokenize(text, add_bos=add_bos, special=True)
        try:
            for start in range(0, len(prompts), self.n_seq):
                chunk = list(prompts[start:start + self.n_seq])
                out.extend(np.asarray(v, dtype=np.float32).reshape(-1) for v in llama.embed(chunk))
        finally:
            del llama.tokenize  # the instance attribute: the class's method again
        return out

    def close(self) -> None:
        """Free the weights."""
        self.llama.close()
