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
| HIERA_LOCAL_THREADS, _CTX, _RAM_CACHE_MB, _MAX_CHARS, _EXTRA_BUFTS | see local.py | the embedded model |
| HIERA_MODEL_PATH, HIERA_OFFLINE, HIERA_NO_MIRROR, HIERA_KEEP_MIRROR, HIERA_NO_PROGRESS, HF_ENDPOINT | | model_store |

Process environment that libraries read at import (`LITELLM_LOCAL_MODEL_COST_MAP`: litellm never fetches its cost map
from the internet; `DSPY_CACHEDIR`: DSPy's response cache under our cache root) is set by `configure_process()`, which
`hiera_dspy/__init__.py` calls before anything imports dspy.
"""

from __future__ import annotations

import os
from pathlib import Path

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def configure_process() -> None:
    """Defaults for the environment other libraries read at import; a value the user set wins."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch litellm's cost map from the internet
    os.environ.setdefault("DSPY_CACHEDIR", str(cache_dir() / "dspy"))


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
        raise ValueError(f"{name}={raw!r}: expected an integer") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r}: expected a non-negative integer")
    return value


def env_float(name: str, default: float) -> float:
    """A number; a malformed value is a ValueError naming the variable."""
    raw = env_text(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a number") from None


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
