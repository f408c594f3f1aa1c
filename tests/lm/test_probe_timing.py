"""The prefix timing bench.probe_timing runs, with a fake model (the real one only under the model lock): the shared
prefix reads fewer tokens than reading every prompt alone, and the first pair of a query is told apart from its
further pairs."""

from __future__ import annotations

import numpy as np

from hiera_dspy.lm.prefix_timing import time_prompts
from hiera_dspy.local.prefix_reuse import PrefixReuse


class FakeEmbedder:
    """Characters are tokens; one KV sequence as a list."""

    def __init__(self):
        self.cells: list[int] = []
        self.reuse = PrefixReuse(self._decode, self._truncate)

    def tokens(self, prompt: str) -> list[int]:
        return [ord(c) for c in prompt]

    def _truncate(self, keep: int) -> None:
        del self.cells[keep:]

    def _decode(self, tokens: list[int], start: int) -> np.ndarray:
        assert start == len(self.cells)
        self.cells.extend(tokens)
        return np.array([float(len(self.cells))])


def test_shared_reads_fewer_tokens_and_splits_first_and_further_pairs():
    prompts = [f"system query {q} item {i} end" for q in ("a", "b") for i in range(3)]
    queries = [p.split()[2] for p in prompts]
    embedder = FakeEmbedder()
    alone = time_prompts(embedder, prompts, queries, share=False)
    shared = time_prompts(embedder, prompts, queries, share=True)
    length = len(prompts[0])
    assert alone["tokens_read_per_pair"] == alone["prompt_tokens_per_pair"] == length
    # the first prompt whole; each other one from " item"'s digit on (same query) or from the query letter on
    assert shared["tokens_read_per_pair"] == (length + 4 * len("0 end") + len("b item 0 end")) / 6
    assert shared["pairs"] == 6 and shared["queries"] == 2 and shared["s_further_pair_of_query"] is not None
    assert embedder.reuse.share is True and embedder.cells == [ord(c) for c in sorted(prompts)[-1]]
