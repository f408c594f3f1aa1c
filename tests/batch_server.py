"""A loopback OpenAI Batch API for tests: /v1/files, /v1/batches, /v1/batches/{id}, /v1/files/{id}/content.

Answers each request line like tests/fault_server.py answers /v1/chat/completions (same text, same usage), so a batch
run and a thread-engine run against FaultServer with the same `answers` see identical responses. It enforces what the
real API checks and this project must respect: purpose=batch, endpoint /v1/chat/completions, one model per file,
unique custom_ids, at most `max_requests` lines per file. A batch goes validating -> in_progress -> completed after
`polls_to_complete` retrievals; `hold = True` keeps every batch in_progress (to kill a client mid-batch); `fail_keys`
turns those custom_ids into per-request errors in the error file.

    with BatchServer(answers) as server:      # server.url = http://127.0.0.1:PORT/v1
        ...
        server.submitted                      # Counter custom_id -> times submitted in a created batch
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_server import FaultServer, _completion, _text  # noqa: E402


class BatchServer:
    def __init__(self, answers: dict | None = None, *, polls_to_complete: int = 2, max_requests: int = 50_000):
        self.answerer = FaultServer(answers)  # its answer logic only; never started
        self.polls_to_complete = polls_to_complete
        self.max_requests = max_requests
        self.hold = False
        self.fail_keys: set[str] = set()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.polls: Counter = Counter()
        self.submitted: Counter = Counter()
        self.lines_answered = 0
        self._lock = threading.Lock()
        self._httpd = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "BatchServer":
        handler = type("Handler", (_Handler,), {"srv": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- the API ---------------------------------------------------------------------------------------------------
    def add_file(self, purpose: str, content: bytes) -> tuple[int, dict]:
        if purpose != "batch":
            return 400, {"error": {"message": f"purpose must be batch, not {purpose!r}"}}
        with self._lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = content
        return 200, {"id": file_id, "object": "file", "bytes": len(content), "purpose": purpose}

    def create_batch(self, body: dict) -> tuple[int, dict]:
        content = self.files.get(body.get("input_file_id"))
        if content is None:
            return 404, {"error": {"message": "no such file"}}
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return 400, {"error": {"message": "endpoint must be /v1/chat/completions, window 24h"}}
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        ids = [line["custom_id"] for line in lines]
        models = {line["body"]["model"] for line in lines}
        if len(lines) > self.max_requests or len(set(ids)) != len(ids) or len(models) != 1 or any(
                line.get("url") != "/v1/chat/completions" or line.get("method") != "POST" for line in lines):
            return 400, {"error": {"message": f"invalid batch file ({len(lines)} lines, models {sorted(models)})"}}
        with self._lock:
            batch_id = f"batch_{len(self.batches) + 1}"
            self.batches[batch_id] = {"id": batch_id, "object": "batch", "status": "validating",
                                      "input_file_id": body["input_file_id"], "endpoint": body["endpoint"],
                                      "completion_window": "24h", "metadata": body.get("metadata") or {},
                                      "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                                      "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
            self.submitted.update(ids)
            return 200, dict(self.batches[batch_id])

    def retrieve(self, batch_id: str) -> tuple[int, dict]:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": "no such batch"}}
            self.polls[batch_id] += 1
            if batch["status"] == "validating":
                batch["status"] = "in_progress"
            elif batch["status"] == "in_progress" and not self.hold and self.polls[batch_id] >= self.polls_to_complete:
                self._complete(batch)
            return 200, dict(batch)

    def _complete(self, batch: dict) -> None:
        out, err = [], []
        for n, line in enumerate(self.files[batch["input_file_id"]].decode().splitlines()):
            req = json.loads(line)
            if req["custom_id"] in self.fail_keys:
                err.append({"id": f"req_{n}", "custom_id": req["custom_id"], "response": None,
                            "error": {"code": "server_error", "message": "injected failure"}})
                continue
            body = req["body"]
            text = self.answerer.answer(body)
            prompt_tokens = sum(len(_text(m.get("content")).split()) for m in body.get("messages") or [])
            out.append({"id": f"req_{n}", "custom_id": req["custom_id"], "error": None,
                        "response": {"status_code": 200, "request_id": f"r{n}",
                                     "body": _completion(body["model"], text, prompt_tokens, n)}})
            self.lines_answered += 1
        for key, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[key] = file_id
        batch["status"] = "completed"
        batch["request_counts"] = {"total": len(out) + len(err), "completed": len(out), "failed": len(err)}

    def list_batches(self) -> tuple[int, dict]:
        with self._lock:
            data = [dict(b) for b in reversed(self.batches.values())]
        return 200, {"object": "list", "data": data, "has_more": False}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    srv: BatchServer

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, payload, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if raw is None else "application/jsonl")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        parts = path.split("/")
        if path.endswith("/v1/batches"):
            self._send(*self.srv.list_batches())
        elif len(parts) >= 2 and parts[-2] == "batches":
            self._send(*self.srv.retrieve(parts[-1]))
        elif path.endswith("/content") and parts[-3] == "files":
            content = self.srv.files.get(parts[-2])
            self._send(404, {"error": {"message": "no such file"}}) if content is None else self._send(200, None, content)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.rstrip("/")
        if path.endswith("/v1/files"):
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
            fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                      for part in message.iter_parts()}
            self._send(*self.srv.add_file((fields.get("purpose") or b"").decode(), fields.get("file") or b""))
        elif path.endswith("/v1/batches"):
            self._send(*self.srv.create_batch(json.loads(raw or b"{}")))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
