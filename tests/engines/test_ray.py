"""--engine ray: eval.run on a local Ray with 2 actors, each with its own endpoint (--api-base a,b), gives the thread
engine's rows on the fake LM; a rerun judges nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from engine_helpers import ANSWERS, assert_same_run  # noqa: E402

from hiera_dspy.engines.ray_engine import groups_by_query  # noqa: E402
from hiera_dspy.store.run_store import RunStore  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fault_server import FaultServer  # noqa: E402


def test_groups_keep_a_query_together_and_split_order():
    todo = [(i, SimpleNamespace(query=q)) for i, q in enumerate("aabacbbb")]
    groups = groups_by_query(todo, size=3)
    assert [[i for i, _ in g] for g in groups] == [[0, 1, 3], [2, 5, 6], [7], [4]]


def _argv(api_base: str, store: Path, out: Path, *extra: str) -> list[str]:
    return ["--dataset", "msrd", "--split", "dev", "--limit", "40", "--method", "hiera", "--lm", "openai/fake",
            "--api-base", api_base, "--store", str(store), "--run-id", "r", "--out", str(out), *extra]


@pytest.mark.slow
def test_ray_with_two_actors_and_two_endpoints_gives_the_thread_engines_rows(tmp_path):
    ray = pytest.importorskip("ray")
    from eval.run import main

    with FaultServer(ANSWERS) as a, FaultServer(ANSWERS) as b:
        main(_argv(a.url, tmp_path / "t.sqlite", tmp_path / "t"))
        a.reset_counts()
        try:
            main(_argv(f"{a.url},{b.url}", tmp_path / "r.sqlite", tmp_path / "r", "--engine", "ray",
                       "--ray-actors", "2"))
            assert a.requests > 0 and b.requests > 0  # one endpoint per actor
            served = a.requests + b.requests
            main(_argv(f"{a.url},{b.url}", tmp_path / "r.sqlite", tmp_path / "r", "--engine", "ray",
                       "--ray-actors", "2"))
            assert a.requests + b.requests == served  # a rerun judges nothing
        finally:
            ray.shutdown()
    rows = RunStore(tmp_path / "r.sqlite").rows("r")
    assert len(rows) == 40 and not any(r["error"] for r in rows)
    assert_same_run(rows, RunStore(tmp_path / "t.sqlite").rows("r"))
