"""Token log-probabilities for the in-process llama.cpp engine, without `logits_all`.

llama-cpp-python returns logprobs only for a model built with `logits_all=True`, which keeps n_ctx x vocabulary
floats (4096 x 151,936 x 4 bytes = 2.5 GB for the embedded model). Instead a logits processor sees each decoding
step's full logits (before the grammar and the sampler act), keeps the top-k log-probabilities and, one step later,
the chosen token's; `LogprobRecorder.token_logprobs()` gives them in the OpenAI shape DSPy's engines return
(`dspy.lm15.TokenLogprob` with `top` alternatives), so `hiera_dspy.methods.label_probs` reads local and served models alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from dspy.lm15 import TokenLogprob, TopLogprob


@dataclass
class _Step:
    top_ids: list[int]
    top_logprobs: list[float]
    chosen: int | None = None
    chosen_logprob: float | None = None


@dataclass
class LogprobRecorder:
    """A llama-cpp-python logits processor `(input_ids, logits) -> logits` that records, never changes, the logits."""

    k: int
    detokenize: object  # Llama.detokenize: list[int] -> bytes
    steps: list[_Step] = field(default_factory=list)
    _last: np.ndarray | None = None  # the previous step's log-probabilities (to score the token it chose)

    def __call__(self, input_ids, logits):
        """llama.cpp's logits processor hook: record the step's log-probabilities, return the logits unchanged."""
        if self.steps and self._last is not None:  # the token chosen at the previous step is now the last input
            chosen = int(input_ids[-1])
            self.steps[-1].chosen, self.steps[-1].chosen_logprob = chosen, float(self._last[chosen])
        x = np.asarray(logits, dtype=np.float64)
        top = float(x.max())
        logp = x - (top + float(np.log(np.exp(x - top).sum())))
        k = max(1, min(self.k, logp.size))
        ids = np.argpartition(-logp, k - 1)[:k]
        ids = ids[np.argsort(-logp[ids])]
        self.steps.append(_Step([int(i) for i in ids], [float(logp[i]) for i in ids]))
        self._last = logp
        return logits

    def _text(self, token_id: int) -> str:
        return self.detokenize([token_id]).decode("utf-8", errors="replace")

    def token_logprobs(self, n_tokens: int | None = None) -> tuple[TokenLogprob, ...]:
        """One TokenLogprob per generated token (the last `n_tokens` steps at most: the completion's length)."""
        steps = self.steps[:n_tokens] if n_tokens is not None else self.steps
        out = []
        for step in steps:
            chosen = step.chosen if step.chosen is not None else step.top_ids[0]
            chosen_lp = step.chosen_logprob if step.chosen_logprob is not None else step.top_logprobs[0]
            top = tuple(TopLogprob(token=self._text(i), logprob=lp) for i, lp in zip(step.top_ids, step.top_logprobs))
            out.append(TokenLogprob(token=self._text(chosen), logprob=chosen_lp, token_id=chosen, top=top))
        return tuple(out)


def openai_logprobs(block: dict | None) -> tuple[TokenLogprob, ...] | None:
    """An OpenAI `choices[0].logprobs` block (what llama.cpp's server returns: xllamacpp) as TokenLogprobs."""
    if not block or not block.get("content"):
        return None
    return tuple(TokenLogprob(token=t.get("token", ""), logprob=float(t.get("logprob", 0.0)), token_id=t.get("id"),
                              top=tuple(TopLogprob(token=a.get("token", ""), logprob=float(a.get("logprob", 0.0)))
                                        for a in t.get("top_logprobs") or ()))
                 for t in block["content"])
