"""Keep secrets out of everything we write: error texts are scrubbed of the values of key-like environment variables
(a server or proxy may echo the key in its error body) and of bearer tokens."""

from __future__ import annotations

import os
import re

_KEY_VAR = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._\-]{8,}")


def secret_values() -> list[str]:
    return sorted({v for k, v in os.environ.items() if _KEY_VAR.search(k) and len(v) >= 8}, key=len, reverse=True)


def redact(text: str) -> str:
    for value in secret_values():
        text = text.replace(value, "[REDACTED]")
    return _BEARER.sub(r"\1[REDACTED]", text)
