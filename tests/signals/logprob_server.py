"""A loopback OpenAI-compatible chat server that answers a label with token log-probabilities (tests only).

`answer(prompt) -> (label, {label: probability})` decides; the reply is ChatAdapter text (or a JSON object when the
request asks for JSON), split into tokens the way a BPE tokenizer would cut it, with `top_logprobs` at the label's
first token spread over the labels' first pieces. Every request body is kept in `server.requests`.
"""

from __future__ import annotations

import math
from typing import Callable

from tests.loopback import LoopbackServer, chat_completion


def _tokens(prefix: str, label: str, suffix: str) -> list[str]:
    head = [prefix[i:i + 4] for i in range(0, len(prefix), 4)]
    return [*head, label[:2], label[2:], suffix] if len(label) > 2 else [*head, label, suffix]


class LogprobServer(LoopbackServer):
    """Answers a label with token log-probabilities, on a loopback port."""

    def __init__(self, answer: Callable[[str], tuple[str, dict[str, float]]], with_logprobs: bool = True):
        self.answer, self.with_logprobs = answer, with_logprobs
        super().__init__()

    def respond(self, body: dict) -> dict:
        """The chat completion for one request."""
        prompt = "\n".join(str(m.get("content")) for m in body.get("messages", []))
        label, dist = self.answer(prompt)
        wants_json = bool(body.get("response_format")) or "JSON object" in prompt
        prefix, suffix = ('{"label": "', '"}') if wants_json else ("[[ ## label ## ]]\n",
                                                                  "\n\n[[ ## completed ## ]]")
        tokens = _tokens(prefix, label, suffix)
        message = {"role": "assistant", "content": "".join(tokens)}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        if body.get("logprobs") and self.with_logprobs:
            first = len(tokens) - (3 if len(label) > 2 else 2)
            content = []
            for i, token in enumerate(tokens):
                top = [{"token": token, "logprob": 0.0, "bytes": None}]
                if i == first:
                    top = [{"token": other[:2] if len(other) > 2 else other, "logprob": math.log(p),
                            "bytes": None} for other, p in dist.items() if p > 0]
                    top.append({"token": "Maybe", "logprob": math.log(0.01), "bytes": None})
                lp = math.log(dist.get(label, 1.0)) if i == first else 0.0
                content.append({"token": token, "logprob": lp, "bytes": None, "top_logprobs": top})
            choice["logprobs"] = {"content": content}
        return chat_completion(body.get("model"), choice, len(tokens))
