"""An OpenAI-compatible chat-completions server for tests and benchmarks: answers any DSPy prompt, injects faults.

Loopback only, random port, stdlib only (ThreadingHTTPServer, HTTP/1.1 keep-alive). Answers come from
`hiera_dspy.testing.FakeEngine`'s field logic: the output fields are read from the system message
("Your output fields are:") and each is filled from `answers` (value or callable(prompt)) or a default by type.
A request that asks for JSON (JSONAdapter: `response_format`, or a prompt asking for a JSON object) gets a JSON object
instead of `[[ ## field ## ]]` sections. Every successful answer carries a real `usage` block (words counted as tokens).

Faults are drawn per request from a seeded RNG at the given rates (fractions of all requests), after any kinds listed
in `script` (served first, in order; "ok" = a normal answer):

    rate_limit    HTTP 429 with a Retry-After header (`retry_after` seconds, may be fractional)
    server_error  HTTP 500
    unavailable   HTTP 503 with Retry-After
    timeout       sleeps `hang` seconds (longer than the client timeout) before answering
    drop          sends the status line, headers and part of the body, then closes the socket
    empty         HTTP 200 whose message content is ""
    garbage       HTTP 200 whose content is unparseable text (no field markers, no label words)
    echo_auth     HTTP 401 whose error message echoes the request's bearer token (a misbehaving proxy; secrets tests)
    refusal       HTTP 200 whose content is `refusal` (default "I'm sorry, but this item is not relevant."): no field
                  markers, and a label word in a negated sentence
    truncated     HTTP 200 with the normal answer cut after its first field (an answer stopped by a token cap)

`rules` maps a substring of the request body (the JSON as sent, e.g. "`argument`" for the prompts that ask for an
`argument` output) to a fault kind: a matching request gets that kind, before `script` and the random draw.

`server.seen` lists (model, bearer token) per chat request, `server.auth_seen` the distinct tokens: tests use two
servers to show where a key went.

Usage:

    with FaultServer(latency=0.05, faults={"rate_limit": 0.1, "garbage": 0.05}, seed=1) as server:
        lm = make_lm(LMSpec("openai/fake", api_base=server.url))
        ...
        server.counts   # {"requests": n, "ok": ..., "rate_limit": ..., ...}

As a separate process (so the server does not share the caller's GIL; prints one line `URL <url>` when ready):

    python tests/fault_server.py --latency 0.2 [--faults rate_limit=0.1,drop=0.05] [--seed 0]

`GET /stats` returns the counts as JSON; `POST /control` with a JSON body {"faults": {...}, "latency": x, "reset": true}
reconfigures a running server, and {"down": seconds} takes it down (refusing connections) for that long.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hiera_dspy.testing import FIELD_LINE, FakeEngine  # noqa: E402

FAULT_KINDS = ("rate_limit", "server_error", "unavailable", "timeout", "drop", "empty", "garbage", "echo_auth",
               "refusal", "truncated")
REFUSAL = "I'm sorry, but this item is not relevant."
GARBAGE = ("lorem ipsum dolor sit amet; the quick brown fox {{ not json", "%%%% ### <<< >>> qwerty zxcv 123",
           "As an AI model I cannot comply with that format.")


def _text(content: Any) -> str:
    """OpenAI message content: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class FaultServer:
    """OpenAI-compatible fake LM server with fault injection; a context manager (start()/stop())."""

    def __init__(self, answers: dict[str, Any | Callable[[str], Any]] | None = None, *, latency: float = 0.0,
                 faults: dict[str, float] | None = None, seed: int = 0, retry_after: float = 0.0,
                 hang: float = 2.0, script: list[str] | None = None, host: str = "127.0.0.1", port: int = 0,
                 rules: dict[str, str] | None = None, refusal: str = REFUSAL):
        self.engine = FakeEngine(answers)
        self.latency = latency
        self.retry_after = retry_after
        self.hang = hang
        self.host, self.port = host, port
        self.faults: dict[str, float] = {}
        self.set_faults(faults or {})
        self.script: list[str] = list(script or [])  # kinds served first, in order, before any random draw
        self.rules: dict[str, str] = dict(rules or {})  # body substring -> kind, before the script
        unknown = set(self.rules.values()) - {*FAULT_KINDS, "ok"}
        if unknown:
            raise ValueError(f"unknown fault kinds in rules {sorted(unknown)}; known: {FAULT_KINDS}")
        self.refusal = refusal
        self.rng = random.Random(seed)
        self.counts: Counter = Counter()
        self.auth_seen: set[str] = set()
        self.seen: list[tuple[str, str]] = []  # (model, bearer token) of every chat request, in arrival order
        self.in_flight = 0
        self.max_in_flight = 0
        self.server_seconds = 0.0  # time spent answering, latency and faults included
        self.gate = threading.Event()  # cleared by pause(): chat requests wait (unanswered) until resume()
        self.gate.set()
        self._lock = threading.Lock()
        self.connections: set[socket.socket] = set()  # open client connections, closed by stop()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The api_base to give a client: http://127.0.0.1:PORT/v1"""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "FaultServer":
        if self._httpd is not None:
            return self
        handler = type("Handler", (_Handler,), {"server_obj": self})
        httpd = _QuietServer((self.host, self.port), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # stop() never waits for a hanging "timeout" request
        httpd.request_queue_size = 256
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fault-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and close every open connection (keep-alive ones too): the endpoint is down, a client's
        next request is refused; start() again brings it back on the same port."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd = None
        with self._lock:
            open_ones, self.connections = list(self.connections), set()
        for conn in open_ones:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "FaultServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- configuration -----------------------------------------------------------------------------------------
    def set_faults(self, faults: dict[str, float]) -> None:
        unknown = set(faults) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        if sum(faults.values()) > 1:
            raise ValueError(f"fault rates sum to more than 1: {faults}")
        self.faults = dict(faults)

    def outage(self, seconds: float) -> None:
        """Go down for `seconds` (not listening, every connection closed: requests are refused), then come back on
        the same port; returns at once (a thread does it)."""
        def run():
            self.stop()
            time.sleep(seconds)
            self.start()
        threading.Thread(target=run, name="fault-server-outage", daemon=True).start()

    def pause(self) -> None:
        """Hold every chat request from now on (counted, unanswered) until resume(): a writer stays mid-run."""
        self.gate.clear()

    def resume(self) -> None:
        self.gate.set()

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.max_in_flight = 0
            self.server_seconds = 0.0

    def stats(self) -> dict:
        with self._lock:
            return {**self.counts, "max_in_flight": self.max_in_flight, "server_seconds": self.server_seconds}

    @property
    def requests(self) -> int:
        return self.counts["requests"]

    def _draw(self, body: str = "") -> str:
        for needle, kind in self.rules.items():
            if needle in body:
                return kind
        with self._lock:
            if self.script:
                return self.script.pop(0)
            r = self.rng.random()
        for kind in FAULT_KINDS:
            rate = self.faults.get(kind, 0.0)
            if r < rate:
                return kind
            r -= rate
        return "ok"

    # --- answering ---------------------------------------------------------------------------------------------
    def answer(self, body: dict) -> str:
        """The completion text for a chat request: DSPy field sections, or a JSON object when JSON is asked for."""
        messages = body.get("messages") or []
        system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
        last_user = users[-1] if users else ""
        outputs = system.split("Your output fields are:", 1)[-1].split("All interactions", 1)[0]
        fields = FIELD_LINE.findall(outputs)
        wants_json = bool(body.get("response_format")) or "JSON object" in last_user or "JSON object" in system
        if wants_json:
            obj = {}
            for name, type_ in fields:
                value = self.engine._value(name, type_, last_user)
                if type_.startswith("list") or type_ in ("bool", "int", "float") or type_.startswith("dict"):
                    try:
                        value = json.loads(value if type_ != "bool" else value.lower())
                    except ValueError:
                        pass
                obj[name] = value
            return json.dumps(obj)
        body_text = "\n\n".join(f"[[ ## {name} ## ]]\n{self.engine._value(name, type_, last_user)}"
                                for name, type_ in fields)
        return body_text + "\n\n[[ ## completed ## ]]"


def _model(raw: bytes) -> str:
    """The `model` field of a chat request body ("" when the body is not a JSON object)."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return ""
    return str(body.get("model", "")) if isinstance(body, dict) else ""


def _first_field(text: str) -> str:
    """An answer cut after its first field: `[[ ## a ## ]]\nvalue` sections, or a JSON object cut mid-way."""
    if text.lstrip().startswith("{"):
        return text[: max(1, text.find(",") + 1)] if "," in text else text[: len(text) // 2]
    sections = text.split("\n\n[[ ## ")
    return sections[0]


def _completion(model: str, text: str, prompt_tokens: int, n: int) -> dict:
    completion_tokens = len(text.split())
    return {"id": f"chatcmpl-fault-{n}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, socket.timeout, OSError)):
            return  # a client that was killed or gave up mid-request: expected in these tests
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: without this, 40 ms delayed-ACK stalls
    server_obj: FaultServer

    def log_message(self, *args) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.server_obj._lock:
            self.server_obj.connections.add(self.connection)

    def finish(self) -> None:
        with self.server_obj._lock:
            self.server_obj.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def _send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/stats"):
            self._send_json(200, self.server_obj.stats())
        elif self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        srv = self.server_obj
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/").endswith("/control"):
            cmd = json.loads(raw or b"{}")
            if "faults" in cmd:
                srv.set_faults(cmd["faults"])
            if "latency" in cmd:
                srv.latency = float(cmd["latency"])
            if cmd.get("reset"):
                srv.reset_counts()
            self._send_json(200, srv.stats())
            if cmd.get("down"):  # after the answer: an outage of that many seconds
                srv.outage(float(cmd["down"]))
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        start = time.perf_counter()
        with srv._lock:
            srv.counts["requests"] += 1
            n = srv.counts["requests"]
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
            auth = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
            if auth:
                srv.auth_seen.add(auth)
            srv.seen.append((_model(raw), auth))
        srv.gate.wait(timeout=300)
        kind = srv._draw(raw.decode("utf-8", "replace"))
        with srv._lock:
            srv.counts[kind] += 1
        try:
            self._serve(srv, kind, raw, n)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass  # the client gave up (a timeout fault): nothing to answer
        finally:
            with srv._lock:
                srv.in_flight -= 1
                srv.server_seconds += time.perf_counter() - start

    def _serve(self, srv: FaultServer, kind: str, raw: bytes, n: int) -> None:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        if srv.latency:
            time.sleep(srv.latency)
        if kind == "rate_limit":
            self._send_json(429, {"error": {"message": "Rate limit reached (injected)", "type": "rate_limit_error",
                                            "code": "rate_limit_exceeded"}},
                            {"Retry-After": f"{srv.retry_after:g}"})
            return
        if kind == "echo_auth":
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
            self._send_json(401, {"error": {"message": f"Incorrect API key provided: {token}",
                                            "type": "invalid_request_error", "code": "invalid_api_key"}})
            return
        if kind == "server_error":
            self._send_json(500, {"error": {"message": "Internal server error (injected)", "type": "server_error"}})
            return
        if kind == "unavailable":
            self._send_json(503, {"error": {"message": "Service unavailable (injected)", "type": "server_error"}},
                            {"Retry-After": f"{srv.retry_after:g}"})
            return
        if kind == "timeout":
            time.sleep(srv.hang)
        if kind == "drop":
            payload = json.dumps(_completion(body.get("model", "fake"), "x " * 50, 10, n)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 3])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if kind == "empty":
            text = ""
        elif kind == "refusal":
            text = srv.refusal
        elif kind == "truncated":
            text = _first_field(srv.answer(body))
        elif kind == "garbage":
            with srv._lock:
                text = srv.rng.choice(GARBAGE)
        else:
            text = srv.answer(body)
        prompt_tokens = sum(len(_text(m.get("content")).split()) for m in body.get("messages") or [])
        self._send_json(200, _completion(body.get("model", "fake"), text, prompt_tokens, n))


def label_by_query(labels: list[str]) -> Callable[[str], str]:
    """An answer for `label`: labels[crc32(query) % len(labels)], the query read from the prompt (same for every
    adapter's prompt of one pair)."""
    import zlib

    from hiera_dspy.testing import input_of

    return lambda prompt: labels[zlib.crc32(input_of(prompt).encode()) % len(labels)]


def _parse_faults(spec: str) -> dict[str, float]:
    out = {}
    for part in filter(None, (spec or "").split(",")):
        kind, _, rate = part.partition("=")
        out[kind.strip()] = float(rate)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="OpenAI-compatible fake LM server with fault injection (loopback only)")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--faults", default="", help="e.g. rate_limit=0.05,drop=0.02")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retry-after", type=float, default=0.0)
    p.add_argument("--hang", type=float, default=2.0)
    p.add_argument("--answers", default="{}",
                   help='fixed field values as JSON, e.g. {"query_interpretability": "unclear"}')
    p.add_argument("--vary-label", metavar="A,B,...",
                   help="answer `label` with one of these, chosen by the CRC-32 of the prompt's query (bench/faults.py "
                        "knows which label each pair must get)")
    args = p.parse_args(argv)
    answers = json.loads(args.answers)
    if args.vary_label:
        answers["label"] = label_by_query(args.vary_label.split(","))
    server = FaultServer(answers, latency=args.latency, faults=_parse_faults(args.faults),
                         seed=args.seed, retry_after=args.retry_after, hang=args.hang, port=args.port).start()
    print(f"URL {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()


try:  # `from tests.fault_server import fault_server` gives any test module a started server (default answers)
    import pytest

    @pytest.fixture
    def fault_server():
        with FaultServer() as server:
            yield server
except ImportError:  # pragma: no cover - the server also runs without pytest
    pass
