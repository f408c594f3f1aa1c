"""Which llama.cpp binding runs the embedded model: a registry, chosen by what is installed.

| runtime | extra | install on a fresh 2-core machine |
| --- | --- | --- |
| llama-cpp-python | `hiera-dspy[local-source]` | builds llama.cpp with gcc: ~7 min; built for this CPU |
| xllamacpp | `hiera-dspy[local]` | a prebuilt CPU wheel (34 MB): seconds, no compiler |

Both give chat completions with log-probabilities and JSON schemas, and batched last-token hidden states.

`choose()` takes $HIERA_LOCAL_RUNTIME when set (an error when that binding is not installed), else the first installed
one in `PREFERENCE` order: llama-cpp-python first (whoever built it for this CPU chose it; it is also the faster one
here, see docs/local-model.md), then xllamacpp. Each runtime loads two kinds of model object per GGUF file:

- `load_chat(path, n_ctx, threads)`: an object with `create_chat_completion(messages=..., **kwargs)` returning an
  OpenAI-shaped dict (llama-cpp-python's `Llama`, or `xllamacpp_runtime.ChatServer` which answers the same way), and
  `close()`; `native_logprobs` says whether it takes `logprobs`/`top_logprobs` itself (else a logits processor);
- `load_embedder(path, threads, n_seq)`: an object with `embed(prompts) -> list[np.ndarray]` (the last token's final
  hidden state of each prompt, several prompts per llama.cpp batch, special tokens parsed) and `close()`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hiera_dspy import settings
from hiera_dspy.errors import HieraError


class RuntimeUnavailable(HieraError, RuntimeError):
    """No llama.cpp binding is installed (or the one asked for is not)."""


@dataclass(frozen=True)
class Runtime:
    """A llama.cpp binding: import name, pip requirement, extra and loaders ("module:attr", imported on use)."""

    name: str
    module: str
    pip: str
    extra: str
    chat: str
    embedder: str

    def installed(self) -> bool:
        """True when the binding's module can be imported (found on the path; not imported here)."""
        try:
            return importlib.util.find_spec(self.module) is not None
        except (ImportError, ValueError):
            return False

    def _resolve(self, target: str) -> Callable[..., Any]:
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def load_chat(self, path: str, n_ctx: int, threads: int) -> Any:
        """A chat model object for `path` (see the module doc)."""
        return self._resolve(self.chat)(path, n_ctx, threads)

    def load_embedder(self, path: str, threads: int, n_seq: int) -> Any:
        """A hidden-state embedder for `path` taking up to `n_seq` prompts per batch (see the module doc)."""
        return self._resolve(self.embedder)(path, threads, n_seq)


RUNTIMES: dict[str, Runtime] = {}
PREFERENCE: list[str] = []  # choose() tries these in order


def register(runtime: Runtime) -> Runtime:
    """Add a runtime to the registry (last registered is tried last)."""
    RUNTIMES[runtime.name] = runtime
    if runtime.name not in PREFERENCE:
        PREFERENCE.append(runtime.name)
    return runtime


register(Runtime("llama-cpp-python", "llama_cpp", "llama-cpp-python==0.3.36", "local-source",
                 chat="hiera_dspy.local.runtimes.llama_cpp_runtime:load_chat",
                 embedder="hiera_dspy.local.runtimes.llama_cpp_runtime:Embedder"))

register(Runtime("xllamacpp", "xllamacpp", "xllamacpp==2026.10.11549", "local",
                 chat="hiera_dspy.local.runtimes.xllamacpp_runtime:ChatServer",
                 embedder="hiera_dspy.local.runtimes.xllamacpp_runtime:EmbedServer"))
INSTALL_HINT = ("the local model needs a llama.cpp binding: pip install 'hiera-dspy[local]' (xllamacpp, a prebuilt "
                "wheel: seconds) or 'hiera-dspy[local-source]' (llama-cpp-python, builds llama.cpp from source: ~7 min "
                "on 2 cores). Or use a hosted/served model: --lm openai/..., --lm anthropic/..., --api-base URL.")


def choose(name: str | None = None) -> Runtime:
    """The runtime to use: `name`, else $HIERA_LOCAL_RUNTIME, else the first installed in PREFERENCE order."""
    wanted = name or settings.local_runtime()
    if wanted:
        if wanted not in RUNTIMES:
            raise RuntimeUnavailable(f"HIERA_LOCAL_RUNTIME={wanted!r} is not a runtime; known: {', '.join(RUNTIMES)}")
        runtime = RUNTIMES[wanted]
        if not runtime.installed():
            raise RuntimeUnavailable(f"HIERA_LOCAL_RUNTIME={wanted}: {runtime.module} is not installed "
                                     f"(pip install 'hiera-dspy[{runtime.extra}]')")
        return runtime
    for candidate in PREFERENCE:
        if RUNTIMES[candidate].installed():
            return RUNTIMES[candidate]
    raise RuntimeUnavailable(INSTALL_HINT)
