"""The metadata of a GGUF file, read without llama.cpp: its chat template and its special tokens.

A GGUF file starts with a key/value section (`general.*`, `tokenizer.*`, ...) before its tensors; this module parses
that section only (no tensor is read). What the project needs from it:

- `chat_template(path)`: `tokenizer.chat_template`, the Jinja template the model was trained with (None if absent);
- `special_tokens(path)`: the text of every control / user-defined token (Qwen's `<|im_start|>`, `<|im_end|>`, ...),
  which a prompt built from untrusted text must never contain (llama.cpp parses them as markers);
- `bos_eos(path)`: the texts of the begin/end-of-sequence tokens (the template's `bos_token` / `eos_token`).

Results are remembered per (path, size, mtime). Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import os
import struct
from functools import lru_cache
from typing import Any, BinaryIO

from hiera_dspy.errors import HieraError

# value type id -> struct format of a scalar (8: string, 9: array are handled apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
TOKEN_CONTROL, TOKEN_USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values that llama.cpp parses as special


class GGUFError(HieraError):
    """The file is not a GGUF file this reader understands."""


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("truncated GGUF metadata")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    return f.read(_read(f, "<Q")).decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item, count = _read(f, "<I"), _read(f, "<Q")
        if item in _SCALARS:  # one read for the whole array
            fmt = _SCALARS[item]
            data = f.read(struct.calcsize(fmt) * count)
            return list(struct.unpack(f"<{count}{fmt[1]}", data))
        return [_value(f, item) for _ in range(count)]
    if kind not in _SCALARS:
        raise GGUFError(f"unknown GGUF value type {kind}")
    return _read(f, _SCALARS[kind])


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """Every key/value pair of the file's metadata section."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file")
        version = _read(f, "<I")
        if version < 2:
            raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or later)")
        _read(f, "<Q")  # tensor count
        return {_string(f): _value(f, _read(f, "<I")) for _ in range(_read(f, "<Q"))}


@lru_cache(maxsize=8)
def _cached(path: str, size: int, mtime: float) -> dict[str, Any]:
    meta = read_metadata(path)
    tokens = meta.get("tokenizer.ggml.tokens") or []
    types = meta.get("tokenizer.ggml.token_type") or []
    special = tuple(t for t, k in zip(tokens, types) if k in (TOKEN_CONTROL, TOKEN_USER_DEFINED) and t)

    def token(key: str) -> str:
        i = meta.get(key)
        return tokens[i] if isinstance(i, int) and 0 <= i < len(tokens) else ""

    return {"chat_template": meta.get("tokenizer.chat_template"), "special": special,
            "bos": token("tokenizer.ggml.bos_token_id"), "eos": token("tokenizer.ggml.eos_token_id"),
            "add_bos": bool(meta.get("tokenizer.ggml.add_bos_token", False))}


def _info(path: str | os.PathLike) -> dict[str, Any]:
    st = os.stat(path)
    return _cached(str(path), st.st_size, st.st_mtime)


def chat_template(path: str | os.PathLike) -> str | None:
    """The model's own chat template (`tokenizer.chat_template`), or None when the file has none."""
    return _info(path)["chat_template"]


def special_tokens(path: str | os.PathLike) -> tuple[str, ...]:
    """The texts of the model's control and user-defined tokens (what llama.cpp parses as special)."""
    return _info(path)["special"]


def bos_eos(path: str | os.PathLike) -> tuple[str, str]:
    """(bos_token, eos_token) texts ("" when the file names none)."""
    info = _info(path)
    return info["bos"], info["eos"]
