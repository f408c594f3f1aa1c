"""A circuit breaker per LM endpoint: a run whose endpoint cannot be reached stops, instead of grinding through every
pair in retries.

Two ways to trip, both on connection-level failures only (refused, DNS, TLS: the request never reached a server):

1. a health check before the first pair (`check_health`): a TCP connection (and a TLS handshake for https) to every
   endpoint the run's LMs name, `HEALTH_CHECK_TRIES` tries `HEALTH_CHECK_PAUSE` s apart; nothing is sent to the model;
2. `threshold` consecutive LM calls to one endpoint that fail to connect (after DSPy's own retries of each), counted
   by `RetryingAdapter` around every predictor call (`before_call` / `after_call`); any answer from the server, an
   HTTP error included, resets the count. Rate limits (429), 5xx, timeouts and unparseable answers never count: they
   keep their backoff (hiera_dspy/lm/retry.py) and end as error rows as before.

Once tripped, no new LM call starts (`before_call` raises `EndpointDown`); the engines stop taking pairs, the calls in
flight end, and the run returns its rows with `stopped` set. A pair whose call failed to connect is an error row (a
failure, never a label); a pair not sent has no row. The command-line tools write every output, print the message
(which endpoint, what error, how to resume) and exit with status 3 (`EXIT_STATUS`, as for too many errors): the same
command with --retry-errors then judges the pairs not sent and re-sends the failed ones.

$HIERA_BREAKER_FAILURES (default 5; 0 turns the breaker and the health check off) sets `threshold`. With DSPy's default
transport retries (3: 1 + 2 + 4 s of backoff) a refused call takes ~7 s, so one worker stops in ~35 s.
"""

from __future__ import annotations

import contextvars
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from hiera_dspy import settings
from hiera_dspy.errors import HieraError
from hiera_dspy.lm.intercept import lm_objects

EXIT_STATUS = 3  # what the CLIs exit with: a failure of the run, every output written (as for --max-error-rate)
HEALTH_CHECK_TRIES = 3
HEALTH_CHECK_PAUSE = 1.0  # seconds between health-check tries
HEALTH_CHECK_TIMEOUT = 5.0  # seconds for one TCP connect (and TLS handshake)
CONNECTION_ERRORS = (ConnectionRefusedError, socket.gaierror, ssl.SSLError, ssl.CertificateError)
CONNECT_ERROR_NAMES = {"ConnectError", "APIConnectionError"}  # DSPy's lm15 transport, LiteLLM: "could not connect"
RESUME = ("when it answers again, rerun the same command with --retry-errors: it judges the pairs not sent and "
          "re-sends the failed ones")

_current: contextvars.ContextVar[CircuitBreaker | None] = contextvars.ContextVar("hiera_breaker", default=None)


class EndpointDown(HieraError):
    """The run stopped because an LM endpoint could not be reached; says which, with what error, and how to resume.
    `exit_status` is the CLIs' exit status (3)."""

    exit_status = EXIT_STATUS

    def __init__(self, endpoint: str, error: str, failures: int = 0, health_check: bool = False):
        self.endpoint, self.error, self.failures, self.health_check = endpoint, error, failures, health_check
        if health_check:
            why = f"the health check before the first pair failed {HEALTH_CHECK_TRIES} times ({error}); nothing was sent"
        else:
            why = f"{failures} calls in a row failed to connect (the last: {error}); the run stopped"
        super().__init__(f"LM endpoint {endpoint} is unreachable: {why}; every output is written; {RESUME}")


def endpoint_of(lm) -> str | None:
    """The URL an LM sends its requests to (its api_base), or None when it names none (a provider's default, an
    in-process model)."""
    kwargs = getattr(lm, "kwargs", None) or {}
    base = kwargs.get("api_base") or kwargs.get("base_url")
    return str(base).rstrip("/") if base else None


def endpoints_of(lms) -> list[str]:
    """The distinct endpoints of `lms` without building any LM: for a RoleLMs, the api_base of every role's and
    ensemble member's spec plus those of the LMs already built (a method that calls no LM builds none, and a local
    model is not loaded to be checked); for a mapping of LMs, each LM's."""
    if hasattr(lms, "built"):
        pools = [getattr(lms, "roles", None), getattr(lms, "ensemble", None)]
        specs = [spec for pool in pools if pool is not None for spec in pool.specs.values()]
        found = [spec.api_base for spec in specs] + [endpoint_of(lm) for lm in lms.built()]
    else:
        found = [endpoint_of(lm) for lm in lm_objects(lms or {})]
    return list(dict.fromkeys(e for e in found if e))


def is_connection_failure(exc: BaseException) -> bool:
    """True when the request never reached a server: connection refused, a name that does not resolve, a failed TLS
    handshake (anywhere in the exception's cause chain)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, CONNECTION_ERRORS) or type(exc).__name__ in CONNECT_ERROR_NAMES:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class CircuitBreaker:
    """Consecutive connection failures per endpoint; `tripped` holds the EndpointDown once `threshold` is reached
    (threshold 0: never). Thread-safe: every worker of a run shares one."""

    def __init__(self, threshold: int | None = None):
        self.threshold = settings.breaker_failures(5) if threshold is None else threshold
        self.failures: dict[str, int] = {}
        self.tripped: EndpointDown | None = None
        self._lock = threading.Lock()

    def before_call(self, lm) -> None:
        """Raise the EndpointDown if the breaker has tripped: no new call starts."""
        if self.tripped is not None:
            raise self.tripped

    def after_call(self, lm, exc: BaseException | None) -> None:
        """Count one finished call to `lm`'s endpoint: a connection failure adds one, anything else resets."""
        endpoint = endpoint_of(lm)
        if endpoint is None or not self.threshold:
            return
        with self._lock:
            if exc is None or not is_connection_failure(exc):
                self.failures[endpoint] = 0
                return
            self.failures[endpoint] = n = self.failures.get(endpoint, 0) + 1
            if n >= self.threshold and self.tripped is None:
                self.tripped = EndpointDown(endpoint, _short(exc), n)

    def check_health(self, lms) -> None:
        """Check every endpoint of `lms` before the first pair (`check_endpoint`); trips and raises EndpointDown
        for the first one that cannot be reached. A no-op with threshold 0."""
        if not self.threshold:
            return
        for endpoint in endpoints_of(lms):
            error = check_endpoint(endpoint)
            if error is not None:
                self.tripped = EndpointDown(endpoint, error, health_check=True)
                raise self.tripped


def check_endpoint(url: str, tries: int = HEALTH_CHECK_TRIES, pause: float = HEALTH_CHECK_PAUSE,
                   timeout: float = HEALTH_CHECK_TIMEOUT) -> str | None:
    """None when a TCP connection (and for https a TLS handshake) to `url`'s host and port succeeds within `tries`;
    else the last error as text. Sends no request."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    secure = parts.scheme == "https"
    host, port = parts.hostname or "", parts.port or (443 if secure else 80)
    error = None
    for attempt in range(max(1, tries)):
        if attempt:
            time.sleep(pause)
        try:
            with socket.create_connection((host, port), timeout=timeout) as sock:
                if secure:
                    with ssl.create_default_context().wrap_socket(sock, server_hostname=host):
                        pass
            return None
        except (OSError, ssl.SSLError) as exc:
            error = _short(exc)
    return error


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "…"


@contextmanager
def bound(breaker: CircuitBreaker | None) -> Iterator[CircuitBreaker | None]:
    """Within this block (this thread, or this task and the tasks and threads it starts with a copied context),
    every predictor call reports to `breaker`."""
    token = _current.set(breaker)
    try:
        yield breaker
    finally:
        _current.reset(token)


def before_call(lm) -> None:
    """`CircuitBreaker.before_call` of the bound breaker (a no-op without one)."""
    breaker = _current.get()
    if breaker is not None:
        breaker.before_call(lm)


def after_call(lm, exc: BaseException | None) -> None:
    """`CircuitBreaker.after_call` of the bound breaker (a no-op without one)."""
    breaker = _current.get()
    if breaker is not None:
        breaker.after_call(lm, exc)
