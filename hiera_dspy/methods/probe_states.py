"""The embedded model's hidden state for a pair: the probe's features (`hiera_dspy.methods.probe`).

llama.cpp in embedding mode with pooling LAST returns the final hidden state of the prompt's last token (1,536 floats
for Qwen2.5-1.5B): a summary of what the model understood of a short relevance question about the pair.

- `states_for(lm, labels)` gives a `HiddenStates` for a role's LM: the embedded local model (its GGUF file, or the
  registered default one via `model_store.ensure_model`, which honours HIERA_MODEL_PATH); a hosted LM gives no
  hidden states, so it raises HieraError. Its `prompt(...)` builds the question (`probe_prompt.PromptFormat`: the
  scheme's labels, the model's own chat template, the item as untrusted data) and `many(prompts)` embeds them in
  sorted order, so the llama-cpp-python runtime reads the prefix a query's prompts share once (`prefix_reuse`;
  xllamacpp takes several prompts per llama.cpp batch, `BATCH`, $HIERA_PROBE_BATCH);
- one embedding model per file per process, loaded on first use by the installed runtime (`hiera_dspy.local.runtimes`),
  every call under one lock;
- vectors are cached on disk under the cache root (`probe/<sha256(prompt)[:24]>.npy`; a model other than the registered
  default one gets its own sub-folder `probe/<sha256 of the file[:12]>/`), so a rerun or a killed prepare costs
  nothing. The key is the prompt: a prompt change (this one, of issue 21) starts a fresh cache. Behind the disk cache,
  the bundled seed (`probe_seed`: the MSRD train pairs' vectors for the default model) answers the prompts it has.

Tests inject an embedder with `use_embedder(fn)` (`fn(prompt) -> vector`; the real model is never loaded; the prompt
then uses the plain layout, no chat template).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from hiera_dspy import settings
from hiera_dspy.errors import HieraError
from hiera_dspy.local import model_store
from hiera_dspy.methods import probe_seed
from hiera_dspy.methods.probe_prompt import PromptFormat

Embedder = Callable[[str], np.ndarray]
BatchEmbedder = Callable[[list[str]], list[np.ndarray]]
BATCH = 8  # prompts per llama.cpp batch (measured in docs/local-model.md)

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()
_override: Embedder | None = None


def prompt_key(prompt: str) -> str:
    """The cache key of a prompt: sha256 of its UTF-8 bytes, first 24 hex digits."""
    return hashlib.sha256(prompt.encode()).hexdigest()[:24]


def batch_size() -> int:
    """Prompts per llama.cpp batch: $HIERA_PROBE_BATCH, else BATCH."""
    return settings.probe_batch(BATCH)


def _model(path: str):
    """The process's embedding model for `path` (created on first use; callers hold _LOCK)."""
    if path not in _MODELS:
        from hiera_dspy.local.model import default_threads
        from hiera_dspy.local.runtimes import choose

        _MODELS[path] = choose().load_embedder(path, default_threads(), batch_size())
    return _MODELS[path]


def llama_embedder(path: str) -> BatchEmbedder:
    """`prompts -> last-token hidden states` with the GGUF at `path` (one model per file, calls serialised)."""

    def embed(prompts: list[str]) -> list[np.ndarray]:
        with _LOCK:
            return _model(path).embed(list(prompts))

    return embed


def cached(embed: BatchEmbedder, folder: Path, seed: dict[str, np.ndarray] | None = None) -> BatchEmbedder:
    """`embed` with an on-disk cache of its vectors in `folder` (one .npy per prompt key) and, behind it, the bundled
    `seed` ({prompt key: vector}, `probe_seed`); only the prompts found in neither go to `embed`, in one call."""
    seed = seed or {}

    def known(prompt: str, file: Path) -> np.ndarray | None:
        if file.is_file():
            return np.load(file)
        vec = seed.get(prompt_key(prompt))
        return None if vec is None else np.asarray(vec, dtype=np.float32)

    def lookup(prompts: list[str]) -> list[np.ndarray]:
        files = [folder / f"{prompt_key(p)}.npy" for p in prompts]
        out: list[np.ndarray | None] = [known(p, f) for p, f in zip(prompts, files)]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            folder.mkdir(parents=True, exist_ok=True)
            for i, vec in zip(missing, embed([prompts[i] for i in missing])):
                tmp = files[i].with_suffix(f".{threading.get_ident()}.tmp.npy")
                np.save(tmp, vec)
                tmp.replace(files[i])
                out[i] = vec
        return out  # type: ignore[return-value]

    return lookup


class HiddenStates:
    """Prompts and hidden states for one model: `prompt(...)`, `many(prompts)`, and `self(prompt)` for one."""

    def __init__(self, fmt: PromptFormat, embed: BatchEmbedder):
        self.fmt, self._embed = fmt, embed

    def prompt(self, query: str, title: str, text: str | None, text_chars: int = 600) -> str:
        """The probe's prompt for one pair (see `probe_prompt`)."""
        return self.fmt.render(query, title, text, text_chars)

    def many(self, prompts: Sequence[str], chunk: int | None = None,
             progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
        """The hidden state of every prompt (in the order given), `chunk` prompts per call (default: 4 llama.cpp
        batches) in sorted order, so the prompts of one query are read one after another and share their prefix
        (`prefix_reuse`); the number done goes to `progress` after each call."""
        chunk = chunk or 4 * batch_size()
        order = sorted(range(len(prompts)), key=lambda i: prompts[i])  # a query's prompts together: prefix shared
        out: list[np.ndarray | None] = [None] * len(prompts)
        for start in range(0, len(order), chunk):
            part = order[start:start + chunk]
            for i, vec in zip(part, self._embed([prompts[i] for i in part])):
                out[i] = vec
            if progress:
                progress(start + len(part))
        return out  # type: ignore[return-value]

    def __call__(self, prompt: str) -> np.ndarray:
        return self._embed([prompt])[0]


def local_model_file(lm) -> tuple[str, str | None]:
    """(GGUF path, its registered spec name or None) of an LM that runs the embedded model; None lm -> the registered
    default model (HIERA_MODEL_PATH honoured). A hosted LM raises HieraError: it gives no hidden states."""
    if lm is None:
        return str(model_store.ensure_model()), model_store.DEFAULT_MODEL
    from hiera_dspy.local.model import LocalEngine

    engine = getattr(lm, "engine", None)
    if not isinstance(engine, LocalEngine):
        raise HieraError(f"the LLM probe reads the model's hidden state, which only the embedded local model gives; "
                         f"{getattr(lm, 'model', lm)!r} is not it. Run without --lm (or --lm local), or point "
                         "HIERA_MODEL_PATH at a GGUF file")
    return engine.path, engine.spec


def states_for(lm, labels: Sequence[str], cache: bool = True) -> HiddenStates:
    """The hidden states of the model `lm` runs for a scheme with `labels` (see the module doc), with the disk cache
    unless `cache` is False (to time the model); an injected embedder if set."""
    if _override is not None:
        single = _override
        return HiddenStates(PromptFormat(tuple(labels)), lambda prompts: [single(p) for p in prompts])
    path, spec = local_model_file(lm)
    fmt = PromptFormat.for_model(labels, path)
    if not cache:
        return HiddenStates(fmt, llama_embedder(path))
    folder = settings.cache_dir() / "probe"
    if spec != model_store.DEFAULT_MODEL:
        folder = folder / model_store.identify_file(path)[:12]
    seed = probe_seed.seed_vectors(model_store.get_spec(spec).sha256) if spec else {}
    return HiddenStates(fmt, cached(llama_embedder(path), folder, seed))


@contextmanager
def use_embedder(embed: Embedder) -> Iterator[Embedder]:
    """Within the block, every probe uses `embed` (tests: a deterministic fake; never the real model)."""
    global _override
    previous, _override = _override, embed
    try:
        yield embed
    finally:
        _override = previous
