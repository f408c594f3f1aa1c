"""The ASGI app: `POST /judge`, `GET /health`, `GET /metrics` over a judge loaded by `hiera_dspy.api.load_served`.

- `POST /judge` takes one pair, `{"query", "item_title", "item_text" [, "id"]}`, and answers `{"id", "label",
  "confidence", "confidence_source", "distribution", "error"}`; or a batch, `{"pairs": [pair, ...]}`, and answers
  `{"judgments": [answer, ...]}` in the same order. `item_title` and `item_text` may be empty, not both. A judgment
  that failed has `label` null and `error` set: a failure is never a label (the response is still 200: the request
  was good).
- `GET /health`: `{"status": "ok", "method", "labels", "judge"}`; open to every caller (it tells no judgment).
- `GET /metrics`: JSON counters since start: requests by status, pairs judged, failed judgments, batches, requests in
  flight, and the latency of `/judge` (p50, p90, p99 and max over the last 10,000 requests, in ms).
With a token, `/judge` and `/metrics` require `Authorization: Bearer TOKEN` (401 otherwise). Every other mistake is a
4xx with `{"error": "..."}` saying what was wrong: 400 malformed JSON, 413 a body or a batch over the limit, 422 a
missing or mistyped field (named, e.g. `pairs[3].query`), 404/405 an unknown path or method; 503 when more than
`max_in_flight` requests are waiting. The server stays up whatever a request holds.
"""

from __future__ import annotations

import hmac
import json
import time
from collections import Counter, deque
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hiera_dspy.api import PairRequest, ServedJudge, Verdict
from hiera_dspy.errors import HieraError
from hiera_dspy.serve.batcher import Batcher
from hiera_dspy.serve.limits import Limits

FIELDS = ("query", "item_title", "item_text")
DRAIN_BYTES = 64 * 1024 * 1024  # an oversized body is read (and dropped) up to this, so its client reads the 413
LATENCY_WINDOW = 10_000


class Refused(HieraError):
    """A request answered with a 4xx/5xx and a message (caught by the app, never past it)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class Metrics:
    """Counters since start and the latencies of the last `LATENCY_WINDOW` judge requests."""

    def __init__(self):
        self.started = time.time()
        self.statuses: Counter = Counter()
        self.pairs = self.failed = self.in_flight = 0
        self.latencies: deque = deque(maxlen=LATENCY_WINDOW)

    def as_dict(self, batches: int) -> dict:
        """The counters as GET /metrics answers them; `batches`, the batches judged so far."""
        ordered = sorted(self.latencies)

        def pct(q: float) -> float | None:
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3) if ordered else None

        return {"uptime_s": round(time.time() - self.started, 1),
                "requests": {str(k): v for k, v in sorted(self.statuses.items())},
                "pairs_judged": self.pairs, "judgments_failed": self.failed, "batches": batches,
                "in_flight": self.in_flight,
                "latency_ms": {"n": len(ordered), "p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99),
                               "max": round(ordered[-1] * 1000, 3) if ordered else None}}


def create_app(judge: ServedJudge, *, token: str | None = None, limits: Limits | None = None) -> Starlette:
    """The service over `judge`; `token` (if any) is required of `/judge` and `/metrics` callers."""
    limits = limits or Limits()
    metrics = Metrics()
    batcher = Batcher(judge.judge, limits.max_batch, limits.workers)

    def authorize(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            raise Refused(401, "missing or wrong bearer token (send Authorization: Bearer TOKEN)",
                          {"WWW-Authenticate": "Bearer"})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "method": judge.method, "labels": list(judge.scheme.labels),
                             "judge": judge.path.name})

    async def metrics_endpoint(request: Request) -> JSONResponse:
        try:
            authorize(request)
        except Refused as exc:
            return _refusal(exc)
        return JSONResponse(metrics.as_dict(batcher.batches))

    async def judge_endpoint(request: Request) -> JSONResponse:
        start = time.perf_counter()
        metrics.in_flight += 1
        try:
            if metrics.in_flight > limits.max_in_flight:
                raise Refused(503, f"busy: more than {limits.max_in_flight} requests in flight; retry shortly",
                              {"Retry-After": "1"})
            authorize(request)
            body = await _body(request, limits.max_body_bytes)
            pairs, single = _pairs(body, limits)
            verdicts = await batcher.submit(pairs)
            metrics.pairs += len(verdicts)
            metrics.failed += sum(v.error is not None for v in verdicts)
            answer = _answer(verdicts[0]) if single else {"judgments": [_answer(v) for v in verdicts]}
            response = JSONResponse(answer)
        except Refused as exc:
            response = _refusal(exc)
        finally:
            metrics.in_flight -= 1
        metrics.statuses[response.status_code] += 1
        if response.status_code == 200:
            metrics.latencies.append(time.perf_counter() - start)
        return response

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        metrics.statuses[status] += 1
        return JSONResponse({"error": f"{request.method} {request.url.path}: {detail}; the service has POST "
                                      f"/judge, GET /health and GET /metrics"}, status_code=status)

    @asynccontextmanager
    async def lifespan(app):
        batcher.start()
        yield
        await batcher.stop()

    routes = [Route("/judge", judge_endpoint, methods=["POST"]), Route("/health", health, methods=["GET"]),
              Route("/metrics", metrics_endpoint, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: not_found})


def _refusal(exc: Refused) -> JSONResponse:
    return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)


async def _body(request: Request, limit: int) -> object:
    """The request's JSON; Refused 413 past `limit` bytes, 400 for what is not JSON."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > DRAIN_BYTES:
        raise Refused(413, f"body of {length} bytes is over the limit of {limit} bytes")
    body, seen = bytearray(), 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen <= limit:
            body += chunk
        elif seen > DRAIN_BYTES:
            break
    if seen > limit:
        raise Refused(413, f"body of {seen if seen <= DRAIN_BYTES else 'over ' + str(DRAIN_BYTES)} bytes is over "
                           f"the limit of {limit} bytes; send fewer pairs a request")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Refused(400, f"the body is not JSON ({exc}); send {{\"query\", \"item_title\", \"item_text\"}} or "
                           f"{{\"pairs\": [...]}}") from None


def _pairs(body: object, limits: Limits) -> tuple[list[PairRequest], bool]:
    """The pairs of a request body, and whether it was a single pair; Refused 413/422 naming what is wrong."""
    if not isinstance(body, dict):
        raise Refused(422, f"the body is a JSON {type(body).__name__}; send an object: {{\"query\", \"item_title\", "
                           f"\"item_text\"}} or {{\"pairs\": [...]}}")
    if "pairs" not in body:
        return [_pair(body, "", 0, limits)], True
    items = body["pairs"]
    if not isinstance(items, list) or not items:
        raise Refused(422, "pairs: expected a non-empty list of {\"query\", \"item_title\", \"item_text\"}")
    if len(items) > limits.max_batch:
        raise Refused(413, f"pairs: {len(items)} pairs is over the limit of {limits.max_batch} a request; split it")
    return [_pair(item, f"pairs[{i}].", i, limits) for i, item in enumerate(items)], False


def _pair(item: object, at: str, index: int, limits: Limits) -> PairRequest:
    if not isinstance(item, dict):
        raise Refused(422, f"{at or 'body'}: expected an object, got {type(item).__name__}")
    values = {}
    for name in FIELDS:
        value = item.get(name, "" if name != "query" else None)
        if not isinstance(value, str):
            what = "missing" if value is None else f"a {type(value).__name__}, not text"
            raise Refused(422, f"{at}{name}: {what}; every pair needs query (text), item_title and item_text")
        if len(value) > limits.max_text_chars:
            raise Refused(422, f"{at}{name}: {len(value)} characters is over the limit of {limits.max_text_chars}")
        values[name] = value
    if not values["query"].strip():
        raise Refused(422, f"{at}query: empty; every pair needs its query")
    if not (values["item_title"].strip() or values["item_text"].strip()):
        raise Refused(422, f"{at}item_title, {at}item_text: both missing or empty; a pair needs its item")
    pair_id = item.get("id", str(index))
    if not isinstance(pair_id, (str, int)) or isinstance(pair_id, bool):
        raise Refused(422, f"{at}id: expected text or a number")
    return PairRequest(values["query"], values["item_title"], values["item_text"], str(pair_id))


def _answer(v: Verdict) -> dict:
    return {"id": v.id, "label": v.label, "confidence": v.confidence, "confidence_source": v.confidence_source,
            "distribution": v.distribution, "error": v.error}
