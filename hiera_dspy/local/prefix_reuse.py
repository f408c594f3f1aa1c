"""Shared prompt prefixes for the probe's hidden states (issue 21 part 5: the cost of a new pair).

llama.cpp keeps the KV cache of the tokens it has read. Every probe prompt starts the same way (the chat template,
the system line, "Search query: "), and the prompts of one query share everything up to the item: a prompt that starts
like the one read before it needs only its new tokens read. `PrefixReuse` drives one llama.cpp sequence that way:

- `last_state(tokens)`: keep the KV cells of the longest common token prefix with the tokens read last (at least one
  token is always read: the hidden state is the last token's), drop the rest (`truncate(keep)`), read the new tokens
  at positions `keep...` (`decode(new_tokens, keep)` -> the last token's final hidden state);
- `many(token_lists)`: every prompt, in sorted token order (the prompts of one query are neighbours; so are prompts
  that differ late), the vectors returned in the caller's order.

The prefix is computed on the tokens of each whole prompt, so the model reads exactly the tokens it would read for
the prompt alone: the vector is the same prompt's hidden state (floating-point rounding aside: a prefix read in a
separate batch takes other matrix-kernel paths; cosine > 0.999 measured, `bench/probe_timing.py`).
`share=False` reads every prompt from position 0 (the cost without sharing). `fed` counts the tokens read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hiera_dspy.errors import HieraError

Decode = Callable[[list[int], int], np.ndarray]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PrefixReuse:
    """One llama.cpp sequence whose KV cache holds the tokens read last (see the module doc)."""

    def __init__(self, decode: Decode, truncate: Callable[[int], None], share: bool = True):
        self.decode, self.truncate, self.share = decode, truncate, bool(share)
        self.held: list[int] = []
        self.fed = 0

    def last_state(self, tokens: Sequence[int]) -> np.ndarray:
        """The last token's hidden state after reading `tokens` (only the part not already in the KV cache)."""
        tokens = list(tokens)
        if not tokens:
            raise HieraError("a prompt of no tokens has no hidden state")
        keep = min(common_prefix(self.held, tokens) if self.share else 0, len(tokens) - 1)
        try:
            self.truncate(keep)
            vec = self.decode(tokens[keep:], keep)
        except BaseException:
            self.held = []  # what the KV cache holds is unknown now: the next prompt starts afresh
            self.truncate(0)
            raise
        self.held = tokens
        self.fed += len(tokens) - keep
        return vec

    def many(self, token_lists: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """The hidden state of every token list, read in sorted order (neighbours share prefixes), in input order."""
        out: list[np.ndarray | None] = [None] * len(token_lists)
        for i in sorted(range(len(token_lists)), key=lambda j: list(token_lists[j])):
            out[i] = self.last_state(token_lists[i])
        return out  # type: ignore[return-value]
