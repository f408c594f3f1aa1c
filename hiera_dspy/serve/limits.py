"""The service's limits and where it listens: settings with defaults, each checked once when the app is made."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from hiera_dspy.errors import RequestError

LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True)
class Limits:
    """What one request and the whole service may take.

    - `max_body_bytes`: a larger body gets 413 (default 1 MiB: some 250 pairs of 4,000-character items);
    - `max_batch`: pairs in one request, more get 413 (default 256);
    - `max_text_chars`: characters of one field (query, item_title, item_text), more get 422 (default 100,000);
    - `max_in_flight`: requests accepted at once, more get 503 with Retry-After (default 64);
    - `workers`: batches judged at once (default 1: a learned judge is CPU-bound and batches what arrives together;
      raise it for an LLM judge, whose time is spent waiting on its endpoint).
    """

    max_body_bytes: int = 1024 * 1024
    max_batch: int = 256
    max_text_chars: int = 100_000
    max_in_flight: int = 64
    workers: int = 1

    def __post_init__(self):
        for name in ("max_body_bytes", "max_batch", "max_text_chars", "max_in_flight", "workers"):
            if getattr(self, name) < 1:
                raise RequestError(f"serve limit {name} must be at least 1, got {getattr(self, name)}")


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (127.0.0.0/8, ::1) or `localhost`."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """A service on anything but loopback requires a bearer token; RequestError saying how to give one."""
    if not is_loopback(host) and not token:
        raise RequestError(f"--host {host} is reachable from other machines: it requires a bearer token; put one in "
                           f"an environment variable and pass --token-env VAR")
