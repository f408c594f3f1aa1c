"""Review in the browser what the machine could not decide; decisions go back into the run and its qrels.

    python -m eval.review --run RUN_ID [--port 8765] [--least-sure 50] [--who NAME]

Serves one page on 127.0.0.1 (no internet, no CDN assets): the queue (DREAM's escalations, then the `--least-sure`
judgments of lowest confidence), each with its query, item, the machine label with its confidence and source, and
the argument or debate transcript. A person picks a label with a click or a key (1..9); the decision is stored beside
the machine label (never replacing it) with who and when, and a labelling run's qrels.txt and labels.jsonl/new.jsonl
are rewritten at once (source "human"). HTTP API: GET /api/queue, POST /api/decisions {"id", "label", "who"}.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from hiera_dspy.cli.options import add_renamed, cli_main, open_store
from hiera_dspy.review.decisions import UnknownPair
from hiera_dspy.review.session import Review

PAGE = Path(__file__).with_name("review_page.html")
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
       "img-src 'self'; base-uri 'none'; form-action 'none'")


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.review`."""
    p = argparse.ArgumentParser(prog="python -m eval.review", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="run id (printed by eval.label, eval.holes, eval.run)")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--least-sure", type=int, default=50, metavar="N",
                   help="queue the N least confident judgments besides escalations")
    p.add_argument("--who", default=None, help="reviewer name recorded with each decision (default: your user name)")
    add_renamed(p, "--least-sure", "--budget")  # the old spelling, one release
    return p


class Handler(BaseHTTPRequestHandler):
    """The review page's HTTP handler: the page, the queue as JSON, and decisions posted back (local host only)."""
    review: Review  # set on the subclass made by make_server

    def do_GET(self):  # noqa: N802 - http.server's naming
        """Serve the page or the review queue."""
        if not self._local_host():
            return
        if self.path in ("/", "/index.html"):
            self._send(200, PAGE.read_bytes(), "text/html; charset=utf-8")
        elif self.path == "/favicon.ico":
            self._send(204, b"", "image/x-icon")
        elif self.path == "/api/queue":
            self._json(200, self.review.payload())
        else:
            self._json(404, {"error": f"no such page {self.path!r}"})

    def do_POST(self):  # noqa: N802
        """Record one human decision posted as JSON."""
        if not self._local_host():
            return
        if self.path != "/api/decisions":
            return self._json(404, {"error": f"no such endpoint {self.path!r}"})
        if not self.headers.get("Content-Type", "").startswith("application/json"):
            return self._json(415, {"error": "send JSON (Content-Type: application/json)"})
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            pair_id, label, who = str(body["id"]), str(body["label"]), str(body.get("who") or self.review.who)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            return self._json(400, {"error": f"expected JSON {{\"id\", \"label\", \"who\"}} ({exc})"})
        try:
            self._json(200, self.review.decide(pair_id, label, who))
        except UnknownPair as exc:
            self._json(404, {"error": exc.args[0]})
        except ValueError as exc:
            self._json(400, {"error": str(exc)})

    def _local_host(self) -> bool:
        """Refuse requests addressed to another host name (a DNS-rebinding page cannot reach the API)."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        if host in ("127.0.0.1", "localhost", "::1"):
            return True
        self._json(403, {"error": "only http://127.0.0.1 is served"})
        return False

    def _json(self, status: int, doc: dict) -> None:
        self._send(status, json.dumps(doc, default=str).encode(), "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):  # one short line per request on stderr
        """One short line per request on stderr."""
        sys.stderr.write(f"review: {self.command} {self.path} -> {args[1] if len(args) > 1 else ''}\n")


def make_server(review: Review, port: int = 8765) -> ThreadingHTTPServer:
    """An HTTP server for `review` on 127.0.0.1:`port` (0 = any free port); call serve_forever()."""
    handler = type("ReviewHandler", (Handler,), {"review": review})
    return ThreadingHTTPServer(("127.0.0.1", port), handler)


def main(argv: list[str] | None = None) -> None:
    """Serve a run's review queue on 127.0.0.1 until Ctrl-C."""
    args = parser().parse_args(argv)
    store = open_store(args)
    review = Review(store, args.run, args.least_sure, args.who)
    queued = review.queue()
    server = make_server(review, args.port)
    print(f"reviewing run {args.run}: {len(queued)} judgments queued "
          f"({sum(e.reason == 'escalated' for e in queued)} escalated); "
          f"open http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    cli_main(main)
