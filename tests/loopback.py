"""A loopback HTTP server for tests that stand in for an OpenAI-compatible endpoint (127.0.0.1, a free port)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def send_json(handler: BaseHTTPRequestHandler, body: dict) -> None:
    """Answer the handler's request with HTTP 200 and `body` as JSON."""
    payload = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


def chat_completion(model: str | None, choice: dict, completion_tokens: int = 5) -> dict:
    """An OpenAI chat.completion body with one choice and 10 prompt tokens."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": [choice],
            "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens,
                      "total_tokens": 10 + completion_tokens}}


class LoopbackServer:
    """Answers every POST with `respond(body)` (a JSON body in, a JSON body out) on 127.0.0.1 while used as a context
    manager; every request body is kept in `requests`; `url` is its /v1 base."""

    def __init__(self):
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                send_json(self, server.respond(body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def respond(self, body: dict) -> dict:
        """The JSON answer to one request body (subclasses decide)."""
        raise NotImplementedError

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
