"""Serve a compiled judge over HTTP: POST /judge (one pair or a batch: label, confidence, distribution), GET /health,
GET /metrics (JSON).

    python -m eval.serve --judge artifacts/msrd/embed-lr.json                       # http://127.0.0.1:8321
    HIERA_SERVE_TOKEN=... python -m eval.serve --judge ART --host 0.0.0.0 --token-env HIERA_SERVE_TOKEN

It listens on 127.0.0.1 unless --host says otherwise, and then requires a bearer token, read from the environment
variable --token-env names (never from the command line, never logged). The limits (--max-body-bytes, --max-batch,
--max-in-flight, --workers) have defaults (hiera_dspy/serve/limits.py). An LLM judge's models are reached at
--api-base with the key in --api-key-env, never at the artifact's endpoints. docs/serve.md: the endpoints, a curl
call and an OpenSearch ML connector.
"""

from __future__ import annotations

import argparse
import os
import sys

from hiera_dspy.api import load_served
from hiera_dspy.cli.options import cli_main
from hiera_dspy.errors import RequestError
from hiera_dspy.serve import require_extra
from hiera_dspy.serve.limits import Limits, check_exposure


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.serve`."""
    p = argparse.ArgumentParser(prog="python -m eval.serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", required=True, help="the compiled judge's artifact (optimize.compile --artifact)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8321, help="port (default 8321)")
    p.add_argument("--token-env", help="environment variable holding the bearer token callers must send "
                                       "(required with a --host other than loopback)")
    d = Limits()
    p.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes, help=f"default {d.max_body_bytes}")
    p.add_argument("--max-batch", type=int, default=d.max_batch, help=f"pairs a request (default {d.max_batch})")
    p.add_argument("--max-in-flight", type=int, default=d.max_in_flight,
                   help=f"requests at once, more get 503 (default {d.max_in_flight})")
    p.add_argument("--workers", type=int, default=d.workers,
                   help=f"batches judged at once (default {d.workers}; raise it for an LLM judge)")
    p.add_argument("--api-base", help="endpoint of an LLM judge's models (default: each provider's own)")
    p.add_argument("--api-key-env", help="environment variable holding that endpoint's key")
    return p


def main(argv: list[str] | None = None) -> None:
    """Load the judge, then serve it until interrupted (the serve extra installed: else an error saying so)."""
    a = parser().parse_args(argv)
    require_extra()
    import uvicorn

    from hiera_dspy.serve.app import create_app

    token = None
    if a.token_env:
        token = os.environ.get(a.token_env)
        if not token:
            raise RequestError(f"--token-env {a.token_env}: the variable is not set or empty")
    check_exposure(a.host, token)
    limits = Limits(a.max_body_bytes, a.max_batch, Limits.max_text_chars, a.max_in_flight, a.workers)
    served = load_served(a.judge, api_base=a.api_base, api_key_env=a.api_key_env)
    app = create_app(served, token=token, limits=limits)
    print(f"serving {served.method} ({a.judge}) on http://{a.host}:{a.port}: POST /judge, GET /health, GET /metrics"
          f"{' (bearer token required)' if token else ''}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    cli_main(main)
