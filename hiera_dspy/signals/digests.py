"""File digests: what pins a model file (the fine-tuned cross-encoder, an ONNX export) to the bytes it was made of."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256(path: Path) -> str:
    """The file's SHA-256 (hex), read in 1 MB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
