"""The shared prompt prefix of the probe's hidden states (`hiera_dspy.local.prefix_reuse`), with a fake model whose
"hidden state" is a function of every token it holds: reusing a prefix must give exactly the vector of reading the
whole prompt, read fewer tokens, and survive a failed read."""

import numpy as np
import pytest

from hiera_dspy.local.prefix_reuse import PrefixReuse, common_prefix


class FakeSequence:
    """One KV sequence: `truncate` drops positions >= keep, `decode` appends at `start` (which must be its length)."""

    def __init__(self, fail_on: int | None = None):
        self.cells: list[int] = []
        self.reads: list[int] = []
        self.fail_on = fail_on

    def truncate(self, keep: int) -> None:
        del self.cells[keep:]

    def decode(self, tokens: list[int], start: int) -> np.ndarray:
        assert start == len(self.cells), "a read must continue exactly where the kept cells end"
        if self.fail_on in tokens:
            self.cells.extend(tokens[:1])  # a half-done read leaves cells behind
            raise RuntimeError("decode failed")
        self.cells.extend(tokens)
        self.reads.append(len(tokens))
        held = np.array(self.cells, dtype=float)
        return np.array([len(held), float(held @ np.arange(1, len(held) + 1))])  # depends on every token and position


PROMPTS = [[1, 2, 3, 9, 4], [1, 2, 3, 9, 5, 6], [1, 2, 7, 8], [1, 2, 3, 9, 4, 4], [3]]


def alone(tokens):
    return FakeSequence().decode(list(tokens), 0)


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([5], [6]) == 0


def test_shared_prefix_gives_each_prompts_own_vector_and_reads_fewer_tokens():
    seq = FakeSequence()
    reuse = PrefixReuse(seq.decode, seq.truncate)
    out = reuse.many(PROMPTS)
    for tokens, vec in zip(PROMPTS, out):  # the caller's order, each the vector of the prompt read alone
        assert vec.tolist() == alone(tokens).tolist()
    total = sum(len(p) for p in PROMPTS)
    # sorted: [1,2,3,9,4] 5, [1,2,3,9,4,4] 1, [1,2,3,9,5,6] 2, [1,2,7,8] 2, [3] 1
    assert reuse.fed == 11 < total and sum(seq.reads) == 11


def test_identical_prompt_still_reads_its_last_token():
    seq = FakeSequence()
    reuse = PrefixReuse(seq.decode, seq.truncate)
    first = reuse.last_state([4, 5, 6])
    again = reuse.last_state([4, 5, 6])
    assert again.tolist() == first.tolist() and seq.reads == [3, 1]


def test_without_sharing_every_prompt_is_read_whole():
    seq = FakeSequence()
    reuse = PrefixReuse(seq.decode, seq.truncate, share=False)
    out = reuse.many(PROMPTS)
    assert [v.tolist() for v in out] == [alone(p).tolist() for p in PROMPTS]
    assert reuse.fed == sum(len(p) for p in PROMPTS)


def test_a_failed_read_starts_the_next_prompt_afresh():
    seq = FakeSequence(fail_on=99)
    reuse = PrefixReuse(seq.decode, seq.truncate)
    reuse.last_state([1, 2, 3])
    with pytest.raises(RuntimeError):
        reuse.last_state([1, 2, 99])
    assert reuse.held == [] and seq.cells == []
    assert reuse.last_state([1, 2, 4]).tolist() == alone([1, 2, 4]).tolist()
    with pytest.raises(ValueError):
        reuse.last_state([])
