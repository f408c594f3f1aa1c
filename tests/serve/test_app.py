"""hiera_dspy.serve: a compiled embed-lr judge (lexical features, fitted on the bundled MSRD train split) behind the
ASGI app, driven by Starlette's test client: one pair and a batch get label, confidence and distribution (the same as
the judge gives in-process); every malformed request gets a 4xx with a message and the service keeps answering; the
token is required where set; the app calls hiera_dspy.api and nothing below it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from hiera_dspy.api import PairRequest, load_served
from hiera_dspy.serve.app import create_app
from hiera_dspy.serve.limits import Limits, check_exposure, is_loopback

ROOT = Path(__file__).resolve().parents[2]
PAIR = {"query": "tom cruise spy movie", "item_title": "Mission: Impossible",
        "item_text": "An American agent under false suspicion of disloyalty must discover the real spy."}


@pytest.fixture(scope="module")
def served(artifact):
    return load_served(artifact)


def client(served, **kw) -> TestClient:
    return TestClient(create_app(served, **kw))


def test_one_pair_and_a_batch_get_label_confidence_and_distribution(served):
    expected = served.judge([PairRequest(**PAIR)])[0]
    with client(served) as c:
        one = c.post("/judge", json=PAIR)
        assert one.status_code == 200
        body = one.json()
        assert (body["label"], body["confidence"], body["distribution"]) == \
            (expected.label, expected.confidence, expected.distribution)
        assert body["label"] in ("Irrelevant", "Relevant") and body["confidence_source"] == "scorer"
        assert sum(body["distribution"].values()) == pytest.approx(1.0) and body["error"] is None
        other = {"query": "romantic comedy in paris", "item_title": "Alien", "item_text": "A crew meets a monster.",
                 "id": "x7"}
        batch = c.post("/judge", json={"pairs": [PAIR, other]}).json()["judgments"]
        assert [j["id"] for j in batch] == ["0", "x7"] and batch[0]["distribution"] == body["distribution"]
        health = c.get("/health").json()
        assert health == {"status": "ok", "method": "embed-lr", "labels": ["Irrelevant", "Relevant"],
                          "judge": "embed-lr.json"}
        metrics = c.get("/metrics").json()
        assert metrics["pairs_judged"] == 3 and metrics["requests"] == {"200": 2}
        assert metrics["latency_ms"]["n"] == 2 and metrics["latency_ms"]["p99"] > 0


@pytest.mark.parametrize("send, status, message", [
    (lambda c: c.post("/judge", content=b'{"query": "x", '), 400, "not JSON"),
    (lambda c: c.post("/judge", content=b"\xff\xfe"), 400, "not JSON"),
    (lambda c: c.post("/judge", json=["a list"]), 422, "the body is a JSON list"),
    (lambda c: c.post("/judge", json={"item_title": "t"}), 422, "query: missing"),
    (lambda c: c.post("/judge", json={"query": "q", "item_title": 5}), 422, "item_title: a int, not text"),
    (lambda c: c.post("/judge", json={"query": "q"}), 422, "item_title, item_text: both missing or empty"),
    (lambda c: c.post("/judge", json={"pairs": [PAIR, {"query": ""}]}), 422, "pairs[1].query"),
    (lambda c: c.post("/judge", json={"pairs": []}), 422, "non-empty list"),
    (lambda c: c.post("/judge", json={"pairs": [PAIR] * 5}), 413, "5 pairs is over the limit of 4"),
    (lambda c: c.post("/judge", content=b"x" * 5000), 413, "over the limit of 4096 bytes"),
    (lambda c: c.get("/judge"), 405, "the service has POST /judge"),
    (lambda c: c.get("/nope"), 404, "the service has POST /judge"),
])
def test_a_malformed_request_gets_a_4xx_with_a_message_and_the_service_keeps_answering(served, send, status, message):
    with client(served, limits=Limits(max_body_bytes=4096, max_batch=4)) as c:
        response = send(c)
        assert response.status_code == status
        assert message in response.json()["error"]
        assert c.post("/judge", json=PAIR).status_code == 200


def test_the_token_is_required_where_set_and_never_echoed(served):
    with client(served, token="s3cret-token") as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-token"}):
            response = c.post("/judge", json=PAIR, headers=headers)
            assert response.status_code == 401 and "s3cret" not in response.text
            assert response.headers["www-authenticate"] == "Bearer"
        assert c.get("/metrics").status_code == 401
        assert c.get("/health").status_code == 200  # an orchestrator's probe needs no token: it tells no judgment
        ok = c.post("/judge", json=PAIR, headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200 and ok.json()["label"]
        assert c.get("/metrics", headers={"Authorization": "Bearer s3cret-token"}).json()["requests"]["401"] == 3


def test_a_failed_judgment_is_an_error_never_a_label(served, monkeypatch):
    def broken(query, item_title, item_text):
        raise RuntimeError("the scorer broke")

    monkeypatch.setattr(served.program, "forward", broken)
    with client(served) as c:
        body = c.post("/judge", json=PAIR).json()
    assert body["label"] is None and "the scorer broke" in body["error"]


def test_only_loopback_listens_without_a_token():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    check_exposure("127.0.0.1", None)
    check_exposure("0.0.0.0", "token")
    with pytest.raises(Exception, match="requires a bearer token; put one in an environment variable"):
        check_exposure("0.0.0.0", None)
    with pytest.raises(Exception, match="max_batch must be at least 1"):
        Limits(max_batch=0)


def test_the_app_calls_the_api_and_nothing_below_it():
    for path in sorted((ROOT / "hiera_dspy" / "serve").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        ours = {m for m in imported if m.startswith("hiera_dspy")}
        assert ours <= {"hiera_dspy.api", "hiera_dspy.errors", "hiera_dspy.serve.batcher", "hiera_dspy.serve.limits"}, \
            (path.name, ours)


def test_pairs_that_wait_together_are_judged_in_one_batch():
    import asyncio
    import threading

    from hiera_dspy.serve.batcher import Batcher

    release, calls = threading.Event(), []

    def judge(pairs):
        calls.append(list(pairs))
        if len(calls) == 1:
            release.wait(5)  # the first batch is still being judged while the others arrive
        return [p.upper() for p in pairs]

    async def scenario():
        batcher = Batcher(judge, max_batch=5, workers=1)
        batcher.start()
        first = asyncio.create_task(batcher.submit(["a"]))
        while not calls:
            await asyncio.sleep(0.01)
        rest = [asyncio.create_task(batcher.submit([x, x + x])) for x in "bcd"]
        await asyncio.sleep(0.05)
        release.set()
        results = [await first] + [await r for r in rest]
        await batcher.stop()
        return results

    results = asyncio.run(scenario())
    assert results == [["A"], ["B", "BB"], ["C", "CC"], ["D", "DD"]]
    assert calls == [["a"], ["b", "bb", "c", "cc"], ["d", "dd"]]  # 5 pairs at most a batch, requests never split
