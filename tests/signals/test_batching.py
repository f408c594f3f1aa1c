"""Length-sorted and length-bucketed batches, the token budget, and bf16 decided by the CPU's flags."""

from __future__ import annotations

import contextlib

import pytest

from hiera_dspy.signals import cpu
from hiera_dspy.signals.batching import length_bucketed_batches, length_sorted_batches, token_budget


def test_sorted_batches_cover_every_index_once_shortest_first():
    lengths = [9, 3, 7, 3, 1, 12, 5]
    batches = length_sorted_batches(lengths, 3)
    flat = [int(i) for b in batches for i in b]
    assert sorted(flat) == list(range(7)) and [lengths[i] for i in flat] == sorted(lengths)
    assert [len(b) for b in batches] == [3, 3, 1]
    with pytest.raises(ValueError):
        length_sorted_batches(lengths, 0)


def test_bucketed_batches_pad_less_than_random_ones_and_keep_every_full_batch():
    import random

    rng = random.Random(1)
    lengths = [rng.randint(10, 128) for _ in range(640)]
    items = list(range(640))
    bucketed = length_bucketed_batches(items, lengths, 32, seed=3, window=10)
    assert len(bucketed) == 20 and sorted(i for b in bucketed for i in b) == items
    plain = [items[i:i + 32] for i in range(0, 640, 32)]
    saving = token_budget([[lengths[i] for i in b] for b in bucketed])
    before = token_budget([[lengths[i] for i in b] for b in plain])
    assert saving["real"] == before["real"] and saving["efficiency"] > before["efficiency"] + 0.2
    assert length_bucketed_batches(items, lengths, 32, seed=3, window=10) == bucketed  # seeded
    assert len(length_bucketed_batches(items[:70], lengths[:70], 32)) == 2  # the short last batch is dropped
    with pytest.raises(ValueError, match="70 items but 69"):
        length_bucketed_batches(items[:70], lengths[:69], 32)


def test_bf16_only_where_the_cpu_has_it(monkeypatch):
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert not cpu.has_bf16() and isinstance(cpu.training_autocast(), contextlib.nullcontext)
    assert cpu.speed_flags() == "avx2 fma"
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx2", "avx512f", "avx512_bf16"}))
    assert cpu.has_bf16()
    pytest.importorskip("torch")
    assert not isinstance(cpu.training_autocast(), contextlib.nullcontext)
