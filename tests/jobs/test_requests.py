"""A job's request is a plain value: it pickles, and an engine's replica (a Ray actor) rebuilds its program from it at
its own endpoint; the commands map their flags onto the same request a notebook builds by hand."""

from __future__ import annotations

import json
import pickle
import sys
import zlib
from pathlib import Path

import pytest

from eval import label as eval_label
from hiera_dspy import api
from hiera_dspy.cli.requests import judging
from hiera_dspy.errors import HieraError
from hiera_dspy.jobs.holes import HolesLoader
from hiera_dspy.jobs.preparing import Replica, SourceLoader

ROWS = [{"id": "p1", "query": "spy movie", "item_title": "Mission", "item_text": "an agent", "label": "Good"},
        {"id": "p2", "query": "cat film", "item_title": "Dogs", "item_text": "a dog", "label": "Bad"}]


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_a_label_request_pickles_and_its_replica_is_built_at_another_endpoint(pairs, tmp_path):
    request = api.LabelRequest(api.DataSource(f"jsonl:{pairs}", labels="Bad,Good"),
                               api.Judging(method="zero-shot", knowledge="none", engine="ray",
                                           lms=api.LMChoice(lm="openai/x", api_base="http://a/v1,http://b/v1")),
                               out=str(tmp_path / "out"))
    assert pickle.loads(pickle.dumps(request)) == request
    replica = pickle.loads(pickle.dumps(Replica(request.judging, SourceLoader(request.data), "all")))
    program = replica("http://b/v1")
    assert program.method == "zero-shot"
    assert {spec.api_base for spec in program.lms.specs.values()} == {"http://b/v1"}


def test_the_command_line_maps_onto_the_request(pairs, tmp_path):
    args = eval_label.parser().parse_args(["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--method",
                                           "zero-shot", "--set", "with_knowledge=true", "--lm", "openai/x",
                                           "--judge-lm", "openai/y", "--limit", "1", "--engine", "ray",
                                           "--ray-actors", "3", "--run-id", "r1", "--out", str(tmp_path)])
    j = judging(args)
    assert (j.method, j.settings, j.limit, j.engine, j.engine_options.ray_actors, j.run.run_id) == \
        ("zero-shot", ("with_knowledge=true",), 1, "ray", 3, "r1")
    assert j.lms.specs()["judge"].model == "openai/y" and j.lms.specs()["item"].model == "openai/x"


def test_a_holes_request_rebuilds_its_dataset_where_it_is_called(tmp_path):
    request = api.HolesRequest("t.tsv", "c.jsonl", "q.txt", ("a.run",), str(tmp_path), api.Judging(method="x"),
                               scheme="nope")
    loader = pickle.loads(pickle.dumps(HolesLoader(request)))
    with pytest.raises(HieraError, match="unknown label scheme"):
        loader()


@pytest.mark.slow
def test_eval_label_runs_on_ray(pairs, tmp_path):
    """--engine ray labels (each actor rebuilds the program from the request, at its own endpoint): the thread
    engine's labels, and both endpoints served."""
    ray = pytest.importorskip("ray")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fault_server import FaultServer

    answers = {"label": lambda prompt: "Good" if zlib.crc32(prompt.encode()) % 2 else "Bad"}
    common = ["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--method", "zero-shot", "--lm", "openai/fake",
              "--knowledge", "none"]
    with FaultServer(answers) as a, FaultServer(answers) as b:
        threads = eval_label.main([*common, "--api-base", a.url, "--out", str(tmp_path / "t"), "--store",
                                   str(tmp_path / "t.sqlite")])
        try:
            on_ray = eval_label.main([*common, "--api-base", f"{a.url},{b.url}", "--engine", "ray", "--ray-actors",
                                      "2", "--out", str(tmp_path / "r"), "--store", str(tmp_path / "r.sqlite")])
        finally:
            ray.shutdown()
    assert on_ray["labels"] == threads["labels"] and on_ray["pairs"] == 2
