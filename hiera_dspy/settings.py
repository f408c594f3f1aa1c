"""Every environment knob of hiera-dspy, read in one place (each call reads the environment afresh, so a test or a
caller that sets a variable later is honoured).

| variable | default | what |
| --- | --- | --- |
| HIERA_CACHE_DIR | $XDG_CACHE_HOME/hiera-dspy, else ~/.cache/hiera-dspy | cache root: models, knowledge, DSPy's cache |
| HIERA_RUNS_DIR | runs | run store and run folders |
| HIERA_DATA_DIR | (unset) | datasets named without a path (data/locate.py) |
| HIERA_LM | (the embedded local model) | default model of every role when no --lm is given |
| HIERA_LM_NUM_RETRIES, HIERA_LM_TIMEOUT | 3, 300 s | DSPy's transport retries and read timeout per request |
| HIERA_RETRY_ATTEMPTS, _BASE_DELAY, _MAX_DELAY, _MAX_RETRY_AFTER | 3, 1, 30, 120 s | content retries (retry.py) |
| HIERA_BREAKER_FAILURES | 5 | connection failures in a row that stop a run (lm/breaker.py; 0: off) |
| HIERA_ITEM_CHARS | 1500 | characters of item text a judge reads (untrusted/blocks.py); longer texts are cut, flagged |
| HIERA_LOCAL_THREADS, _CTX, _RAM_CACHE_MB, _MAX_CHARS, _EXTRA_BUFTS | see local.py | the embedded model |
| HIERA_LOCAL_RUNTIME | the first installed | the llama.cpp binding: xllamacpp or llama-cpp-python (lm/runtimes) |
| HIERA_PROBE_BATCH | 8 | prompts per llama.cpp batch for the probe's hidden states (methods/probe_states.py) |
| HIERA_MODEL_PATH, HIERA_OFFLINE, HIERA_NO_MIRROR, HIERA_KEEP_MIRROR, HIERA_NO_PROGRESS | | model_store, runs/progress |
| HF_ENDPOINT, HF_HUB_OFFLINE | huggingface.co, off | model_store (huggingface_hub's own names) |
| HIERA_REFERENCE, HIERA_REFERENCE_EMBEDDER | on, auto | the embed-lr reference line of eval.run / optimize.compile |

Process environment that libraries read at import (`LITELLM_LOCAL_MODEL_COST_MAP`: litellm never fetches its cost map
from the internet; `DSPY_CACHEDIR`: DSPy's response cache under our cache root) is set by `configure_process()`, which
`hiera_dspy/__init__.py` calls before anything imports dspy.
"""

from __future__ import annotations

import os
from pathlib import Path

from hiera_dspy.errors import HieraError

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def process_env() -> dict[str, str]:
    """The environment other libraries read at import, as this process has it (defaults filled in): what
    `configure_process` sets here and what a worker process (Ray) must be given."""
    return {"LITELLM_LOCAL_MODEL_COST_MAP": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") or "True",  # never fetch
            "DSPY_CACHEDIR": os.environ.get("DSPY_CACHEDIR") or str(cache_dir() / "dspy")}  # litellm's map online


def configure_process() -> None:
    """Defaults for the environment other libraries read at import; a value the user set wins."""
    for name, value in process_env().items():
        os.environ.setdefault(name, value)


def env_text(name: str, default: str | None = None) -> str | None:
    """The variable's value, stripped; `default` when unset or empty."""
    raw = os.environ.get(name, "").strip()
    return raw or default


def env_flag(name: str) -> bool:
    """True when the variable is 1/true/yes/on (any case)."""
    return (env_text(name) or "").lower() in TRUE


def env_choice(name: str) -> bool | None:
    """A tri-state flag: True (1/true/yes/on), False (0/false/no/off), None (unset or anything else)."""
    value = (env_text(name) or "").lower()
    return True if value in TRUE else False if value in FALSE else None


def env_int(name: str, default: int) -> int:
    """A non-negative integer; a malformed value is a ValueError naming the variable."""
    raw = env_text(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise HieraError(f"{name}={raw!r}: expected an integer") from None
    if value < 0:
        raise HieraError(f"{name}={raw!r}: expected a non-negative integer")
    return value


def env_float(name: str, default: float) -> float:
    """A number; a malformed value is a ValueError naming the variable."""
    raw = env_text(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise HieraError(f"{name}={raw!r}: expected a number") from None


def cache_dir(base: str | os.PathLike | None = None) -> Path:
    """The project's cache root: `base`, else $HIERA_CACHE_DIR, else $XDG_CACHE_HOME/hiera-dspy, else
    ~/.cache/hiera-dspy."""
    if base:
        return Path(base).expanduser()
    env = env_text("HIERA_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = env_text("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "hiera-dspy"


def runs_dir() -> Path:
    """Where runs live (the run store, one folder per run): $HIERA_RUNS_DIR, else ./runs."""
    return Path(env_text("HIERA_RUNS_DIR", "runs"))


def data_dir() -> str | None:
    """$HIERA_DATA_DIR: the folder holding datasets named without a path (`--dataset esci` -> its esci/ folder)."""
    return env_text("HIERA_DATA_DIR")


def offline() -> bool:
    """$HIERA_OFFLINE=1: no Hugging Face route (model file, dataset copies)."""
    return env_flag("HIERA_OFFLINE")


def default_lm() -> str | None:
    """$HIERA_LM: the model of every role when no --lm is given (None: the embedded local model)."""
    return env_text("HIERA_LM")


def lm_num_retries() -> int:
    """DSPy's transport retries per request ($HIERA_LM_NUM_RETRIES, default 3)."""
    return env_int("HIERA_LM_NUM_RETRIES", 3)


def lm_timeout() -> float:
    """Read timeout per LM request in seconds ($HIERA_LM_TIMEOUT, default 300)."""
    return env_float("HIERA_LM_TIMEOUT", 300.0)


# ── the embedded local model (hiera_dspy/local/model.py) ────────────────────────────────────────────────────────────────

def local_threads() -> int:
    """$HIERA_LOCAL_THREADS: llama.cpp threads (0 or unset: every core this process may use)."""
    return env_int("HIERA_LOCAL_THREADS", 0)


def local_ctx(default: int) -> int:
    """$HIERA_LOCAL_CTX: the context window in tokens (0 or unset: `default`)."""
    return env_int("HIERA_LOCAL_CTX", default) or default


def local_ram_cache_mb(default: int) -> int:
    """$HIERA_LOCAL_RAM_CACHE_MB: the prompt-prefix state cache in MB (0: off)."""
    return env_int("HIERA_LOCAL_RAM_CACHE_MB", default)


def local_max_chars(default: int) -> int:
    """$HIERA_LOCAL_MAX_CHARS: the cap on every free-text output field in characters (0: no cap)."""
    return env_int("HIERA_LOCAL_MAX_CHARS", default)


def local_runtime() -> str | None:
    """$HIERA_LOCAL_RUNTIME: the llama.cpp binding to use (xllamacpp, llama-cpp-python); None: the first installed."""
    return env_text("HIERA_LOCAL_RUNTIME")


def probe_batch(default: int) -> int:
    """$HIERA_PROBE_BATCH: prompts per llama.cpp batch for the probe's hidden states (0 or unset: `default`)."""
    return env_int("HIERA_PROBE_BATCH", default) or default


def local_extra_bufts() -> bool | None:
    """$HIERA_LOCAL_EXTRA_BUFTS: force llama.cpp's extra weight buffers on (1) or off (0); None: decide by the build."""
    return env_choice("HIERA_LOCAL_EXTRA_BUFTS")


# ── the model file (hiera_dspy/local/model_store.py) ────────────────────────────────────────────────────────────────────

def model_path() -> str | None:
    """$HIERA_MODEL_PATH: a GGUF file to use instead of fetching the default model."""
    return env_text("HIERA_MODEL_PATH")


def hub_endpoint() -> str:
    """$HF_ENDPOINT: the Hugging Face hub (default https://huggingface.co)."""
    return env_text("HF_ENDPOINT", "https://huggingface.co")


def hub_offline() -> bool:
    """$HIERA_OFFLINE or $HF_HUB_OFFLINE: no Hugging Face route."""
    return offline() or env_flag("HF_HUB_OFFLINE")


def show_progress() -> bool:
    """False when $HIERA_NO_PROGRESS is set: no download progress bars, and log lines instead of a judging bar."""
    return not env_flag("HIERA_NO_PROGRESS")


def mirror_disabled() -> bool:
    """$HIERA_NO_MIRROR: skip the package-index mirror route."""
    return env_flag("HIERA_NO_MIRROR")


def keep_mirror() -> bool:
    """$HIERA_KEEP_MIRROR: keep the mirror's installed parts after joining them."""
    return env_flag("HIERA_KEEP_MIRROR")


# ── content retries (hiera_dspy/lm/retry.py) ─────────────────────────────────────────────────────────────────────────

RETRY_KNOBS = {"attempts": "HIERA_RETRY_ATTEMPTS", "base_delay": "HIERA_RETRY_BASE_DELAY",
               "max_delay": "HIERA_RETRY_MAX_DELAY", "max_retry_after": "HIERA_RETRY_MAX_RETRY_AFTER"}


def retry_budget(defaults: dict[str, float]) -> dict[str, float]:
    """The content-retry budget from $HIERA_RETRY_*: field -> value (`attempts` an int), `defaults` when unset."""
    out = {field: env_float(name, defaults[field]) for field, name in RETRY_KNOBS.items()}
    out["attempts"] = int(out["attempts"])
    return out


def breaker_failures(default: int) -> int:
    """$HIERA_BREAKER_FAILURES: consecutive connection failures to one endpoint that stop a run (0: never)."""
    return env_int("HIERA_BREAKER_FAILURES", default)


def item_chars(default: int) -> int:
    """$HIERA_ITEM_CHARS: characters of item text placed in a prompt (at least 1); a longer text is cut and the
    judgment flagged `truncated`."""
    value = env_int("HIERA_ITEM_CHARS", default)
    if value < 1:
        raise HieraError(f"HIERA_ITEM_CHARS={value}: expected at least 1 character")
    return value


# ── the embed-lr reference line (hiera_dspy/metrics/reference.py) ────────────────────────────────────────────────────

def reference_enabled() -> bool:
    """False when $HIERA_REFERENCE is none/0/off: no embed-lr reference line under eval.run and optimize.compile."""
    return (env_text("HIERA_REFERENCE") or "").lower() not in {"none", "0", "off"}


def reference_embedder() -> str:
    """$HIERA_REFERENCE_EMBEDDER: the reference's embedder (default auto; `lexical` needs no model)."""
    return env_text("HIERA_REFERENCE_EMBEDDER", "auto")


# ── the text-embedding cache (hiera_dspy/signals/embed_cache.py) ─────────────────────────────────────────────────────

def embed_cache_enabled() -> bool:
    """False when $HIERA_NO_EMBED_CACHE is set: sentence-transformer vectors are recomputed, never kept on disk."""
    return not env_flag("HIERA_NO_EMBED_CACHE")


# ── ONNX Runtime for the encoders (hiera_dspy/signals/onnx_encoder.py, onnx_embedder.py) ─────────────────────────────

def onnx_embedder_enabled() -> bool:
    """True when $HIERA_ONNX_EMBEDDER is 1/true/yes/on: MiniLM sentence vectors come from the ONNX export
    (`signals/onnx_embedder.py`: the same vectors) instead of sentence-transformers. Off by default: on an AVX2-only
    CPU it costs as much CPU as torch (bench/results/speed.md), and the export costs ~20 s once per cache root."""
    return env_choice("HIERA_ONNX_EMBEDDER") is True
