"""Keep secrets out of everything we write or print, by value: every key handed to an LM (whatever the name of the
variable it came from), the values of key-like environment variables and bearer tokens are replaced by [REDACTED]
(a server or proxy may echo the key in its error body).

`redact(text)` scrubs one text, `redact_obj(obj)` every string in a JSON-like object (run store rows), and
`redact_output()` (the CLIs call it first) every write to stdout and stderr: prints, warnings, logging and tracebacks.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading

_KEY_VAR = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._\-]{8,}")
MIN_LENGTH = 8  # shorter values ("local", the dummy key of a keyless server) are not secrets and would mangle text
_known: set[str] = set()
_lock = threading.Lock()


def remember_key(value) -> None:
    """Redact `value` from now on: a key handed to an LM."""
    if isinstance(value, str) and len(value) >= MIN_LENGTH:
        with _lock:
            _known.add(value)


def remember_lm_keys(lms) -> None:
    """Remember the keys of LMs a caller built: a RoleLMs (the LMs built so far, ensemble pool included; an LM built
    later from a spec is remembered by make_lm) or a mapping of LMs."""
    for lm in lms.built() if hasattr(lms, "built") else (lms or {}).values():
        remember_key((getattr(lm, "kwargs", None) or {}).get("api_key"))


def secret_values() -> list[str]:
    """Every value to redact, longest first (so a key that contains another is replaced whole)."""
    global _sorted
    env = _env_secrets()
    with _lock:
        if _sorted is None or _sorted[0] is not env or _sorted[1] != len(_known):
            _sorted = (env, len(_known), sorted(env | _known, key=len, reverse=True))
        return list(_sorted[2])


_env: tuple[dict, set[str]] | None = None  # (the environment as last read, its secret values)
_sorted: tuple[set[str], int, list[str]] | None = None  # (_env's values, len(_known), secret_values()) as last given


def _env_secrets() -> set[str]:
    """The values of key-like environment variables, read again only when the environment changed (its raw
    mapping compares equal to the copy kept: one dict comparison instead of decoding every variable per call)."""
    global _env
    data = getattr(os.environ, "_data", None)  # what os.environ keeps; absent: read every time
    last = _env
    if data is not None and last is not None and last[0] == data:
        return last[1]
    snapshot = dict(data) if data is not None else None
    found = {v for k, v in os.environ.items() if _KEY_VAR.search(k) and len(v) >= MIN_LENGTH}
    if snapshot is not None:
        _env = (snapshot, found)
    return found


def redact(text: str, values: list[str] | None = None) -> str:
    """`text` with every secret value (default: `secret_values()`) and bearer token replaced by [REDACTED]."""
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, "[REDACTED]")
    return _BEARER.sub(r"\1[REDACTED]", text) if "Bearer" in text else text


def redact_obj(obj, values: list[str] | None = None):
    """`obj` with every string in it (keys and values of dicts, items of lists and tuples) redacted."""
    values = secret_values() if values is None else values
    if isinstance(obj, str):
        return redact(obj, values)
    if isinstance(obj, dict):
        return {redact_obj(k, values): redact_obj(v, values) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_obj(v, values) for v in obj)
    return obj


class RedactingStream:
    """A text stream that redacts what is written to it and otherwise behaves as the stream it wraps."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text) -> int:
        """Write `text` with every secret redacted."""
        self._stream.write(redact(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines) -> None:
        """Write each line, redacted."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def redact_output() -> None:
    """Redact every later write to stdout and stderr, logging handlers that already hold them included (idempotent)."""
    swapped = {}
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, RedactingStream):
            swapped[id(stream)] = RedactingStream(stream)
            setattr(sys, name, swapped[id(stream)])
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if isinstance(handler, logging.StreamHandler) and id(handler.stream) in swapped:
                handler.setStream(swapped[id(handler.stream)])
