"""A small client for OpenAI's Files and Batches endpoints (stdlib HTTP; any compatible server works).

    POST /files (multipart: purpose=batch, file=<JSONL>)      -> {"id": "file-..."}
    POST /batches {input_file_id, endpoint, completion_window} -> {"id": "batch_...", "status": "validating"}
    GET  /batches/{id}                                         -> status, request_counts, output/error file ids
    GET  /batches?limit=100[&after=id]                         -> a page of batches (to adopt one created before a crash)
    GET  /files/{id}/content                                   -> JSONL of {"custom_id", "response": {"status_code",
                                                                  "body"}, "error"}
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

from hiera_dspy.errors import HieraError
from hiera_dspy.secrets import redact


class BatchAPIError(HieraError, RuntimeError):
    """An HTTP error from the batch API (the key never appears in the message)."""


class BatchClient:
    """Files and Batches calls against one OpenAI-compatible base URL, with an optional bearer key."""
    def __init__(self, base_url: str, api_key: str | None, timeout: float = 120.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def _request(self, method: str, path: str, data: bytes | None = None, content_type: str | None = None) -> bytes:
        req = urllib.request.Request(f"{self.base_url}{path}", data=data, method=method)
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        if content_type:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            raise BatchAPIError(redact(f"{method} {path}: HTTP {exc.code}: {detail}")) from None
        except urllib.error.URLError as exc:
            raise BatchAPIError(f"{method} {self.base_url}{path}: {exc.reason}") from None

    def _json(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        return json.loads(self._request(method, path, data, "application/json" if data is not None else None))

    def upload(self, jsonl: bytes, filename: str = "requests.jsonl") -> str:
        """Upload a batch input file; returns its file id."""
        boundary = uuid.uuid4().hex
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'.encode(),
                 (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                  "Content-Type: application/jsonl\r\n\r\n").encode(), jsonl, f"\r\n--{boundary}--\r\n".encode()]
        out = json.loads(self._request("POST", "/files", b"".join(parts), f"multipart/form-data; boundary={boundary}"))
        return out["id"]

    def create(self, input_file_id: str, window: str = "24h", metadata: dict | None = None) -> dict:
        """Start a chat-completions batch over an uploaded input file; return the new batch object."""
        return self._json("POST", "/batches", {"input_file_id": input_file_id, "endpoint": "/v1/chat/completions",
                                               "completion_window": window, "metadata": metadata or {}})

    def retrieve(self, batch_id: str) -> dict:
        """The batch object now: status, request counts and output/error file ids."""
        return self._json("GET", f"/batches/{batch_id}")

    def find(self, input_file_id: str) -> dict | None:
        """The batch created from `input_file_id`, if any (newest pages first)."""
        after = None
        while True:
            page = self._json("GET", "/batches?limit=100" + (f"&after={after}" if after else ""))
            for batch in page.get("data") or []:
                if batch.get("input_file_id") == input_file_id:
                    return batch
            if not page.get("has_more") or not page.get("data"):
                return None
            after = page["data"][-1]["id"]

    def content(self, file_id: str) -> str:
        """A stored file's text (a batch's output or error JSONL)."""
        return self._request("GET", f"/files/{file_id}/content").decode()
