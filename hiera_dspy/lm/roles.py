"""One LM per role of the hierarchy: judge, relation, query, item (baselines use the same roles).

`--lm MODEL` sets every role; `--judge-lm`, `--relation-lm`, `--query-lm`, `--item-lm` override one; `--api-base URL`
points at an OpenAI-compatible server; keys come only from the environment (`--api-key-env NAME`). `--lm paper` is the
paper's setup. `--lm local` (the default when neither `--lm` nor `HIERA_LM` is set) is the embedded local model;
`--lm local:PATH` any GGUF file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field

import dspy  # noqa: E402

from hiera_dspy import settings  # noqa: E402
from hiera_dspy.errors import HieraError  # noqa: E402
from hiera_dspy.lm.profiles import LOCAL, PAPER  # noqa: E402
from hiera_dspy.lm.secrets import remember_key  # noqa: E402

ROLES = ("judge", "relation", "query", "item")

PRESETS: dict[str, dict[str, dict]] = {
    # HIERA paper, Appendix A.1: Sonnet for J and R, Haiku for Q and I, temperature 0.
    "paper": {
        "judge": {"model": "anthropic/claude-3-7-sonnet-20250219", "max_tokens": PAPER.max_tokens["judge"]},
        "relation": {"model": "anthropic/claude-3-7-sonnet-20250219", "max_tokens": PAPER.max_tokens["relation"]},
        "query": {"model": "anthropic/claude-3-5-haiku-20241022", "max_tokens": PAPER.max_tokens["query"]},
        "item": {"model": "anthropic/claude-3-5-haiku-20241022", "max_tokens": PAPER.max_tokens["item"]},
    },
}
# Output budgets per role come from the model profiles (hiera_dspy/lm/profiles.py): the paper's for any hosted model; the
# embedded model writes ~6-11 tokens/s on 2 cores, so its caps keep a delegated judgment near half a minute
DEFAULT_MAX_TOKENS = PAPER.max_tokens
LOCAL_MAX_TOKENS = LOCAL.max_tokens


RECORDED = ("model", "api_base", "max_tokens", "temperature")  # the LMSpec fields an artifact keeps


@dataclass
class LMSpec:
    """How to build one role's LM; holds no secret (the key is read from `api_key_env` at build time)."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    max_tokens: int | None = None
    temperature: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, {}, "")}

    def record(self) -> dict:
        """What an artifact records: the model, its output cap and temperature, and (for information only) the
        endpoint; never a key variable nor extra client arguments."""
        return {k: v for k, v in self.to_dict().items() if k in RECORDED}

    @classmethod
    def from_record(cls, record: dict, *, api_base: str | None = None, api_key_env: str | None = None) -> "LMSpec":
        """A spec from a recorded one (an artifact's): its model, output cap and temperature only. The endpoint and
        the key variable are the caller's: a record never decides where a request or a key goes."""
        kept = {k: record[k] for k in ("max_tokens", "temperature") if record.get(k) is not None}
        return cls(model=record["model"], api_base=api_base, api_key_env=api_key_env, **kept)


class RoleLMs(dict):
    """role -> dspy.LM. Shared, never copied: optimizers deepcopy programs, the LMs (and a local model) stay one.

    A role given as a spec (`build_lms`) is built on first use (`lms[role]`, `get`, `for_role`), so a method that
    never asks for an LM (embed-lr) builds none, and a missing local backend only matters to a method that needs it."""

    specs: dict[str, LMSpec]
    extra: dict  # name -> LM for ensembles (--blend-lms)
    extra_specs: dict  # name -> LMSpec of those LMs: recorded in artifacts and in run identities

    def __init__(self, *args, lazy: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy = dict(lazy or {})  # role -> zero-argument builder, called once on the role's first use
        self._lock = threading.Lock()

    def __deepcopy__(self, memo):
        return self

    def _resolve(self, role: str) -> None:
        if role in self._lazy and not dict.__contains__(self, role):
            with self._lock:
                if role in self._lazy:
                    dict.__setitem__(self, role, self._lazy.pop(role)())

    def __missing__(self, role: str):
        self._resolve(role)
        if dict.__contains__(self, role):
            return dict.__getitem__(self, role)
        raise KeyError(role)

    def __contains__(self, role) -> bool:
        return dict.__contains__(self, role) or role in self._lazy

    def get(self, role, default=None):
        """The role's LM (built now if it was pending), else `default`."""
        self._resolve(role)
        return dict.get(self, role, default)

    def for_role(self, role: str) -> dspy.BaseLM | None:
        """The role's LM, else the judge's."""
        return self.get(role) or self.get("judge")

    def describe(self, roles=None) -> dict[str, str]:
        """role -> model for `roles` (default: every role with a spec); the local model by its resolved name (file
        stem + SHA-256 prefix), so runs say what ran. Describing a local role builds its LM."""
        specs = getattr(self, "specs", {})
        out = {role: (getattr(self.get(role), "model", spec.model) if spec.model.startswith("local") else spec.model)
               for role, spec in specs.items() if roles is None or role in roles}
        if getattr(self, "extra_specs", None):
            out["blend"] = ",".join(self.extra_specs)
        return out


def endpoint_cache_id(model: str, api_base: str | None) -> int | None:
    """DSPy's cache key ignores api_base; rollout_id is part of the key and never sent, so it carries the endpoint."""
    if not api_base:
        return None
    return int(hashlib.sha256(f"{model}@{api_base.rstrip('/')}".encode()).hexdigest()[:12], 16)


def make_lm(spec: LMSpec, role: str = "judge") -> dspy.BaseLM:
    if spec.model == "local" or spec.model.startswith("local:"):
        from hiera_dspy.lm.local import make_local_lm

        lm = make_local_lm(spec.model.partition(":")[2] or None,
                           max_tokens=spec.max_tokens or LOCAL_MAX_TOKENS.get(role, 160))
        lm.preferred_adapter = "json"  # llama.cpp constrains JSON output to the schema: no format breakage
        lm.retry_parse_errors = False  # in-process at temperature 0: re-asking repeats the answer; salvage instead
        lm.hiera_profile = LOCAL.name  # its prompts carry the local profile's length caps
        return lm
    kwargs: dict = dict(spec.extra)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
        kwargs.setdefault("api_key", "local")
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            raise HieraError(f"--api-key-env {spec.api_key_env}: that environment variable is not set")
        kwargs["api_key"] = key
    remember_key(kwargs.get("api_key"))  # its value is redacted from every error we store or print
    cache_id = endpoint_cache_id(spec.model, spec.api_base)
    if cache_id is not None:
        kwargs["rollout_id"] = cache_id
    # Bounded transport retries (429/5xx/timeout/dropped connection; DSPy honours Retry-After, else 1, 2, 4 s) and a
    # bounded read timeout (lm15's default waits 600 s per attempt). Content retries: hiera_dspy/lm/retry.py.
    kwargs.setdefault("num_retries", settings.lm_num_retries())
    kwargs.setdefault("timeout", settings.lm_timeout())
    with warnings.catch_warnings():  # rollout_id is our cache partition, not a sampling request: knowingly at temp 0
        warnings.filterwarnings("ignore", message="rollout_id has no effect")
        lm = dspy.LM(spec.model, temperature=spec.temperature,
                     max_tokens=spec.max_tokens or DEFAULT_MAX_TOKENS.get(role, 1000), **kwargs)
    lm._warned_zero_temp_rollout = True
    return lm


def specs_from_args(args: argparse.Namespace, recorded: dict[str, dict] | None = None) -> dict[str, LMSpec]:
    """Resolve per-role specs: CLI flags override models recorded in an artifact, which override the defaults.
    Endpoint and key variable come only from the flags (never from the record)."""
    base = getattr(args, "lm", None)
    specs: dict[str, LMSpec] = {}
    if base in PRESETS:
        specs = {role: LMSpec(**cfg) for role, cfg in PRESETS[base].items()}
    elif base:
        specs = {role: LMSpec(model=base) for role in ROLES}
    elif recorded:  # an artifact's models: names only, the endpoint and key variable come from the flags below
        specs = {role: LMSpec.from_record(cfg) for role, cfg in recorded.items()}
    else:
        default = settings.default_lm()
        if not default:
            print("hiera-dspy: no --lm given and HIERA_LM unset: using the embedded local model "
                  "(Qwen2.5-Coder-1.5B-Instruct Q4_K_M via llama.cpp)", file=sys.stderr)
        specs = {role: LMSpec(model=default or "local") for role in ROLES}
    for role in ROLES:
        override = getattr(args, f"{role}_lm", None)
        if override:
            specs[role] = LMSpec(model=override)
        spec = specs.setdefault(role, LMSpec(model=specs["judge"].model))
        if getattr(args, "api_base", None):
            spec.api_base = args.api_base
        if getattr(args, "api_key_env", None):
            spec.api_key_env = args.api_key_env
        if getattr(args, "max_tokens", None):
            spec.max_tokens = args.max_tokens
    return specs


def build_lms(specs: dict[str, LMSpec]) -> RoleLMs:
    """One LM per role, built on the role's first use; roles with identical specs and caps share one LM object. The
    local model's weights are loaded once per process whatever the number of LM objects."""
    built: dict[str, dspy.BaseLM] = {}

    def builder(key: str, spec: LMSpec, role: str):
        def build() -> dspy.BaseLM:
            if key not in built:
                built[key] = make_lm(spec, role)
            return built[key]
        return build

    lazy = {}
    for role, spec in specs.items():
        # roles without an explicit cap get their role's default cap, so they need their own LM object
        key = repr(sorted(spec.to_dict().items())) + ("" if spec.max_tokens else f"@{role}")
        lazy[role] = builder(key, spec, role)
    lms = RoleLMs(lazy=lazy)  # each LM is built on its role's first use (RoleLMs)
    lms.specs = specs
    return lms


def add_lm_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("language models (keys only from the environment)")
    g.add_argument("--lm", help="model for every role: any dspy.LM string (openai/..., anthropic/...), "
                               "'paper' (the paper's Claude setup), 'local' or 'local:PATH.gguf' (default: local)")
    for role in ROLES:
        g.add_argument(f"--{role}-lm", help=f"model for the {role} role (overrides --lm)")
    g.add_argument("--api-base", help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--api-key-env", help="name of the environment variable holding the API key")
    g.add_argument("--max-tokens", type=int, help="cap output tokens for every role")
    g.add_argument("--blend-lms", help="comma-separated models for ensembles (llm-blender, collabeval agents)")


def lms_from_args(args: argparse.Namespace, recorded: dict[str, dict] | None = None,
                  recorded_blend: dict[str, dict] | None = None) -> RoleLMs:
    """The role LMs from CLI flags over an artifact's recorded models; --blend-lms over its recorded ensemble pool.
    Every LM's endpoint and key variable are the flags' (--api-base, --api-key-env), never the artifact's."""
    lms = build_lms(specs_from_args(args, recorded))
    endpoint = {"api_base": getattr(args, "api_base", None), "api_key_env": getattr(args, "api_key_env", None)}
    blend = [m.strip() for m in (getattr(args, "blend_lms", None) or "").split(",") if m.strip()]
    if blend:
        specs = {model: LMSpec(model=model, **endpoint) for model in blend}
    else:
        specs = {name: LMSpec.from_record(spec, **endpoint) for name, spec in (recorded_blend or {}).items()}
    return with_blend(lms, specs)


def with_blend(lms: RoleLMs, specs: dict[str, LMSpec]) -> RoleLMs:
    """Attach an ensemble pool (llm-blender, collabeval) built from `specs` to `lms`."""
    lms.extra_specs = dict(specs)
    lms.extra = {name: make_lm(spec) for name, spec in specs.items()}
    return lms
