"""A compiled judge as an HTTP service (`hiera-dspy serve --judge ART`): an ASGI app on Starlette, run by uvicorn.

The app (`app.create_app`) calls `hiera_dspy.api` and nothing below it; its limits are settings (`limits.Limits`);
pairs that arrive together are judged together (`batcher.Batcher`). docs/serve.md shows the endpoints, a curl call
and an OpenSearch ML connector pointing at it.

Starlette and uvicorn come with the `serve` extra; `require_extra` says so, as an error, where they are missing.
"""

from __future__ import annotations

import importlib.util

from hiera_dspy.errors import RequestError

EXTRA = ("starlette", "uvicorn")  # what `pip install 'hiera-dspy[serve]'` brings


def require_extra() -> None:
    """A RequestError naming the extra to install when a package of the `serve` extra is missing."""
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise RequestError(f"hiera-dspy serve needs {' and '.join(missing)}, which the serve extra installs: "
                           f"pip install 'hiera-dspy[serve]'")
