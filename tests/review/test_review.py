"""The review queue (escalations, then least confident) and the review page's HTTP API: a decision is stored beside
the machine label with who/when, and the exported qrels and records carry it with its source."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from labelling_helpers import ANSWERS, holes_argv, open_store, write

from eval import escalations as eval_escalations
from eval import holes as eval_holes
from eval.review import make_server
from hiera_dspy.errors import HieraError
from hiera_dspy.review.queue import review_queue
from hiera_dspy.review.session import Review


def row(i, label="Good", escalated=False, error=None, scores=None):
    fields = {"scores": scores} if scores else {}
    return {"id": f"p{i}", "position": i, "label": label, "escalated": escalated, "error": error, "fields": fields}


def test_queue_order_escalated_then_lowest_confidence_within_budget():
    rows = [row(0, scores={"Good": 0.9}), row(1, scores={"Good": 0.55}), row(2, label=None, escalated=True),
            row(3, scores={"Good": 0.7}), row(4, error="boom", label=None), row(5, scores={"Good": 0.55}),
            row(6)]  # p6: no confidence at all -> least sure
    queue = review_queue(rows, budget=3)
    assert [(e.row["id"], e.reason) for e in queue] == [
        ("p2", "escalated"), ("p6", "low confidence"), ("p1", "low confidence"), ("p5", "low confidence")]
    assert [e.row["id"] for e in review_queue(rows, budget=0)] == ["p2"]
    assert len(review_queue(rows, budget=99)) == 6  # every judged row; the failed one never


@pytest.fixture
def served(labelled):
    run_id, out = labelled
    review = Review(open_store(), run_id, budget=1, who="ana")
    server = make_server(review, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], run_id, out
    server.shutdown()
    server.server_close()


def call(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, (json.loads(payload) if response.headers["Content-Type"] == "application/json"
                             else payload.decode())


def test_api_queue_then_decision_reaches_store_and_qrels(served):
    port, run_id, out = served
    status, queue = call(port, "GET", "/api/queue")
    assert status == 200 and queue["labels"] == ["Bad", "Good"] and queue["who"] == "ana"
    assert [(i["id"], i["reason"]) for i in queue["items"]] == [("p4", "escalated"), ("p3", "low confidence")]
    p4 = queue["items"][0]
    assert p4["query"] == "maybe something" and p4["machine_label"] is None and p4["confidence"] == 0.0
    assert len(p4["transcript"]) == 6 and p4["transcript"][0].startswith("Round 0, advocate (relevant)")
    status, result = call(port, "POST", "/api/decisions", {"id": "p4", "label": "Good", "who": "bo"})
    assert status == 200 and result["decision"]["label"] == "Good" and result["decision"]["who"] == "bo"
    assert (out / "qrels.txt").read_text().splitlines()[3] == "q4 0 d4 1"  # the escalated pair now has a grade
    records = {r["id"]: r for r in map(json.loads, (out / "labels.jsonl").read_text().splitlines())}
    assert (records["p4"]["label"], records["p4"]["source"], records["p4"]["decided_by"]) == ("Good", "human", "bo")
    assert records["p4"]["machine_label"] is None and records["p1"]["source"] == "machine"
    stored = {r["id"]: r for r in open_store().rows(run_id)}
    assert stored["p4"]["human_label"] == "Good" and stored["p4"]["label"] is None  # beside, not instead
    status, queue = call(port, "GET", "/api/queue")
    assert queue["items"][0]["decision"]["label"] == "Good"


def test_api_rejects_bad_decisions(served):
    port, _run_id, _out = served
    assert call(port, "POST", "/api/decisions", {"id": "p4", "label": "Maybe"})[0] == 400
    assert call(port, "POST", "/api/decisions", {"id": "nope", "label": "Good"})[0] == 404
    assert call(port, "POST", "/api/decisions", {"label": "Good"})[0] == 400
    assert call(port, "POST", "/api/decisions", {"id": "p4", "label": "Good"},
                {"Host": "evil.example:80"})[0] == 403
    status, page = call(port, "GET", "/")
    assert status == 200 and "<script>" in page and "http://" not in page and "https://" not in page  # no CDN


def test_holes_review_fills_the_escalated_hole(bench, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    out = tmp_path / "filled"
    run_id = eval_holes.main(holes_argv(bench, out))["run_id"]
    review = Review(open_store(), run_id, budget=0, who="ana")
    assert [e.row["id"] for e in review.queue()] == ["q4:d7"]
    review.decide("q4:d7", "Relevant", "ana")
    assert (out / "qrels.txt").read_text().splitlines()[-1] == "q4 0 d7 1"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["human"] == 1 and summary["escalated"] == 0 and summary["runs"][1]["hole_rate_after"] == 0.0


def test_escalations_text_view_and_file_decisions(labelled, tmp_path, capsys):
    run_id, out = labelled
    eval_escalations.main(["--run", run_id, "--budget", "1"])
    text = capsys.readouterr().out
    assert "1 escalated of 5 judgments; 2 in the review queue" in text and "== p4: escalated" in text
    decisions = write(tmp_path / "human.jsonl", [json.dumps({"id": "p4", "label": "Bad", "who": "cy"})])
    eval_escalations.main(["--run", run_id, "--labels", decisions])
    assert "q4 0 d4 0" in (out / "qrels.txt").read_text()
    bad = write(tmp_path / "bad.jsonl", [json.dumps({"id": "p4", "label": "Bad"}),
                                         json.dumps({"id": "p4", "label": "?"})])
    with pytest.raises(HieraError, match=r"bad.jsonl: 1 bad line\(s\), nothing was recorded: line 2: field \"label\""):
        eval_escalations.main(["--run", run_id, "--labels", bad])


def test_review_of_a_plain_eval_run_records_the_decision(patch_make_lm):
    from eval import run as eval_run

    patch_make_lm({"stance": lambda p: "relevant" if "[[ ## initial_stance ## ]]\nrelevant" in p else "not relevant"})
    metrics = eval_run.main(["--dataset", "msrd", "--split", "dev", "--method", "dream", "--lm", "fake",
                             "--knowledge", "none", "--limit", "2"])
    review = Review(open_store(), metrics["run_id"], budget=0, who="ana")
    queue = review.payload()["items"]
    assert [i["reason"] for i in queue] == ["escalated", "escalated"] and queue[0]["query"] == "funko pop alien toy story"
    assert review.decide(queue[0]["id"], "Relevant", "ana")["written"] == []  # no labelling files: the store only
    assert open_store().rows(metrics["run_id"])[0]["human_label"] == "Relevant"
