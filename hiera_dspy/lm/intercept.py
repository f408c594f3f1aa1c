"""Answer a program's LM requests without sending them: swap the engine inside every role LM for a while.

`dspy.LM` hands each request, already formatted by the real adapter (ChatAdapter / JSONAdapter, demos, instructions),
to its engine as a canonical `dspy.lm15.Request`; whatever `Response` the engine returns is parsed by the same
adapter. Swapping the engine (not the LM object) reaches every LM a program holds, including LMs a method captured
at build time (ensemble pools), so `--dry-run` can render prompts with nothing sent and `--engine batch` can answer
from batch results. DSPy's response cache is off while swapped (a cache hit would bypass the engine).

This touches two private attributes of `dspy.LM` (`_engine_spec`, `_async_engine_spec`; dspy 3.4, pinned < 3.5).
"""

from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:  # annotations only: the breaker reads LMs through this module without loading DSPy
    import dspy

from hiera_dspy.errors import RequestError


def lm_objects(lms) -> list[dspy.LM]:
    """Every distinct LM of a RoleLMs (roles and the ensemble pool, built now if pending) or of a mapping of LMs."""
    if hasattr(lms, "every"):
        return lms.every()
    seen: dict[int, dspy.LM] = {}
    for lm in (lms or {}).values():
        if lm is not None:
            seen.setdefault(id(lm), lm)
    return list(seen.values())


@contextmanager
def swapped_engines(lms, make_engine: Callable[[dspy.LM], object]) -> Iterator[dict[int, object]]:
    """Within the block every LM of `lms` sends its requests to `make_engine(lm)` (sync `complete(request)`; the
    async path is served by the same object), uncached. Yields id(lm) -> engine. Restores everything after."""
    saved, engines = [], {}
    for lm in lm_objects(lms):
        if not hasattr(lm, "_engine_spec"):
            raise RequestError(f"{type(lm).__name__} is not a dspy.LM with an engine: its requests cannot be "
                               "intercepted (a batch engine, a cost estimate); use the threads or aio engine")
        engine = make_engine(lm)
        engines[id(lm)] = engine
        saved.append((lm, lm._engine_spec, lm._async_engine_spec, lm.cache))
        lm._engine_spec, lm._async_engine_spec, lm.cache = engine, _Async(engine), False
    try:
        yield engines
    finally:
        for lm, engine, async_engine, cache in saved:
            lm._engine_spec, lm._async_engine_spec, lm.cache = engine, async_engine, cache


class _Async:
    def __init__(self, sync):
        self.sync = sync

    async def complete(self, request):
        return self.sync.complete(request)

    async def aclose(self):
        pass


def wire_model(model: str) -> str:
    """The model name an OpenAI-compatible endpoint receives (`openai/gpt-4o-mini` -> `gpt-4o-mini`)."""
    return model.split("/", 1)[1] if model.startswith("openai/") else model


def openai_chat_body(request) -> dict:
    """The exact JSON body DSPy's native engine POSTs to /v1/chat/completions for this request (same lm15 code)."""
    from dspy._vendor.lm15.providers.openai_chat import OpenAIChatLM

    wire = dataclasses.replace(request, model=wire_model(request.model))
    return json.loads(OpenAIChatLM(api_key="unused", base_url="http://unused/v1").build_request(wire, False).body)


def openai_chat_response(body: dict, model: str):
    """A chat-completion JSON body as the lm15 `Response` the native engine would have returned."""
    from dspy._vendor.lm15.providers.openai_chat import response_from_openai_chat

    return response_from_openai_chat(body, model=model)
