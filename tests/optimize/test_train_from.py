"""optimize.compile learns from a person's decisions: --train-from RUN --judge ART refits ART's method on its train
split plus the run's decided pairs (decisions win), the artifact says what it learned from, a run without decisions is
an error, and relabelling the same folder with the refitted judge changes only the pairs nobody decided."""

from __future__ import annotations

import json

import pytest

from eval import escalations
from eval import label as eval_label
from hiera_dspy.artifacts.format import read_artifact
from hiera_dspy.cli.options import runs_dir
from hiera_dspy.errors import HieraError
from hiera_dspy.review.gold import NoDecisions
from hiera_dspy.review.session import Review
from hiera_dspy.store.run_store import RunStore
from optimize import compile as compile_cli


def _row(i: int, query: str, title: str, label: int | None) -> dict:
    row = {"id": f"p{i}", "query": query, "item_title": title, "item_text": f"{title} story", "query_id": f"q{i}",
           "item_id": f"d{i}"}
    return row if label is None else {**row, "label": label}


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def world(tmp_path) -> dict:
    """A train split where a title match means Relevant; a labelling file of 12 title matches."""
    data = tmp_path / "data"
    data.mkdir()
    train = [_row(i, f"red fox {i}", f"Red Fox {i}", 1) for i in range(5)]
    train += [_row(i + 5, f"red fox {i}", f"Blue Whale {i}", 0) for i in range(5)]
    _jsonl(data / "train.jsonl", train)
    _jsonl(data / "dev.jsonl", [_row(20, "green owl", "Green Owl", 1), _row(21, "green owl", "Grey Rock", 0)])
    pairs = _jsonl(tmp_path / "todo.jsonl", [_row(100 + i, "gold coin", "Gold Coin", None) for i in range(12)])
    return {"dataset": f"msrd:{data}", "pairs": pairs, "tmp": tmp_path}


def _compile(*argv) -> None:
    compile_cli.main(["--knowledge", "none", "--skip-before", *argv])


def _label(world, judge: str) -> dict[str, dict]:
    out = world["tmp"] / "labelled"
    eval_label.main(["--dataset", f"jsonl:{world['pairs']}", "--scheme", "msrd", "--judge", judge,
                     "--knowledge", "none", "--out", str(out)])
    return {r["id"]: r for r in map(json.loads, (out / "labels.jsonl").read_text().splitlines())}


def _run_id() -> str:
    """The latest eval.label run of the test's store."""
    store = RunStore(runs_dir() / "store.sqlite")
    return [r for r in store.run_ids() if (store.run_config(r).get("labelling") or {}).get("kind") == "label"][-1]


def test_a_refit_on_decisions_changes_a_label_they_taught(world):
    art, v2 = str(world["tmp"] / "v1.json"), str(world["tmp"] / "v2.json")
    _compile("--dataset", world["dataset"], "--method", "embed-lr", "--set", "embedder=lexical", "--out", art)
    before = _label(world, art)
    assert {r["label"] for r in before.values()} == {"Relevant"}  # a title match: relevant, as train taught
    run_id = _run_id()
    with pytest.raises(NoDecisions, match="no decisions yet"):
        _compile("--train-from", run_id, "--judge", art, "--out", v2)
    decided = [f"p{100 + i}" for i in range(10)]  # a person says: these title matches are not relevant
    decisions = _jsonl(world["tmp"] / "human.jsonl", [{"id": pid, "label": "Irrelevant"} for pid in decided])
    escalations.main(["--run", run_id, "--labels", decisions, "--who", "ana"])
    _compile("--train-from", run_id, "--judge", art, "--out", v2)
    doc = read_artifact(v2)
    assert doc["method"] == "embed-lr" and doc["config"]["embedder"] == "lexical"
    assert doc["training"]["from_runs"] == [{"run_id": run_id, "decisions": 10}]
    assert doc["training"]["decisions"] == 10 and doc["training"]["pairs"] == 20 and doc["training"]["split"] == "train"
    after = _label(world, v2)
    for pid, r in after.items():
        assert r["machine_label"] and r["confidence"] is not None  # every pair keeps the machine's label
        if pid in decided:
            assert r["label"] == "Irrelevant" and r["source"] == "human" and r["decided_by"] == "ana"
        else:  # nobody decided these two: the refitted judge learned from the decisions
            assert r["label"] == "Irrelevant" and r["source"] == "machine" and before[pid]["label"] == "Relevant"
    relabelled = _run_id()
    assert relabelled != run_id  # the refitted judge's run: the review queues only what nobody decided
    queued = [e.row["id"] for e in Review(RunStore(runs_dir() / "store.sqlite"), relabelled, budget=50).queue()]
    assert sorted(queued) == ["p110", "p111"]
    assert len(Review(RunStore(runs_dir() / "store.sqlite"), run_id, budget=50).queue()) == 12  # its own decisions stay


def test_train_from_needs_a_judge_and_a_labelling_run(world):
    with pytest.raises(HieraError, match="--train-from needs --judge"):
        _compile("--dataset", world["dataset"], "--train-from", "abc", "--method", "embed-lr")
    art = str(world["tmp"] / "v1.json")
    _compile("--dataset", world["dataset"], "--method", "embed-lr", "--set", "embedder=lexical", "--out", art)
    with pytest.raises(NoDecisions, match="no such run"):
        _compile("--train-from", "nosuchrun", "--judge", art, "--out", str(world["tmp"] / "v2.json"))
