"""A program that scores in batches (`prefetch`: the learned judges) gets each window of pairs before they are judged,
on the screened inputs it will judge; a failing batch loses nothing (each pair is then judged on its own)."""

from __future__ import annotations

import dspy

from hiera_dspy.records import Pair
from hiera_dspy.runs import runner
from hiera_dspy.store.run_store import RunStore


def pairs_of(n: int) -> list[Pair]:
    return [Pair(f"p{i}", f"query {i % 7}", f"title {i}", f"text {i}", None, f"q{i % 7}", f"d{i}") for i in range(n)]


class Batched(dspy.Module):
    """Scores only what `prefetch` saw when `fail` is False; counts the batches and the pairs scored one by one."""

    def __init__(self, fail: bool = False):
        super().__init__()
        self.fail, self.batches, self.single = fail, [], 0
        self.cache: dict = {}

    def prefetch(self, pairs):
        if self.fail:
            raise RuntimeError("the batch kernel broke")
        self.batches.append(len(pairs))
        self.cache = {(p.query, p.item_title, p.item_text): "Good" for p in pairs}

    def forward(self, query, item_title, item_text):
        label = self.cache.get((query, item_title, item_text))
        if label is None:
            self.single += 1
            label = "Bad"
        return dspy.Prediction(label=label)


def test_windows_are_prefetched_before_judging(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "PREFETCH", 40)
    program = Batched()
    rows = runner.run_pairs(program, pairs_of(100), RunStore(tmp_path / "s.sqlite"), "r", threads=3, progress=False)
    assert program.batches == [40, 40, 20]
    assert program.single == 0  # every pair read the batch's score: none scored alone
    assert sorted(r.label for r in rows) == ["Good"] * 100


def test_a_failing_batch_judges_each_pair_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "PREFETCH", 40)
    program = Batched(fail=True)
    rows = runner.run_pairs(program, pairs_of(50), RunStore(tmp_path / "s.sqlite"), "r", threads=2, progress=False)
    assert len(rows) == 50 and program.single == 50 and all(r.error is None for r in rows)
    assert "batch scoring of 40 pairs failed (RuntimeError: the batch kernel broke)" in capsys.readouterr().err
