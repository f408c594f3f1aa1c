"""The circuit breaker: an unreachable endpoint stops the run with a clear message instead of grinding through every
pair in retries; rate limits, 5xx and parse errors never trip it; the stopped run resumes with --retry-errors to
exactly one row per pair."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError, LMRateLimitError, LMServerError, LMTransportError

from hiera_dspy.lm.breaker import CircuitBreaker, EndpointDown, check_endpoint, is_connection_failure


class _LM:
    def __init__(self, base="http://127.0.0.1:1/v1"):
        self.kwargs = {"api_base": base}


def _refused() -> LMTransportError:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as inner:
            raise LMTransportError("[openai/fake] failed to connect to 127.0.0.1:1") from inner
    except LMTransportError as exc:
        return exc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_consecutive_connection_failures_trip_and_anything_else_resets():
    breaker, lm = CircuitBreaker(threshold=3), _LM()
    for other in (LMRateLimitError("429"), LMServerError("500"), AdapterParseError("ChatAdapter", dspy.Signature("q -> a"), ""), None):
        breaker.after_call(lm, _refused())
        breaker.after_call(lm, _refused())
        breaker.after_call(lm, other)  # a server that answers, even with an error, resets the count
        assert breaker.tripped is None and breaker.failures[lm.kwargs["api_base"]] == 0
    breaker.after_call(_LM("http://127.0.0.1:2/v1"), _refused())  # another endpoint counts on its own
    for _ in range(3):
        breaker.after_call(lm, _refused())
    assert isinstance(breaker.tripped, EndpointDown)
    with pytest.raises(EndpointDown, match=r"LM endpoint http://127.0.0.1:1/v1 is unreachable: 3 calls in a row"):
        breaker.before_call(lm)
    assert "--retry-errors" in str(breaker.tripped) and breaker.tripped.exit_status == 3
    assert not is_connection_failure(LMTransportError("read timed out"))  # slow is not down
    assert CircuitBreaker(threshold=0).after_call(lm, _refused()) is None  # 0: off


def test_probe_sees_a_closed_port_and_an_open_one():
    port = _free_port()
    start = time.perf_counter()
    error = check_endpoint(f"http://127.0.0.1:{port}/v1", tries=2, pause=0.05)
    assert error and "refused" in error.lower() and time.perf_counter() - start < 2
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert check_endpoint(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", tries=1) is None


def test_cli_exit_status_of_a_stop_is_3(capsys):
    from hiera_dspy.cli.options import cli_main

    def main():
        raise EndpointDown("http://127.0.0.1:9/v1", "Connection refused", health_check=True)

    with pytest.raises(SystemExit) as info:
        cli_main(main)
    assert info.value.code == 3
    assert capsys.readouterr().err.startswith("error: LM endpoint http://127.0.0.1:9/v1 is unreachable")


def _rows(store, run_id):
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT pair_id, label, error FROM judgments WHERE run_id=?", (run_id,)).fetchall()
    finally:
        db.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["threads", "async"])
def test_a_wrong_port_stops_before_the_first_pair(isolated, eval_args, engine, monkeypatch):
    from eval.run import main

    monkeypatch.setenv("HIERA_REFERENCE", "none")
    url = f"http://127.0.0.1:{_free_port()}/v1"
    out = isolated / "out" / "down"
    start = time.perf_counter()
    with pytest.raises(EndpointDown) as info:
        main(eval_args(url, isolated, run_id="down", limit=30, threads=2, method="zero-shot", out=out,
                       extra=["--engine", engine]))
    took = time.perf_counter() - start
    assert info.value.health_check and url in str(info.value) and "--retry-errors" in str(info.value)
    assert took < 15, took  # not 30 pairs x the retries of each
    assert _rows(isolated / "store.sqlite", "down") == []  # nothing sent, nothing stored as a failure or a label
    assert json.loads((out / "metrics.json").read_text())["pairs"] == 0  # every output written


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_an_endpoint_that_dies_mid_run_stops_it_and_the_run_resumes(isolated, fault_server, eval_args, monkeypatch):
    from eval.run import main

    monkeypatch.setenv("HIERA_BREAKER_FAILURES", "3")
    monkeypatch.setenv("HIERA_LM_NUM_RETRIES", "0")  # a refused call fails at once (DSPy's backoff is 1, 2, 4 s)
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    limit, run_id, store = 40, "dies", isolated / "store.sqlite"
    fault_server.latency = 0.02
    args = eval_args(fault_server.url, isolated, run_id=run_id, limit=limit, threads=2, method="zero-shot")

    def kill_after(n: int):
        while fault_server.requests < n:
            time.sleep(0.005)
        fault_server.stop()

    killer = threading.Thread(target=kill_after, args=(8,), daemon=True)
    killer.start()
    start = time.perf_counter()
    with pytest.raises(EndpointDown) as info:
        main(args)
    took = time.perf_counter() - start
    assert not info.value.health_check and info.value.failures >= 3 and fault_server.url.rstrip("/") in str(info.value)
    rows = _rows(store, run_id)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) < limit, "stopped early, no pair twice"
    assert all((label is None) != (error is None) for _, label, error in rows), "a label xor an error"
    errors = [error for _, _, error in rows if error]
    assert errors and all(e.startswith("LMTransportError") for e in errors), "only transport failures failed"
    assert sum("refused" in e.lower() for e in errors) >= 3  # the calls that tripped it (others: dropped mid-answer)
    assert took < 30, took  # litellm's first import (for prices) alone takes ~8 s of it on 2 cores

    fault_server.start()  # back on the same port
    metrics = main([*args, "--retry-errors"])
    rows = _rows(store, run_id)
    assert metrics["errors"] == 0 and metrics["pairs"] == limit
    assert len(rows) == limit == len({r[0] for r in rows}) and all(r[1] and r[2] is None for r in rows)
