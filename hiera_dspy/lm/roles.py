"""One LM per role of the hierarchy: judge, relation, query, item (baselines use the same roles).

`--lm MODEL` sets every role; `--judge-lm`, `--relation-lm`, `--query-lm`, `--item-lm` override one; `--api-base URL`
points at an OpenAI-compatible server; keys come only from the environment (`--api-key-env NAME`). `--lm paper` is the
paper's setup. `--lm local` (the default when neither `--lm` nor `HIERA_LM` is set) is the embedded local model;
`--lm local:PATH` any GGUF file. `--blend-lms A,B,C` is the ensemble pool (`RoleLMs.ensemble`) of llm-blender and
collabeval. Every LM is built on first use (`RoleLMs`), by `make_lm` or a bench's `lm_factory`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # DSPy is loaded when the first LM is built (make_lm), not when a role is named
    import dspy

from hiera_dspy import settings
from hiera_dspy.errors import HieraError
from hiera_dspy.lm.metadata import memoize_model_info
from hiera_dspy.lm.profiles import LOCAL, PAPER
from hiera_dspy.secrets import remember_key

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
        """The fields that are set (None, empty and {} left out)."""
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


class LMPool(Mapping[str, "dspy.BaseLM"]):
    """name -> LM: LMs given ready-made, and LMs built from their specs on first use (once; thread-safe).

    Iterating or `values()` builds every LM of the pool; `built()` lists only those built so far.

    Example:
        >>> pool = LMPool(builders={"judge": lambda: dspy.LM("openai/gpt-4o-mini")})
        >>> "judge" in pool, pool.built()  # nothing built yet
        (True, {})
    """

    def __init__(self, lms: dict[str, dspy.BaseLM] | None = None, specs: dict[str, LMSpec] | None = None,
                 builders: dict[str, Callable[[], dspy.BaseLM]] | None = None):
        self.specs: dict[str, LMSpec] = dict(specs or {})  # what an artifact or a run identity records
        self._lms: dict[str, dspy.BaseLM] = dict(lms or {})
        self._builders = dict(builders or {})  # name -> zero-argument builder, called once on the name's first use
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> dspy.BaseLM:
        if name not in self._lms:
            if name not in self._builders:
                raise KeyError(name)
            with self._lock:
                if name not in self._lms:
                    self._lms[name] = self._builders[name]()
        return self._lms[name]

    def __contains__(self, name) -> bool:
        return name in self._lms or name in self._builders

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._lms, *self._builders]))

    def __len__(self) -> int:
        return len(set(self._lms) | set(self._builders))

    def built(self) -> dict[str, dspy.BaseLM]:
        """name -> LM for the LMs given or built so far (builds nothing)."""
        return dict(self._lms)

    def __deepcopy__(self, memo):
        return self  # shared, never copied: optimizers deepcopy programs, the LMs (and a local model) stay one

    __eq__ = object.__eq__
    __hash__ = object.__hash__


@dataclass(eq=False)
class RoleLMs(Mapping[str, "dspy.BaseLM"]):
    """The LMs of one run: one per role of the hierarchy (`roles`: judge, relation, query, item) and the ensemble pool
    (`ensemble`: name -> LM, the models of `--blend-lms`, voted over by llm-blender and collabeval).

    Each LM is built on first use (`lms[role]`, `for_role`), so a method that calls no LM (embed-lr) builds none and a
    missing local backend only matters to a method that needs it. Shared, never copied: optimizers deepcopy programs,
    the LMs (and a local model) stay one. As a mapping it is role -> LM.

    Example:
        >>> lms = RoleLMs.of(judge=dspy.LM("openai/gpt-4o-mini"))
        >>> lms.for_role("item") is lms["judge"]  # a role without its own LM falls back to the judge's
        True
    """

    roles: LMPool = field(default_factory=LMPool)
    ensemble: LMPool = field(default_factory=LMPool)

    @classmethod
    def of(cls, lms: dict[str, dspy.BaseLM] | None = None, *, ensemble: dict[str, dspy.BaseLM] | None = None,
           **by_role: dspy.BaseLM) -> "RoleLMs":
        """RoleLMs over ready-made LMs: `lms` and keyword arguments by role, `ensemble` by name."""
        return cls(LMPool({**(lms or {}), **by_role}), LMPool(ensemble))

    @property
    def specs(self) -> dict[str, LMSpec]:
        """role -> LMSpec of the roles built from specs (none for ready-made LMs)."""
        return self.roles.specs

    def __getitem__(self, role: str) -> dspy.BaseLM:
        return self.roles[role]

    def __contains__(self, role) -> bool:
        return role in self.roles

    def __iter__(self) -> Iterator[str]:
        return iter(self.roles)

    def __len__(self) -> int:
        return len(self.roles)

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __deepcopy__(self, memo):
        return self

    def for_role(self, role: str) -> dspy.BaseLM | None:
        """The role's LM (built now if pending), else the judge's, else None."""
        return self.roles.get(role) or self.roles.get("judge")

    def member(self, name: str) -> "RoleLMs":
        """RoleLMs whose judge is the ensemble's LM `name` (built on that judge's first use)."""
        return RoleLMs(LMPool(builders={"judge": lambda: self.ensemble[name]}))

    def built(self) -> list[dspy.BaseLM]:
        """Every distinct LM given or built so far, roles then ensemble (builds nothing)."""
        return _distinct([*self.roles.built().values(), *self.ensemble.built().values()])

    def every(self) -> list[dspy.BaseLM]:
        """Every distinct LM, roles then ensemble, building those still pending."""
        return _distinct([*self.roles.values(), *self.ensemble.values()])

    def describe(self, roles=None) -> dict[str, str]:
        """role -> model for `roles` (default: every role with a spec), plus the ensemble pool's models under
        `ENSEMBLE_KEY`; the local model by its resolved name (file stem + SHA-256 prefix), so runs say what ran.
        Describing a local role builds its LM."""
        out = {role: (getattr(self.roles.get(role), "model", spec.model) if spec.model.startswith("local")
                      else spec.model)
               for role, spec in self.specs.items() if roles is None or role in roles}
        if self.ensemble.specs:
            out[ENSEMBLE_KEY] = ",".join(self.ensemble.specs)
        return out


# The ensemble pool's key in a run identity (RoleLMs.describe): recorded data, kept as runs recorded it before the pool
# had one name in code, so their run ids (and resumes) stay the same.
ENSEMBLE_KEY = "blend"


def _distinct(lms: list) -> list:
    seen: dict[int, object] = {}
    for lm in lms:
        if lm is not None:
            seen.setdefault(id(lm), lm)
    return list(seen.values())


def endpoint_cache_id(model: str, api_base: str | None) -> int | None:
    """DSPy's cache key ignores api_base; rollout_id is part of the key and never sent, so it carries the endpoint."""
    if not api_base:
        return None
    return int(hashlib.sha256(f"{model}@{api_base.rstrip('/')}".encode()).hexdigest()[:12], 16)


LMFactory = Callable[[LMSpec, str], "dspy.BaseLM"]  # (spec, role) -> LM
_SAID: set[str] = set()


def _say_once(note: str) -> None:
    if note not in _SAID:
        _SAID.add(note)
        print(note, file=sys.stderr)

# DSPy warns that rollout_id has no effect at temperature 0: ours is a cache partition, not a sampling request
ROLLOUT_WARNING = r"rollout_id has no effect when temperature=0"


def make_lm(spec: LMSpec, role: str = "judge") -> dspy.BaseLM:
    """The LM of one role from its spec: the embedded local model for `local`/`local:PATH`, else a `dspy.LM` with
    bounded transport retries and read timeout, its key read from `spec.api_key_env`, its cache partitioned by
    endpoint (`endpoint_cache_id`). The output cap defaults to the role's (profiles)."""
    if spec.model == "local" or spec.model.startswith("local:"):
        from hiera_dspy.local.model import make_local_lm

        _say_once("hiera-dspy: using the embedded local model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M via llama.cpp; "
                  "--lm or HIERA_LM choose another)" if spec.model == "local" else f"hiera-dspy: using {spec.model}")

        lm = make_local_lm(spec.model.partition(":")[2] or None,
                           max_tokens=spec.max_tokens or LOCAL_MAX_TOKENS.get(role, 160))
        lm.preferred_adapter = "json"  # llama.cpp constrains JSON output to the schema: no format breakage
        lm.retry_parse_errors = False  # in-process at temperature 0: re-asking repeats the answer; salvage instead
        lm.hiera_profile = LOCAL.name  # its prompts carry the local profile's length caps
        lm.fixed_seed = True  # llama.cpp samples from a fixed seed: each sample of a vote asks its own (lm.vote_samples)
        return lm
    memoize_model_info()  # DSPy prices every answer by a lookup that scans its map for an unlisted model
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
        # DSPy warns on every request of such an LM until told otherwise; a message filter is the public way to
        # say we know (filterwarnings replaces an identical filter, so repeating it adds none)
        warnings.filterwarnings("ignore", message=ROLLOUT_WARNING, category=UserWarning)
    # Bounded transport retries (429/5xx/timeout/dropped connection; DSPy honours Retry-After, else 1, 2, 4 s) and a
    # bounded read timeout (lm15's default waits 600 s per attempt). Content retries: hiera_dspy/lm/retry.py.
    kwargs.setdefault("num_retries", settings.lm_num_retries())
    kwargs.setdefault("timeout", settings.lm_timeout())
    import dspy

    return dspy.LM(spec.model, temperature=spec.temperature,
                   max_tokens=spec.max_tokens or DEFAULT_MAX_TOKENS.get(role, 1000), **kwargs)


_FACTORIES: list[LMFactory] = []  # overrides of make_lm, innermost last (lm_factory)


def current_factory() -> LMFactory:
    """What builds LMs from specs now: the innermost `lm_factory` override, else `make_lm`."""
    return _FACTORIES[-1] if _FACTORIES else make_lm


@contextmanager
def lm_factory(factory: LMFactory) -> Iterator[LMFactory]:
    """Within this block, every LM built from a spec (`build_lms`, so every CLI: hiera_dspy.cli.lms) is
    `factory(spec, role)`: the supported way for a bench, demo or test to run the CLIs on fake or instrumented LMs.
    Process-wide (worker threads build LMs too); blocks nest.

    Example:
        >>> from hiera_dspy.testing import fake_lm
        >>> with lm_factory(lambda spec, role: fake_lm({"label": "Relevant"})):
        ...     eval.run.main(["--dataset", "msrd", "--limit", "3"])
    """
    _FACTORIES.append(factory)
    try:
        yield factory
    finally:
        _FACTORIES.remove(factory)


def build_lms(specs: dict[str, LMSpec], ensemble: dict[str, LMSpec] | None = None) -> RoleLMs:
    """RoleLMs over specs: one LM per role and per ensemble model, each built on first use by `current_factory()`;
    roles with identical specs and caps share one LM object. The local model's weights are loaded once per process
    whatever the number of LM objects."""
    built: dict[str, dspy.BaseLM] = {}
    lock = threading.Lock()

    def builder(key: str, spec: LMSpec, role: str) -> Callable[[], dspy.BaseLM]:
        def build() -> dspy.BaseLM:
            with lock:
                if key not in built:
                    built[key] = current_factory()(spec, role)
                return built[key]
        return build

    def pool(specs: dict[str, LMSpec], role: Callable[[str], str]) -> LMPool:
        # an LM without an explicit cap gets its role's default cap, so it needs its own LM object
        return LMPool(specs=specs, builders={
            name: builder(repr(sorted(spec.to_dict().items())) + ("" if spec.max_tokens else f"@{role(name)}"),
                          spec, role(name)) for name, spec in specs.items()})

    return RoleLMs(pool(dict(specs), lambda role: role), pool(dict(ensemble or {}), lambda name: "judge"))
