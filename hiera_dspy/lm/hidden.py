"""The embedded model's hidden state for a pair: the probe's features (`hiera_dspy.methods.probe`).

llama.cpp in embedding mode with pooling LAST returns the final hidden state of the prompt's last token (1,536 floats
for Qwen2.5-1.5B): a summary of what the model understood of a chat-formatted relevance question about the pair.

- `probe_prompt` builds that prompt (byte-identical to the measured prototype, so its embedding cache is reused);
- `embedder_for(lm)` gives `prompt -> vector` for a role's LM: the embedded local model (its GGUF file, or the
  registered default one via `model_store.ensure_model`, which honours HIERA_MODEL_PATH); a hosted LM gives no hidden
  states, so it raises HieraError;
- one embedding-mode `Llama` per file per process, loaded on first use, every call under one lock;
- vectors are cached on disk under the cache root (`probe/<sha256(prompt)[:24]>.npy`; a model other than the registered
  default one gets its own sub-folder `probe/<sha256 of the file[:12]>/`), so a rerun or a killed prepare costs nothing.

Tests inject an embedder with `use_embedder(fn)` (the real model is never loaded).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from hiera_dspy import settings
from hiera_dspy.errors import HieraError
from hiera_dspy.lm import model_store

Embedder = Callable[[str], np.ndarray]

# The prompt as measured (bench/probe.py). It is kept byte-identical (the embedding cache is keyed by it), so
# the item goes in as the prototype put it rather than through `untrusted.item_block`. llama-cpp-python's embed()
# tokenizes without parsing special tokens (the template's markers included, as measured), so a "<|im_end|>"
# inside an item is plain text to the model and cannot end the user turn.
PROMPT = ("<|im_start|>system\nYou judge search relevance for a movie search engine.<|im_end|>\n"
          "<|im_start|>user\nSearch query: {query}\n\nMovie: {title}\n{text}\n\n"
          "Is this movie a relevant result for the search query? Answer Relevant or Irrelevant.<|im_end|>\n"
          "<|im_start|>assistant\n")

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()
_override: Embedder | None = None


def probe_prompt(query: str, title: str, text: str | None, text_chars: int = 600) -> str:
    """The probe's prompt for one pair (item text cut to `text_chars` characters)."""
    return PROMPT.format(query=query, title=title, text=(text or "")[:text_chars])


def prompt_key(prompt: str) -> str:
    """The cache key of a prompt: sha256 of its UTF-8 bytes, first 24 hex digits."""
    return hashlib.sha256(prompt.encode()).hexdigest()[:24]


def _llama(path: str):
    """The process's embedding-mode Llama for `path` (created on first use; callers hold _LOCK)."""
    if path not in _MODELS:
        from hiera_dspy.lm.local import _import_llama_cpp

        llama_cpp = _import_llama_cpp()
        _MODELS[path] = llama_cpp.Llama(model_path=path, embedding=True,
                                        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_LAST, n_ctx=1024, n_threads=2,
                                        n_threads_batch=2, n_batch=512, verbose=False)
    return _MODELS[path]


def llama_embedder(path: str) -> Embedder:
    """`prompt -> last-token hidden state` with the GGUF at `path` (one model per file, calls serialised)."""

    def embed(prompt: str) -> np.ndarray:
        with _LOCK:
            return np.asarray(_llama(path).embed(prompt), dtype=np.float32).reshape(-1)

    return embed


def cached(embed: Embedder, folder: Path) -> Embedder:
    """`embed` with an on-disk cache of its vectors in `folder` (one .npy per prompt key)."""

    def lookup(prompt: str) -> np.ndarray:
        file = folder / f"{prompt_key(prompt)}.npy"
        if file.is_file():
            return np.load(file)
        vec = embed(prompt)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(f".{threading.get_ident()}.tmp.npy")
        np.save(tmp, vec)
        tmp.replace(file)
        return vec

    return lookup


def local_model_file(lm) -> tuple[str, str | None]:
    """(GGUF path, its registered spec name or None) of an LM that runs the embedded model; None lm -> the registered
    default model (HIERA_MODEL_PATH honoured). A hosted LM raises HieraError: it gives no hidden states."""
    if lm is None:
        return str(model_store.ensure_model()), model_store.DEFAULT_MODEL
    from hiera_dspy.lm.local import LocalEngine

    engine = getattr(lm, "engine", None)
    if not isinstance(engine, LocalEngine):
        raise HieraError(f"the LLM probe reads the model's hidden state, which only the embedded local model gives; "
                         f"{getattr(lm, 'model', lm)!r} is not it. Run without --lm (or --lm local), or point "
                         "HIERA_MODEL_PATH at a GGUF file")
    return engine.path, engine.spec


def embedder_for(lm, cache: bool = True) -> Embedder:
    """The hidden-state embedder of the model `lm` runs (see the module doc), with its disk cache unless `cache` is
    False (to time the model); an injected one if set."""
    if _override is not None:
        return _override
    path, spec = local_model_file(lm)
    if not cache:
        return llama_embedder(path)
    folder = settings.cache_dir() / "probe"
    if spec != model_store.DEFAULT_MODEL:
        folder = folder / model_store.identify_file(path)[:12]
    return cached(llama_embedder(path), folder)


@contextmanager
def use_embedder(embed: Embedder) -> Iterator[Embedder]:
    """Within the block, every probe uses `embed` (tests: a deterministic fake; never the real model)."""
    global _override
    previous, _override = _override, embed
    try:
        yield embed
    finally:
        _override = previous
