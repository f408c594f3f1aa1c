"""A fake LM that answers any DSPy Signature, for tests, demos and throughput benchmarks (no model, no network).

It reads the output fields from ChatAdapter's system message and fills each one: scripted values or callables from
`answers`, else a default by type (first Literal option, True, one-element list, short text). Token usage is counted
as words so accounting is exercised.

Example:
    >>> lm = fake_lm({"label": lambda prompt: "Relevant" if "spy" in prompt else "Irrelevant"})
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

FIELD_LINE = re.compile(r"^\d+\. `(\w+)` \((.+?)\):", re.M)
Answer = Any | Callable[[str], Any]


class FakeEngine:
    """Canonical dspy engine: complete(Request) -> Response."""

    def __init__(self, answers: dict[str, Answer] | None = None, latency: float = 0.0):
        self.answers = answers or {}
        self.latency = latency
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request):
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or [])
        user = "\n".join(m.text or "" for m in request.messages)
        outputs = system.split("Your output fields are:", 1)[-1].split("All interactions", 1)[0]
        # Answer for the last user turn (demos come earlier in the conversation).
        last_user = request.messages[-1].text or ""
        body = "\n\n".join(f"[[ ## {name} ## ]]\n{self._value(name, type_, last_user)}"
                           for name, type_ in FIELD_LINE.findall(outputs))
        with self._lock:
            self.calls += 1
        if self.latency:
            time.sleep(self.latency)
        text = body + "\n\n[[ ## completed ## ]]"
        n_in, n_out = len((system + user).split()), len(text.split())
        return Response(id=None, model="fake", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out))

    def _value(self, name: str, type_: str, prompt: str) -> str:
        if name in self.answers:
            answer = self.answers[name]
            value = answer(prompt) if callable(answer) else answer
            return str(value) if not isinstance(value, (list, dict)) else _json(value)
        if type_.startswith("Literal["):
            return re.findall(r"'([^']*)'", type_)[0]
        if type_ == "bool":
            return "True"
        if type_.startswith("dict"):
            return "{}"
        if type_.startswith("list"):
            return '["fake lookup"]'
        if type_ in ("int", "float"):
            return "1"
        return f"fake {name.replace('_', ' ')}"

    def stream(self, request):
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self):
        pass


class AsyncFakeEngine:
    def __init__(self, sync: FakeEngine):
        self.sync = sync

    async def complete(self, request):
        return self.sync.complete(request)

    async def aclose(self):
        pass


def _json(value) -> str:
    import json

    return json.dumps(value)


def fake_lm(answers: dict[str, Answer] | None = None, latency: float = 0.0, name: str = "fake/judge") -> dspy.LM:
    """A dspy.LM backed by FakeEngine, uncached so every call reaches the engine."""
    engine = FakeEngine(answers, latency)
    return dspy.LM(name, engine=engine, async_engine=AsyncFakeEngine(engine), cache=False)
