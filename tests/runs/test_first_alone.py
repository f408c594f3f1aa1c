"""The first judgment of a run (thread engine, async engine) or of a served judge runs alone, before any other: what
its path imports on first use (DSPy's adapters, the LM client, a model's lazy modules) is imported by one thread, never
by two at once."""

from __future__ import annotations

import asyncio
import threading
import time

import dspy

from hiera_dspy.records import Pair
from hiera_dspy.runs import runner
from hiera_dspy.store.run_store import RunStore


def pairs_of(n: int) -> list[Pair]:
    return [Pair(f"p{i}", f"query {i % 3}", f"title {i}", f"text {i}", None, f"q{i % 3}", f"d{i}") for i in range(n)]


class Watched(dspy.Module):
    """Records, per judgment, its thread and how many judgments were running with it when it started; `beside_first`
    counts the judgments that started while the first one ran."""

    def __init__(self):
        super().__init__()
        self.seen: list[tuple[str, int]] = []
        self.running, self.beside_first, self.first_running = 0, 0, False
        self._lock = threading.Lock()

    def forward(self, query, item_title, item_text):
        with self._lock:
            first = not self.seen
            self.beside_first += self.first_running
            self.first_running = self.first_running or first
            self.running += 1
            self.seen.append((threading.current_thread().name, self.running))
        time.sleep(0.05)
        with self._lock:
            self.running -= 1
            self.first_running = self.first_running and not first
        return dspy.Prediction(label="Good")


def test_the_thread_engine_judges_its_first_pair_on_the_calling_thread(tmp_path):
    program = Watched()
    rows = runner.run_pairs(program, pairs_of(12), RunStore(tmp_path / "s.sqlite"), "r", threads=4, progress=False)
    assert len(rows) == 12
    assert program.seen[0] == (threading.current_thread().name, 1) and program.beside_first == 0
    assert all(name != threading.current_thread().name for name, _ in program.seen[1:])
    assert max(n for _, n in program.seen) > 1  # the others still run side by side


def test_the_async_engine_judges_its_first_pair_alone(tmp_path):
    from hiera_dspy.engines import EngineOptions, Job
    from hiera_dspy.engines.aio import judge_all

    program = Watched()
    job = Job(program, pairs_of(12), RunStore(tmp_path / "s.sqlite"), "r", progress=False,
              options=EngineOptions(concurrency=4))
    asyncio.run(judge_all(job, list(enumerate(job.pairs)), runner.Progress(12, 0, False)))
    assert len(program.seen) == 12 and program.seen[0] == (threading.current_thread().name, 1)
    assert program.beside_first == 0
    assert max(n for _, n in program.seen) > 1


def test_a_served_judge_judges_its_first_call_alone(tmp_path):
    from hiera_dspy.jobs.serving import PairRequest, ServedJudge
    from hiera_dspy.labels import get_scheme

    program = Watched()
    served = ServedJudge(program, tmp_path / "j.json", "watched", get_scheme("msrd"))
    calls = [threading.Thread(target=served.judge, args=([PairRequest(query="q", item_title="t", item_text="x")],))
             for _ in range(6)]
    for call in calls:
        call.start()
    for call in calls:
        call.join()
    assert len(program.seen) == 6 and program.beside_first == 0
    assert max(n for _, n in program.seen) > 1  # the calls after it still run side by side
