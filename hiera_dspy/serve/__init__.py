"""A compiled judge as an HTTP service (`hiera-dspy serve --judge ART`): an ASGI app on Starlette, run by uvicorn.

The app (`app.create_app`) calls `hiera_dspy.api` and nothing below it; its limits are settings (`limits.Limits`);
pairs that arrive together are judged together (`batcher.Batcher`). docs/serve.md shows the endpoints, a curl call
and an OpenSearch ML connector pointing at it.
"""
