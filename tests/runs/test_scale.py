"""A million pairs in bounded memory (issue 23): exports linear in the rows, pairs read a window at a time, a bounded
number in flight, resume by window queries, every pair exactly once after interruptions, metrics from counts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import dspy
import numpy as np
import pytest

from hiera_dspy.data import DataError, jsonl
from hiera_dspy.engines import EngineOptions, Job, judge
from hiera_dspy.labels import custom_scheme
from hiera_dspy.metrics.classification import run_metrics
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.review.exports import records_of
from hiera_dspy.review.run import export
from hiera_dspy.runs import runner
from hiera_dspy.runs.tally import Tally
from hiera_dspy.store.idset import IdSet
from hiera_dspy.store.pairs_file import write_pairs_file
from hiera_dspy.store.run_settings import read_settings
from hiera_dspy.store.run_store import RunStore

ROOT = Path(__file__).resolve().parents[2]

SCHEME = custom_scheme("Bad,Good")


def pairs_of(n: int, start: int = 0) -> list[Pair]:
    return [Pair(f"p{i}", f"query {i % 7}", f"title {i}", f"text {i}", None, f"q{i % 7}", f"d{i}")
            for i in range(start, start + n)]


def labelling_store(tmp_path, n: int, run_id: str = "r") -> RunStore:
    """A finished eval.label run of n pairs, written straight into a store (no LM)."""
    out = tmp_path / f"out-{n}"
    pairs = pairs_of(n)
    write_pairs_file(out / "pairs.jsonl", pairs)
    store = RunStore(tmp_path / f"store-{n}.sqlite")
    store.start_run(run_id, {"method": "zero-shot", "labelling": {"kind": "label", "out": str(out),
                                                                  "scheme": SCHEME.to_dict()}})
    store.record_many(run_id, [Judgment(id=p.id, label="Good" if i % 3 else None, position=i, escalated=not i % 3,
                                        fields={"reasoning": "because " * 20}, seconds=0.1)
                               for i, p in enumerate(pairs)])
    return store


def test_export_is_linear_in_the_rows(tmp_path):
    seconds = {}
    for n in (500, 5_000):
        store = labelling_store(tmp_path, n)
        start = time.perf_counter()
        export(store, "r")
        seconds[n] = time.perf_counter() - start
        lines = (tmp_path / f"out-{n}" / "labels.jsonl").read_text().splitlines()
        assert len(lines) == n and json.loads(lines[-1])["id"] == f"p{n - 1}"
    assert seconds[5_000] < 15 * seconds[500], seconds  # linear: ~10x; quadratic: ~100x


def test_records_match_pairs_whose_position_moved(tmp_path):
    store = labelling_store(tmp_path, 50)
    store.record("r", Judgment(id="p7", label="Bad", position=40))  # the split changed: p7 is now elsewhere
    store.record("r", Judgment(id="gone", label="Bad", position=3))  # a pair no longer in the split
    records = list(records_of(store, read_settings(store, "r")))
    assert sorted(r["id"] for r in records) == sorted(f"p{i}" for i in range(50))
    assert next(r for r in records if r["id"] == "p7")["label"] == "Bad"


def test_finished_among_answers_per_window(tmp_path):
    store = labelling_store(tmp_path, 1_200)
    store.record("r", Judgment(id="p5", error="boom", position=5))
    ids = [f"p{i}" for i in range(1_100, 1_300)]
    assert store.finished_among("r", ids) == {f"p{i}" for i in range(1_100, 1_200)}
    assert "p5" not in store.finished_among("r", ["p5", "p6"], include_errors=False)


class CountingPairs:
    """A re-iterable split that notes how far ahead of the judging the engine has read."""

    def __init__(self, pairs):
        self.pairs, self.read, self.judged, self.ahead = pairs, 0, 0, 0

    def __iter__(self):
        self.read = 0
        for p in self.pairs:
            self.read += 1
            yield p


class Noting(dspy.Module):
    def __init__(self, split: CountingPairs, fail_at: set[str] = frozenset()):
        super().__init__()
        self.split, self.fail_at = split, fail_at

    def forward(self, query, item_title, item_text):
        if item_title in self.fail_at:
            raise KeyboardInterrupt  # a kill at this pair: the run stops here
        self.split.judged += 1
        self.split.ahead = max(self.split.ahead, self.split.read - self.split.judged)
        return dspy.Prediction(label="Good" if len(item_title) % 2 else "Bad")


def test_threads_read_a_bounded_window_ahead(tmp_path):
    split = CountingPairs(pairs_of(5_000))
    store = RunStore(tmp_path / "s.sqlite")
    rows = judge("threads", Job(Noting(split), split, store, "w", progress=False, options=EngineOptions(threads=4)))
    assert len(rows) == 5_000 and split.ahead <= runner.WINDOW + 4 * runner.IN_FLIGHT


@pytest.mark.parametrize("engine", ["threads", "async"])
def test_interrupted_anywhere_every_pair_exactly_once(tmp_path, engine):
    pairs = pairs_of(600)
    store = RunStore(tmp_path / "s.sqlite")
    rng = random.Random(3)
    stops = sorted(rng.sample(range(600), 5))
    for stop in stops:
        split = CountingPairs(pairs)
        job = Job(Noting(split, {f"title {stop}"}), split, store, "k", progress=False,
                  options=EngineOptions(threads=3, concurrency=3))
        with pytest.raises(KeyboardInterrupt):
            judge(engine, job)
    rows = judge(engine, Job(Noting(CountingPairs(pairs)), pairs, store, "k", progress=False,
                             options=EngineOptions(threads=3, concurrency=3)))
    ids = [r.id for r in rows]
    assert ids == [p.id for p in pairs] and store.count("k") == 600
    assert all(r.label for r in rows)


def test_tally_equals_run_metrics():
    rng = random.Random(1)
    rows = [Judgment(id=f"p{i}", gold=rng.choice(["Bad", "Good", None]),
                     label=rng.choice(["Bad", "Good", None]), error=None if i % 9 else "boom",
                     seconds=rng.random(), tokens=rng.randrange(100), lm_calls=1 + i % 3,
                     tokens_by_role={"judge": 10, **({"relation": 5} if i % 2 else {})},
                     delegated=bool(i % 2) if i % 5 else None, escalated=i % 7 == 0,
                     human_label="Good" if i % 11 == 0 else None,
                     fields={"degraded": ["plan"]} if i % 13 == 0 else {}) for i in range(400)]
    assert Tally(["Bad", "Good"]).add_all(rows).metrics() == run_metrics(rows, ["Bad", "Good"])


def test_idset():
    ids = IdSet(f"p{i}" for i in range(70_000))  # past one buffer merge
    assert len(ids) == 70_000 and "p69999" in ids and "p3" in ids and "q1" not in ids
    assert not ids.add("p5") and ids.add("new")


def test_idset_equals_a_set_across_merges(monkeypatch):
    monkeypatch.setattr("hiera_dspy.store.idset.BUFFER", 97)  # many in-place merges of a small set
    rng = random.Random(5)
    added = [f"x{rng.randrange(3000)}" for _ in range(2500)]  # repeats, in random order
    ids, truth = IdSet(), set()
    for pair_id in added:
        assert ids.add(pair_id) == (pair_id not in truth)
        truth.add(pair_id)
    assert len(ids) == len(truth)
    assert all(f"x{i}" in ids for i in range(3000) if f"x{i}" in truth)
    assert not any(f"x{i}" in ids for i in range(3000) if f"x{i}" not in truth)
    assert (np.diff(ids._data[:ids._n].astype(np.float64)) > 0).all()  # sorted, no duplicates


def test_idset_memory():
    """A million ids in about 8 MB: RSS of a fresh process grows < 24 MB for 600k ids (np.union1d merges: ~35 MB)."""
    code = ("from hiera_dspy.store.idset import IdSet\n"
            "def rss():\n"
            "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')) // 1024\n"
            "before = rss(); ids = IdSet()\n"
            "for i in range(600_000): ids.add(f'p{i}')\n"
            "print(rss() - before)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) < 24, f"600k ids took {out.stdout.strip()} MB"


def test_large_jsonl_is_read_lazily_with_the_same_checks(tmp_path, monkeypatch):
    rows = [{"id": f"p{i}", "query": "spy", "item_title": f"T{i}", "item_text": "x"} for i in range(5)]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(jsonl, "EAGER_BYTES", 0)
    split = jsonl.load(str(path), SCHEME).split()
    assert isinstance(split, jsonl.JsonlPairs)
    assert list(split) == jsonl.read_pairs(path, SCHEME, require_label=False)
    assert [p.id for p in split[:2]] == ["p0", "p1"]
    path.write_text(path.read_text() + json.dumps(rows[1]) + "\n" + "not json\n")
    with pytest.raises(DataError, match=r'line 6: field "id": duplicate id "p1" \(first on line 2\)'):
        list(jsonl.load(str(path), SCHEME).split())
    skipping = jsonl.load(str(path), SCHEME, on_bad_row="skip")
    assert len(list(skipping.split())) == 5 and [r["line"] for r in skipping.notes["skipped_rows"]] == [6, 7]
