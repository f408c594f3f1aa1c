"""The embedded default LM: a GGUF model run in-process by llama.cpp (llama-cpp-python), as a DSPy 3.4 custom engine.

`make_local_lm(None)` acquires and verifies the registered default model (`hiera_dspy.local.model_store.ensure_model`);
`make_local_lm(PATH)` runs any GGUF file (hashed once, then remembered by a stamp). The LM is
`dspy.LM("local/<name>-<sha256[:12]>", engine=LocalEngine, async_engine=AsyncLocalEngine)`:

- greedy decoding (temperature 0 unless a call asks otherwise), fixed seed, the chat template stored in the GGUF;
- `max_tokens` and stop sequences from the request; real token usage in every response (so DSPy's usage tracker and
  `hiera_dspy.lm.ledger` see it);
- one `Llama` per file per process, whatever the number of LMs/engines/copies, with a lock around every call (Llama
  objects are not thread-safe; threads queue on it); the weights load on the first call (`LocalEngine.load()` to
  load eagerly);
- llama.cpp reuses the KV cache of the longest common prefix with the previous prompt, so calls that share a prompt
  prefix (same signature instructions and demos) only read their new suffix; a prefix-state cache (llama-cpp-python's
  LlamaRAMCache, made lean: `HIERA_LOCAL_RAM_CACHE_MB`, default 256, 0 = off) also keeps the states of earlier
  prompts, so roles that alternate (judge, relation, judge, ...) each find their own prefix again;
- DSPy's response cache stays on; the model string carries the file's SHA-256 prefix so different files never share
  cache entries;
- the engines save as {path or spec name, sha256, n_ctx} (never weights), so programs holding the LM can be saved
  and loaded (`allow_unsafe_lm_state=True`, as for any custom engine).

Environment: `HIERA_LOCAL_CTX` (context window, default 4096), `HIERA_LOCAL_THREADS` (default: the CPUs this
process may run on), `HIERA_LOCAL_RAM_CACHE_MB`, `HIERA_LOCAL_EXTRA_BUFTS` (see
`runtimes.llama_cpp_runtime.extra_buffers_on`: weight repacking is turned off when llama.cpp was built with AMX, which
crashes).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy  # noqa: E402
from dspy.clients.engines.base import validate_request  # noqa: E402
from dspy.lm15 import (  # noqa: E402
    ContextLengthError,
    InvalidRequestError,
    Message,
    Request,
    Response,
    TextPart,
    UnsupportedFeatureError,
    Usage,
    response_to_events,
)

from hiera_dspy import settings  # noqa: E402
from hiera_dspy.errors import HieraError
from hiera_dspy.local import model_store, runtimes
from hiera_dspy.local.logprobs import openai_logprobs

__all__ = [
    "AsyncLocalEngine",
    "LocalEngine",
    "LocalLMUnavailable",
    "loaded_models",
    "local_model_name",
    "make_local_lm",
    "resolve_model_file",
    "unload_all",
]

DEFAULT_CTX = 4096


class LocalLMUnavailable(HieraError, RuntimeError):
    """No llama.cpp binding is installed or the model file cannot be used."""


def _runtime() -> runtimes.Runtime:
    """The llama.cpp binding to run the model with (`hiera_dspy.local.runtimes.choose`)."""
    try:
        return runtimes.choose()
    except runtimes.RuntimeUnavailable as exc:
        raise LocalLMUnavailable(str(exc)) from exc


def default_threads() -> int:
    """llama.cpp's threads: $HIERA_LOCAL_THREADS, else every core this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return settings.local_threads() or max(1, cores)


def default_ctx() -> int:
    """The context window: $HIERA_LOCAL_CTX, else DEFAULT_CTX."""
    return settings.local_ctx(DEFAULT_CTX)


# ── one Llama per file per process ──────────────────────────────────────────────────────────────────────────────────


@dataclass
class _Loaded:
    path: str
    n_ctx: int
    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    load_seconds: float = 0.0
    calls: int = 0


_MODELS: dict[str, _Loaded] = {}
_MODELS_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


def _load(path: str, n_ctx: int) -> _Loaded:
    """The process-wide Llama for `path`, loaded on first use. A request for a larger window than the loaded one
    reloads the file with that window (under the model's lock, so no call is running on the old one)."""
    with _MODELS_LOCK:
        loaded = _MODELS.get(path)
        if loaded is not None and loaded.n_ctx >= n_ctx:
            return loaded
        runtime = _runtime()
        old_lock = loaded.lock if loaded else None
        if old_lock:
            old_lock.acquire()
        try:
            if loaded is not None:
                loaded.llama.close()
            started = time.perf_counter()
            try:
                llama = runtime.load_chat(path, n_ctx, default_threads())
            except runtimes.RuntimeUnavailable as exc:  # the binding is installed but does not import
                raise LocalLMUnavailable(str(exc)) from exc
            fresh = _Loaded(path=path, n_ctx=n_ctx, llama=llama, load_seconds=time.perf_counter() - started)
            if loaded is not None:
                fresh.lock = loaded.lock  # callers already queued on the old lock stay serialised
            _MODELS[path] = fresh
            global _ATEXIT_REGISTERED
            if not _ATEXIT_REGISTERED:  # free llama.cpp before interpreter teardown (else Llama.__del__ errors)
                atexit.register(unload_all)
                _ATEXIT_REGISTERED = True
            return fresh
        finally:
            if old_lock:
                old_lock.release()


def loaded_models() -> dict[str, dict[str, Any]]:
    """What is in memory: path -> {n_ctx, load_seconds, calls}."""
    with _MODELS_LOCK:
        return {p: {"n_ctx": m.n_ctx, "load_seconds": m.load_seconds, "calls": m.calls} for p, m in _MODELS.items()}


def unload_all() -> None:
    """Free every loaded model's weights (the next call loads them again)."""
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            with loaded.lock:
                loaded.llama.close()
        _MODELS.clear()


# ── request/response mapping ────────────────────────────────────────────────────────────────────────────────────────


def _text_of(parts_or_text, where: str) -> str:
    if parts_or_text is None:
        return ""
    if isinstance(parts_or_text, str):
        return parts_or_text
    texts = []
    for part in parts_or_text:
        if not isinstance(part, TextPart):
            raise UnsupportedFeatureError(f"the local model takes text only; {where} has a {type(part).__name__}")
        texts.append(part.text)
    return "".join(texts)


def _chat_messages(request: Request) -> list[dict[str, str]]:
    messages = []
    if request.system is not None:
        messages.append({"role": "system", "content": _text_of(request.system, "the system prompt")})
    for message in request.messages:
        if message.role not in ("user", "assistant"):
            raise UnsupportedFeatureError(f"the local model takes user/assistant messages, not {message.role!r}")
        messages.append({"role": message.role, "content": _text_of(message.parts, f"a {message.role} message")})
    return messages


def _response_format(fmt: dict | None) -> dict | None:
    """OpenAI-style response_format -> llama-cpp-python's (JSON grammar, optionally from a schema)."""
    if not fmt:
        return None
    kind = fmt.get("type")
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":  # canonical lm15 shape {"type", "schema", ...}; OpenAI's nests it under "json_schema"
        schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema")
        return {"type": "json_object", "schema": bounded_schema(schema)} if schema else {"type": "json_object"}
    return None  # "text"


def bounded_schema(schema: dict, max_chars: int | None = None, max_items: int = 2) -> dict:
    """The schema with every free-text string capped at `max_chars` characters and every list at `max_items` items.

    The grammar then closes each field in time: a 2-core CPU writes ~6-11 tokens/s, and a small model left to itself
    fills its token cap and is cut off mid-field. $HIERA_LOCAL_MAX_CHARS (default 150) sets the cap; 0 disables it.
    """
    max_chars = settings.local_max_chars(150) if max_chars is None else max_chars
    if not max_chars or not isinstance(schema, dict):
        return schema

    def bound(node, limit):
        if not isinstance(node, dict):
            return node
        node = dict(node)
        if node.get("type") == "string" and "enum" not in node and "const" not in node:
            node.setdefault("maxLength", limit)
        if node.get("type") == "array":
            node.setdefault("maxItems", max_items)
            node["items"] = bound(node.get("items", {}), max(20, limit // 4))
        for key in ("properties", "$defs", "definitions"):
            if isinstance(node.get(key), dict):
                node[key] = {name: bound(sub, limit) for name, sub in node[key].items()}
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list):
                node[key] = [bound(sub, limit) for sub in node[key]]
        return node

    return bound(schema, max_chars)


# ── the engines ─────────────────────────────────────────────────────────────────────────────────────────────────────


class LocalEngine:
    """DSPy 3.4 custom engine running a GGUF model in-process. Holds only plain settings (copy/pickle-safe); the
    Llama object lives in the process-wide registry."""

    # Capability hints DSPy reads from a custom engine: JSON-schema outputs are enforced by a llama.cpp grammar, so a
    # JSONAdapter (also ChatAdapter's fallback after a parse failure) gets output that parses, Literal labels included.
    supports_function_calling = False
    supports_reasoning = False
    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "top_p", "top_k", "stop", "seed", "response_format",
                                  "logprobs", "top_logprobs"})

    def __init__(self, path: str, sha256: str, *, n_ctx: int | None = None, spec: str | None = None,
                 max_tokens: int = 256):
        self.path = str(path)
        self.sha256 = sha256
        self.n_ctx = int(n_ctx or default_ctx())
        self.spec = spec
        self.max_tokens = int(max_tokens)  # used when a request states none

    # lifecycle
    def load(self) -> _Loaded:
        """The loaded model for this engine's file and context size (loaded once per process)."""
        return _load(self.path, self.n_ctx)

    def close(self) -> None:
        """Borrowed model: nothing to close per engine (`unload_all()` frees the weights)."""

    # state (no weights, no secrets)
    def dump_state(self) -> dict[str, Any]:
        """The engine's state for DSPy's save: file, hash, context size; no weights, no secret."""
        state: dict[str, Any] = {"path": self.path, "sha256": self.sha256, "n_ctx": self.n_ctx,
                                 "max_tokens": self.max_tokens}
        if self.spec:
            state["spec"] = self.spec
        return state

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> "LocalEngine":
        """The saved path if it still exists; else, for a registered model, acquire it again (cache, hub, mirror)."""
        saved = state.get("path")
        if state.get("spec") and not (saved and Path(saved).is_file()):
            saved = None
        path, sha, spec = resolve_model_file(saved, spec_name=state.get("spec") or model_store.DEFAULT_MODEL)
        if state.get("sha256") and state["sha256"] != sha:
            raise LocalLMUnavailable(
                f"the saved program used a model file with SHA-256 {state['sha256']}, but {path} has {sha}; "
                "rebuild the LM (make_local_lm) instead of loading it, or restore that file")
        return cls(path, sha, n_ctx=state.get("n_ctx"), spec=spec, max_tokens=state.get("max_tokens", 256))

    # calls
    def complete(self, request: Request) -> Response:
        """Answer one DSPy request with the embedded model (JSON-constrained when a schema is asked for)."""
        validate_request(request)
        if request.tools:
            raise UnsupportedFeatureError("the local engine does not do native tool calling (use a text adapter)")
        cfg = request.config
        messages = _chat_messages(request)
        kwargs: dict[str, Any] = {
            "temperature": 0.0 if cfg.temperature is None else float(cfg.temperature),
            "max_tokens": int(cfg.max_tokens or self.max_tokens),
            "stop": list(cfg.stop) or [],
            "seed": 0 if cfg.seed is None else int(cfg.seed),
            "repeat_penalty": 1.0,
        }
        if cfg.top_p is not None:
            kwargs["top_p"] = float(cfg.top_p)
        if cfg.top_k is not None:
            kwargs["top_k"] = int(cfg.top_k)
        fmt = _response_format(cfg.response_format)
        if fmt:
            kwargs["response_format"] = fmt
        recorder = None
        while True:
            loaded = self.load()
            with loaded.lock:
                current = _MODELS.get(self.path)
                if current is None or current.lock is not loaded.lock:
                    continue  # unloaded meanwhile (unload_all): load again
                # (reloaded meanwhile with a larger window: same lock, and `current` holds the new Llama)
                current.calls += 1
                if cfg.logprobs is not None and getattr(current.llama, "native_logprobs", False):
                    kwargs["top_logprobs"] = max(1, int(cfg.logprobs))  # the runtime returns them (xllamacpp)
                elif cfg.logprobs is not None:  # read from the logits as they are sampled (no logits_all: see module)
                    from hiera_dspy.local.logprobs import LogprobRecorder

                    recorder = LogprobRecorder(max(1, int(cfg.logprobs)), current.llama.detokenize)
                    kwargs["logits_processor"] = [recorder]
                try:
                    out = current.llama.create_chat_completion(messages=messages, **kwargs)
                except ValueError as exc:
                    if "exceed context window" in str(exc):
                        raise ContextLengthError(
                            f"{exc}. Raise the window with HIERA_LOCAL_CTX (now {current.n_ctx}) or shorten the prompt."
                        ) from exc
                    raise InvalidRequestError(str(exc)) from exc
                break
        choice = out["choices"][0]
        text = choice["message"].get("content") or ""
        usage = out.get("usage") or {}
        finish = {"stop": "stop", "length": "length"}.get(choice.get("finish_reason") or "stop", "stop")
        return Response(
            id=out.get("id") or None,
            model=request.model or self.name,
            message=Message.assistant([TextPart(text)]),
            finish_reason=finish,
            usage=Usage(input_tokens=int(usage.get("prompt_tokens", 0)),
                        output_tokens=int(usage.get("completion_tokens", 0))),
            logprobs=(recorder.token_logprobs(int(usage.get("completion_tokens", 0)) or None) if recorder
                      else openai_logprobs(choice.get("logprobs"))),
        )

    def stream(self, request: Request):
        """The complete answer as stream events (no token streaming)."""
        return response_to_events(self.complete(request))

    @property
    def name(self) -> str:
        """The model's name: file stem (or spec name) plus a SHA-256 prefix."""
        return local_model_name(self.path, self.sha256, self.spec)

    def __repr__(self) -> str:
        return f"LocalEngine({self.name!r}, path={self.path!r}, n_ctx={self.n_ctx})"


class AsyncLocalEngine:
    """Async counterpart: runs the sync engine in a worker thread (the model's lock still serialises calls)."""

    def __init__(self, sync: LocalEngine):
        self.sync = sync

    async def complete(self, request: Request) -> Response:
        """`LocalEngine.complete` in a worker thread."""
        return await asyncio.to_thread(self.sync.complete, request)

    async def stream(self, request: Request):
        """The complete answer as stream events (no token streaming)."""
        for event in response_to_events(await self.complete(request)):
            yield event

    async def aclose(self) -> None:
        """Nothing to close: the weights are shared (`unload_all`)."""
        pass

    def dump_state(self) -> dict[str, Any]:
        """The wrapped engine's state."""
        return self.sync.dump_state()

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> "AsyncLocalEngine":
        """An async engine over the engine `state` describes."""
        return cls(LocalEngine.load_state(state))


# ── building the LM ─────────────────────────────────────────────────────────────────────────────────────────────────


def local_model_name(path: str | os.PathLike, sha256: str, spec: str | None = None) -> str:
    """`local/<stem>-<sha256 prefix>`: names the exact weights a run used."""
    stem = spec or Path(path).name.removesuffix(".gguf")
    return f"local/{stem}-{sha256[:12]}"


def _check_gguf(path: Path) -> None:
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise LocalLMUnavailable(f"{path} is not a GGUF file (starts with {magic!r}); llama.cpp needs a .gguf model")


def resolve_model_file(path: str | os.PathLike | None, *, spec_name: str = model_store.DEFAULT_MODEL
                       ) -> tuple[Path, str, str | None]:
    """(file, sha256, spec name or None). None -> the registered spec (acquired and verified); a path whose file name
    is a registered spec's file name -> verified against that spec; any other path -> hashed once (stamp) and used."""
    if path is None:
        spec = model_store.get_spec(spec_name)
        return model_store.ensure_model(spec.name), spec.sha256, spec.name
    file = Path(path).expanduser()
    if not file.is_file():
        raise LocalLMUnavailable(f"local model file {file} does not exist")
    for spec in model_store.MODELS.values():
        if file.name == spec.filename:
            return model_store.ensure_model(spec.name, path=file), spec.sha256, spec.name
    _check_gguf(file)
    return file, model_store.identify_file(file), None


def make_local_lm(path: str | None, max_tokens: int = 256, *, n_ctx: int | None = None,
                  spec_name: str = model_store.DEFAULT_MODEL, cache: bool = True, load: bool = False) -> dspy.LM:
    """A dspy.LM running `path` (or the registered default model when None) in this process via llama.cpp.

    The weights load on the first call (or now with `load=True`); all LMs on the same file share one loaded model.
    """
    _runtime()
    file, sha, spec = resolve_model_file(path, spec_name=spec_name)
    engine = LocalEngine(str(file.resolve()), sha, n_ctx=n_ctx, spec=spec, max_tokens=max_tokens)
    if load:
        engine.load()
    return dspy.LM(engine.name, engine=engine, async_engine=AsyncLocalEngine(engine), temperature=0.0,
                   max_tokens=max_tokens, cache=cache)
