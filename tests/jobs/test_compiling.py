"""optimize.compile scores dev before and after through the engine chosen (--engine): the flag and its options reach
the engine, and the replicas' recipe (`Snapshot`) pickles and rebuilds the judge being compiled at another endpoint;
with --engine ray a local Ray's actors give the thread engine's metrics."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

from hiera_dspy.jobs import compiling
from optimize import compile as compile_cli

COMMON = ["--dataset", "msrd", "--budget", "smoke", "--knowledge", "none", "--method", "zero-shot", "--seed", "1"]


def test_the_engine_flag_reaches_the_engine_and_the_replicas_rebuild_the_compiled_judge(monkeypatch, patch_make_lm,
                                                                                         tmp_path):
    patch_make_lm({"label": "Relevant"})
    seen = []
    real = compiling.run_engine

    def spy(engine, job):  # the replica is rebuilt while the job runs: its artifact lives as long as the job
        replica = pickle.loads(pickle.dumps(job.factory))("http://b/v1")
        seen.append((engine, job.options.threads, job.options.ray_actors, replica))
        return real("threads", job)

    monkeypatch.setattr(compiling, "run_engine", spy)
    metrics = compile_cli.main([*COMMON, "--lm", "fake", "--api-base", "http://a/v1", "--engine", "ray",
                                "--ray-actors", "3", "--threads", "2", "--artifact", str(tmp_path / "j.json"),
                                "--store", str(tmp_path / "s.sqlite")])
    assert [(engine, threads, actors) for engine, threads, actors, _ in seen] == [("ray", 2, 3), ("ray", 2, 3)]
    after = seen[1][3]  # the compiled judge, rebuilt from its pickled recipe at another endpoint
    assert after.method == "zero-shot" and {s.api_base for s in after.lms.specs.values()} == {"http://b/v1"}
    assert after.dump_state() == compiling.read_artifact(tmp_path / "j.json")["state"]
    assert metrics["after"]["n"] == 4 and metrics["after"]["errors"] == 0


def test_the_default_engine_is_threads(monkeypatch, patch_make_lm, tmp_path):
    patch_make_lm({"label": "Relevant"})
    seen = []
    real = compiling.run_engine
    monkeypatch.setattr(compiling, "run_engine", lambda engine, job: seen.append(engine) or real(engine, job))
    compile_cli.main([*COMMON, "--lm", "fake", "--artifact", str(tmp_path / "j.json"),
                      "--store", str(tmp_path / "s.sqlite")])
    assert seen == ["threads", "threads"]


@pytest.mark.slow
def test_compile_scores_dev_on_ray(tmp_path):
    """--engine ray: two actors, one endpoint each, score dev before and after with the judge being compiled, rebuilt
    in each actor; the thread engine's metrics, and both endpoints served."""
    ray = pytest.importorskip("ray")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fault_server import FaultServer

    answers = {"label": "Relevant"}
    common = [*COMMON, "--lm", "openai/fake"]
    with FaultServer(answers) as a, FaultServer(answers) as b:
        threads = compile_cli.main([*common, "--api-base", a.url, "--artifact", str(tmp_path / "t.json"),
                                    "--store", str(tmp_path / "t.sqlite")])
        a.reset_counts()
        try:
            on_ray = compile_cli.main([*common, "--api-base", f"{a.url},{b.url}", "--engine", "ray", "--ray-actors",
                                       "2", "--artifact", str(tmp_path / "r.json"), "--store",
                                       str(tmp_path / "r.sqlite")])
        finally:
            ray.shutdown()
        served = (a.requests, b.requests)
    keys = ("n", "errors", "accuracy", "macro_f1")
    for phase in ("before", "after"):
        assert {k: on_ray[phase][k] for k in keys} == {k: threads[phase][k] for k in keys}
    assert on_ray["after"]["run_id"] == threads["after"]["run_id"] and all(served), served
