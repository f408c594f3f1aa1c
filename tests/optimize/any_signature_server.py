"""A loopback OpenAI-compatible chat server that answers any DSPy signature the way hiera_dspy.testing's fake LM does
(ChatAdapter fields, scripted or default values), so CLIs run against a real HTTP endpoint with DSPy's cache on (tests
only). Every request body is kept in `server.requests` (and, with `log`, appended to that file
as one JSON line)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from hiera_dspy.testing import FakeEngine
from tests.loopback import LoopbackServer, chat_completion

MARK = "[[ ## label ## ]]\n"


def with_logprobs(text: str, dist: dict[str, float]) -> tuple[str, dict]:
    """The reply with its label replaced by `dist`'s most probable one, and OpenAI-style logprobs: the label's first
    two characters are one token whose alternatives are every label's first two characters."""
    head, tail = text.rsplit(MARK, 1)
    label = max(dist, key=dist.get)
    rest = tail.split("\n", 1)[1] if "\n" in tail else ""
    tokens = [head + MARK, label[:2], label[2:], "\n" + rest]
    content = [{"token": t, "logprob": 0.0, "bytes": None, "top_logprobs": []} for t in tokens]
    content[1]["logprob"] = math.log(dist[label])
    content[1]["top_logprobs"] = [{"token": other[:2], "logprob": math.log(p), "bytes": None}
                                  for other, p in dist.items() if p > 0]
    return "".join(tokens), {"content": content}


class AnySignatureServer(LoopbackServer):
    """Answers any DSPy signature like the fake LM, on a loopback port."""

    def __init__(self, answers: dict | None = None, log: str | None = None, label_probs=None):
        """`label_probs(prompt) -> {label: probability}`: answer requests asking for logprobs with them at the label's
        first token (the reply's label is then that distribution's most probable label)."""
        self.engine, self.log, self.label_probs = FakeEngine(answers), log, label_probs
        super().__init__()

    def respond(self, body: dict) -> dict:
        """The chat completion for one request."""
        if self.log:
            with open(self.log, "a") as fh:
                fh.write(json.dumps(body, sort_keys=True) + "\n")
        messages = body.get("messages", [])
        system = "".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        turns = [SimpleNamespace(text=str(m.get("content"))) for m in messages if m.get("role") != "system"]
        reply = self.engine.complete(SimpleNamespace(system=system, messages=turns))
        text = "".join(part.text for part in reply.message.parts)
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        if body.get("logprobs") and self.label_probs and MARK in text:
            dist = self.label_probs("\n".join(str(m.get("content")) for m in messages))
            text, choice["logprobs"] = with_logprobs(text, dist)
            choice["message"]["content"] = text
        return chat_completion(body.get("model"), choice, 5)

