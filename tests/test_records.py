"""The typed Judgment: one row for runner, store, metrics and predictions.jsonl; rows in the formats written before
it (tests/fixtures/records-v0, captured from the code of ec833eb with the fake LM) load and score the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import dspy
import numpy as np
import pytest
from pydantic import BaseModel

from hiera_dspy.lm import ledger
from hiera_dspy.records import (
    Judgment,
    RecordError,
    Step,
    json_value,
    prediction_fields,
    read_predictions,
    write_predictions,
)
from hiera_dspy.runs.runner import judgment_row
from hiera_dspy.runs.tally import metrics_from_rows
from hiera_dspy.store.run_store import RunStore
from hiera_dspy.testing import pair

V0 = Path(__file__).parent / "fixtures" / "records-v0"
LABELS = ["Irrelevant", "Relevant"]
METHODS = ("hiera", "hiera-cascade", "dream", "llm-blender")


@pytest.fixture
def v0_store(tmp_path):
    """A run store file as ec833eb wrote it (its runs and judgments tables, rebuilt from the SQL dump)."""
    path = tmp_path / "store.sqlite"
    db = sqlite3.connect(path)
    db.executescript((V0 / "store.sql").read_text())
    db.commit()
    db.close()
    with RunStore(path) as store:
        yield store


def _without_label(row: dict) -> dict:
    fields = {k: v for k, v in row["fields"].items() if k != "label" or row["escalated"]}
    return {**row, "fields": fields}


def test_old_store_rows_load_as_the_same_judgments(v0_store):
    expected = json.loads((V0 / "rows.json").read_text())
    for run_id, rows in expected.items():
        loaded = v0_store.rows(run_id)
        assert all(isinstance(j, Judgment) and all(isinstance(s, Step) for s in j.steps) for j in loaded)
        # the one migration: the label is no longer repeated inside `fields`
        assert [j.to_dict() for j in loaded] == [_without_label(r) for r in rows]
    cascade = {j.id: j for j in v0_store.rows("cap-hiera-cascade")}
    assert {j.fields["routed"] for j in cascade.values()} == {"scorer", "llm"}
    assert all("cascade" in j.fields and "scores" in j.fields for j in cascade.values())
    assert all(j.fields["history"] for j in v0_store.rows("cap-dream"))
    assert all(j.fields["votes"] for j in v0_store.rows("cap-llm-blender"))


@pytest.mark.parametrize("method", METHODS)
def test_old_predictions_load_and_write_back_unchanged(method, tmp_path):
    old = [json.loads(line) for line in (V0 / f"predictions-{method}.jsonl").read_text().splitlines()]
    judgments = read_predictions(V0 / f"predictions-{method}.jsonl")
    assert [j.id for j in judgments] == [o["id"] for o in old]
    write_predictions(tmp_path / "p.jsonl", judgments)
    again = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert again == [_without_label(o) for o in old]


# Metrics added after the v0 files were written (the quadratic-weighted kappa, truncated item texts)
NEWER = {"weighted_kappa", "truncated", "binary_kappa", "krippendorff_alpha", "binary_from", "binary_confusion"}


def test_old_rows_score_as_the_metrics_written_with_them(v0_store):
    written = json.loads((V0 / "metrics-hiera.json").read_text())
    from_predictions = metrics_from_rows(read_predictions(V0 / "predictions-hiera.jsonl"), LABELS)
    assert from_predictions.pop("seconds_p50") == pytest.approx(written["seconds_p50"])
    same = [k for k in from_predictions if not k.startswith("seconds") and k != "tokens_by_role"  # not in the file
            and k not in NEWER]
    answered = from_predictions.pop("answered_only")
    assert {k: v for k, v in answered.items() if k not in NEWER} == written["answered_only"]
    same.remove("answered_only")
    assert {k: from_predictions[k] for k in same} == {k: written[k] for k in same}
    from_store = metrics_from_rows(v0_store.rows("cap-hiera"), LABELS)
    assert from_store["errors"] == written["errors"] == 2 and from_store["parse_recovered"] == 1
    assert from_store["human_labels"] == 1  # recorded in the store after the run wrote its metrics
    for key in ("tokens_total", "tokens_by_role", "kappa", "llm_share", "delegation_rate", "confusion"):
        assert from_store[key] == written[key]


def test_a_judgment_round_trips_through_the_store(tmp_path):
    book = ledger.Ledger()
    book.add(Step("judge.decide", "judge", seconds=0.5, calls=1, prompt_tokens=7, completion_tokens=3,
                  outputs={"label": "Relevant"}))
    prediction = dspy.Prediction(label="Relevant", delegated=True, votes={"a": "Relevant"}, rounds=2)
    judgment = judgment_row(pair(0), 0, book, prediction, None, 1.25)
    assert judgment.label == "Relevant" and judgment.delegated is True and judgment.tokens == 10
    assert judgment.fields == {"delegated": True, "votes": {"a": "Relevant"}, "rounds": 2}
    with RunStore(tmp_path / "store.sqlite") as store:
        store.start_run("r", {"method": "x"})
        store.record("r", judgment)
        (back,) = store.rows("r")
    assert back.run_id == "r" and back.finished is not None
    assert back.to_dict() == {**judgment.to_dict(), "run_id": "r", "finished": back.finished}
    assert back["fields"]["votes"] == {"a": "Relevant"} and back.get("steps")[0]["name"] == "judge.decide"


def test_an_error_and_an_escalation():
    error = judgment_row(pair(1), 3, ledger.Ledger(), None, RuntimeError("server down"), 0.1)
    assert (error.label, error.fields, error.error) == (None, {}, "RuntimeError: server down")
    debate = dspy.Prediction(label=None, escalated=True, history=[1])
    escalated = judgment_row(pair(2), 4, ledger.Ledger(), debate, None, 0)
    assert escalated.label is None and escalated.escalated and escalated.fields == {"escalated": True, "history": [1]}


class Verdict(BaseModel):
    grade: int


def test_the_rule_for_prediction_outputs():
    prediction = dspy.Prediction(label="Relevant", probs=np.array([0.25, 0.75]), n=np.int64(3), tags={"b", "a"} - {"b"},
                                 verdict=Verdict(grade=2), when=object, unset=None, _private=1, pair=(1, "x"))
    fields = prediction_fields(prediction)
    assert fields == {"probs": [0.25, 0.75], "n": 3, "tags": ["a"], "verdict": {"grade": 2}, "when": str(object),
                      "pair": [1, "x"]}
    json.dumps(fields)  # JSON data all through
    assert json_value({1: np.float32(0.5)}) == {"1": 0.5}


def test_a_bad_predictions_line_names_file_line_and_field(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "a", "label": "Relevant"}\n{"label": "Relevant"}\n')
    with pytest.raises(RecordError, match=r"predictions.jsonl:2: field 'id'"):
        read_predictions(path)
    path.write_text('{"id": "a", "fields": [1]}\n')
    with pytest.raises(RecordError, match=r"predictions.jsonl:1: field 'fields'"):
        read_predictions(path)
    path.write_text('{"id": "a"\n')
    with pytest.raises(RecordError, match=r"predictions.jsonl:1: not a JSON line"):
        read_predictions(path)
