"""Per-role LM specs from CLI flags, and the endpoint cache partition (two servers never share a cached answer)."""

from __future__ import annotations

import argparse
import json
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dspy
import pytest

from hiera_dspy.cli.lms import add_lm_arguments, specs_from_args
from hiera_dspy.lm import roles as lms_module
from hiera_dspy.lm.roles import (
    DEFAULT_MAX_TOKENS,
    PRESETS,
    ROLES,
    LMSpec,
    build_lms,
    endpoint_cache_id,
    make_lm,
)
from hiera_dspy.testing import fake_lm

ROLLOUT_WARNING = "rollout_id has no effect"


def parse(*argv):
    parser = argparse.ArgumentParser()
    add_lm_arguments(parser)
    return parser.parse_args(list(argv))


# --- specs_from_args -------------------------------------------------------------------------------------------------

def test_lm_sets_every_role():
    specs = specs_from_args(parse("--lm", "openai/gpt-4o-mini"))
    assert set(specs) == set(ROLES)
    assert all(s.model == "openai/gpt-4o-mini" and s.api_base is None and s.max_tokens is None
               for s in specs.values())


def test_role_flag_overrides_lm():
    specs = specs_from_args(parse("--lm", "openai/a", "--judge-lm", "openai/b", "--item-lm", "openai/c"))
    assert {r: s.model for r, s in specs.items()} == {"judge": "openai/b", "relation": "openai/a",
                                                     "query": "openai/a", "item": "openai/c"}


def test_api_base_key_env_and_max_tokens_apply_to_every_role():
    specs = specs_from_args(parse("--lm", "openai/a", "--judge-lm", "openai/b", "--api-base", "http://h:1/v1",
                                  "--api-key-env", "MY_KEY", "--max-tokens", "77"))
    for spec in specs.values():
        assert spec.api_base == "http://h:1/v1" and spec.api_key_env == "MY_KEY" and spec.max_tokens == 77


def test_paper_preset():
    specs = specs_from_args(parse("--lm", "paper"))
    assert {r: (s.model, s.max_tokens) for r, s in specs.items()} == {
        role: (cfg["model"], cfg["max_tokens"]) for role, cfg in PRESETS["paper"].items()}
    assert specs["judge"].model == specs["relation"].model == "anthropic/claude-3-7-sonnet-20250219"
    assert specs["query"].model == specs["item"].model == "anthropic/claude-3-5-haiku-20241022"
    assert (specs["judge"].max_tokens, specs["relation"].max_tokens, specs["query"].max_tokens) == (3000, 1500, 1000)
    assert all(s.temperature == 0.0 for s in specs.values())
    capped = specs_from_args(parse("--lm", "paper", "--max-tokens", "50"))
    assert all(s.max_tokens == 50 for s in capped.values())
    again = specs_from_args(parse("--lm", "paper"))
    assert again["judge"].max_tokens == 3000  # the preset itself was not mutated by --max-tokens


def test_recorded_models_and_defaults(monkeypatch, capsys):
    recorded = {role: {"model": f"openai/{role}-model", "max_tokens": 9} for role in ROLES}
    specs = specs_from_args(parse(), recorded)
    assert {r: s.model for r, s in specs.items()} == {r: f"openai/{r}-model" for r in ROLES}
    assert specs_from_args(parse("--lm", "openai/x"), recorded)["query"].model == "openai/x"  # flags win
    assert specs_from_args(parse("--query-lm", "openai/q"), recorded)["query"].model == "openai/q"

    monkeypatch.setenv("HIERA_LM", "openai/env-model")
    assert {s.model for s in specs_from_args(parse()).values()} == {"openai/env-model"}
    monkeypatch.delenv("HIERA_LM")
    assert {s.model for s in specs_from_args(parse()).values()} == {"local"}
    assert capsys.readouterr().err == ""  # said when the local model is built (a method may call no LM)


def test_building_the_local_model_says_so_once(monkeypatch, capsys):
    from hiera_dspy.local import model as local

    monkeypatch.delenv("HIERA_LM", raising=False)
    monkeypatch.setattr(lms_module, "_SAID", set())
    monkeypatch.setattr(local, "make_local_lm", lambda path, max_tokens: fake_lm(name="local/fake"))
    lms = build_lms(specs_from_args(parse()))
    assert capsys.readouterr().err == ""
    assert lms["judge"].model == "local/fake" and lms["item"].model == "local/fake"
    assert capsys.readouterr().err.count("using the embedded local model") == 1


def test_build_lms_shares_identical_specs():
    made = []
    specs = specs_from_args(parse("--lm", "openai/a", "--judge-lm", "openai/b", "--max-tokens", "500"))
    with lms_module.lm_factory(lambda spec, role: made.append((spec.model, role)) or object()):
        lms = build_lms(specs)
        assert made == [] and "query" in lms  # built on first use only
        assert lms["judge"] is not lms["relation"] and lms["relation"] is lms["query"] is lms["item"]
        assert made == [("openai/b", "judge"), ("openai/a", "relation")]
        made.clear()  # without an explicit cap each role gets its own default cap, hence its own LM object
        fresh = build_lms(specs_from_args(parse("--lm", "openai/a")))
        assert [fresh.for_role(role) for role in ("judge", "relation", "query", "item")] and made == [
            ("openai/a", role) for role in ("judge", "relation", "query", "item")]
        assert lms.describe() == {"judge": "openai/b", "relation": "openai/a", "query": "openai/a", "item": "openai/a"}
        assert lms.for_role("query") is lms["query"]


# --- endpoint cache partition ----------------------------------------------------------------------------------------

def test_endpoint_cache_id():
    a = endpoint_cache_id("openai/m", "http://127.0.0.1:8000/v1")
    b = endpoint_cache_id("openai/m", "http://127.0.0.1:8001/v1")
    assert isinstance(a, int) and isinstance(b, int) and a != b
    assert endpoint_cache_id("openai/m", "http://127.0.0.1:8000/v1/") == a
    assert endpoint_cache_id("openai/other", "http://127.0.0.1:8000/v1") != a
    assert endpoint_cache_id("openai/m", None) is None and endpoint_cache_id("openai/m", "") is None
    assert endpoint_cache_id("openai/m", "http://127.0.0.1:8000/v1") == a  # stable


def test_make_lm_passes_rollout_id_only_with_api_base(monkeypatch):
    lm = make_lm(LMSpec(model="openai/m", api_base="http://127.0.0.1:8000/v1"), role="query")
    assert lm.kwargs["rollout_id"] == endpoint_cache_id("openai/m", "http://127.0.0.1:8000/v1")
    assert lm.kwargs["api_base"] == "http://127.0.0.1:8000/v1" and lm.kwargs["api_key"] == "local"
    assert lm.kwargs["temperature"] == 0.0
    assert DEFAULT_MAX_TOKENS["query"] in (lm.kwargs.get("max_tokens"), lm.kwargs.get("max_completion_tokens"))
    plain = make_lm(LMSpec(model="openai/m"))
    assert "rollout_id" not in plain.kwargs and "api_base" not in plain.kwargs


def test_make_lm_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.delenv("HIERA_TEST_MISSING", raising=False)
    from hiera_dspy.errors import HieraError

    with pytest.raises(HieraError, match="HIERA_TEST_MISSING"):
        make_lm(LMSpec(model="openai/m", api_key_env="HIERA_TEST_MISSING"))
    monkeypatch.setenv("HIERA_TEST_KEY", "sk-x")
    assert make_lm(LMSpec(model="openai/m", api_key_env="HIERA_TEST_KEY")).kwargs["api_key"] == "sk-x"


def test_make_lm_does_not_warn_about_its_cache_partition():
    """rollout_id is a cache partition, not a sampling request: constructing the LM must not warn about it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_lm(LMSpec(model="openai/m", api_base="http://127.0.0.1:8000/v1"))
    assert not [w for w in caught if ROLLOUT_WARNING in str(w.message)]


def test_cache_keys_differ_by_endpoint():
    from dspy.clients.execution import IGNORED_CACHE_KEYS, prepare

    messages = [{"role": "user", "content": "hello"}]
    a = make_lm(LMSpec(model="openai/m", api_base="http://127.0.0.1:8000/v1"))
    b = make_lm(LMSpec(model="openai/m", api_base="http://127.0.0.1:8001/v1"))
    a2 = make_lm(LMSpec(model="openai/m", api_base="http://127.0.0.1:8000/v1"))

    def key(lm):
        return dspy.cache.cache_key(prepare(lm, None, messages, {}).key(lm, False), IGNORED_CACHE_KEYS)

    assert key(a) != key(b)
    assert key(a) == key(a2)  # the same endpoint still shares its cache


class _Server:
    """A loopback OpenAI-compatible chat-completions server answering a fixed text; records request bodies."""

    def __init__(self, text: str):
        self.bodies: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.bodies.append({"path": self.path, **body})
                data = json.dumps({
                    "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model", "tiny"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers(monkeypatch):
    monkeypatch.setenv("HIERA_LM_NUM_RETRIES", "0")
    monkeypatch.setenv("HIERA_LM_TIMEOUT", "10")
    started = [_Server("answer from A"), _Server("answer from B")]
    dspy.configure_cache(enable_memory_cache=True, enable_disk_cache=False)
    dspy.cache.reset_memory_cache()
    yield started
    dspy.cache.reset_memory_cache()
    dspy.configure_cache(enable_memory_cache=False, enable_disk_cache=False)
    for s in started:
        s.close()


def test_two_endpoints_never_share_a_cached_answer(servers):
    a, b = servers
    lm_a = make_lm(LMSpec(model="openai/tiny", api_base=a.url))
    lm_b = make_lm(LMSpec(model="openai/tiny", api_base=b.url))
    assert lm_a("hello") == ["answer from A"]
    assert lm_b("hello") == ["answer from B"]  # same model name and prompt, other server: not A's cached answer
    assert len(a.bodies) == 1 and len(b.bodies) == 1
    assert lm_a("hello") == ["answer from A"] and len(a.bodies) == 1  # the cache is on: no second request
    for body in a.bodies + b.bodies:
        assert body["path"].endswith("/chat/completions")
        assert "rollout_id" not in body  # a cache partition only, never sent


def test_without_the_partition_dspy_shares_the_cache_across_endpoints(servers):
    """Why make_lm passes rollout_id: DSPy's cache key ignores api_base (if this starts failing, DSPy fixed it)."""
    a, b = servers
    lm_a = dspy.LM("openai/tiny", api_base=a.url, api_key="x", temperature=0.0, num_retries=0)
    lm_b = dspy.LM("openai/tiny", api_base=b.url, api_key="x", temperature=0.0, num_retries=0)
    assert lm_a("hi") == ["answer from A"]
    assert lm_b("hi") == ["answer from A"]
    assert b.bodies == []


def test_requests_of_an_endpoint_lm_do_not_warn_about_its_cache_partition(servers):
    """DSPy warns on each request of a temperature-0 LM with a rollout_id until told otherwise; make_lm says so through
    a public warnings filter (it used to set a private flag of dspy.LM)."""
    with warnings.catch_warnings(record=True) as caught:
        lm = make_lm(LMSpec(model="openai/tiny", api_base=servers[0].url))
        assert lm("hello") == ["answer from A"] and lm("again") == ["answer from A"]
    assert not [w for w in caught if ROLLOUT_WARNING in str(w.message)]
