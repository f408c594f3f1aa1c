"""Methods by name: HIERA, its ablation graphs, the baselines. A new method is one module in this package with its
`@register` line, and nothing else: every module of the package is imported on first use (`discover`), and the
runner stores every output of its Prediction (`hiera_dspy.records.prediction_fields`). `build(name, ctx, **config)`
makes a `dspy.Module` whose forward(query, item_title, item_text) returns a Prediction with at least `label`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # annotations only: the registry and its config types load no DSPy until a method is built
    import dspy

from hiera_dspy.knowledge import Knowledge, NoKnowledge
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm.roles import ROLES, RoleLMs
from hiera_dspy.methods.params import PARAMS, ConfigError, check
from hiera_dspy.records import Pair
from hiera_dspy.registry import Entry, Registry
from hiera_dspy.secrets import remember_lm_keys


@dataclass
class BuildContext:
    """What a method may depend on besides its config: the label scheme, role LMs (with their ensemble pool),
    knowledge, labelled train pairs."""

    scheme: LabelScheme
    lms: RoleLMs = field(default_factory=RoleLMs)
    knowledge: Knowledge = field(default_factory=NoKnowledge)
    train: list[Pair] = field(default_factory=list)


@dataclass
class MethodInfo:
    """A registered method: its builder, one-line description, default config, family and the LM roles it calls."""

    name: str
    builder: Callable[..., dspy.Module]
    doc: str
    defaults: dict
    family: str
    options: tuple[str, ...] = ()  # config keys accepted without a default (not part of a run's config unless set)
    lm_roles: tuple[str, ...] = ROLES  # the roles whose LMs the method calls: only these are built and recorded
    votes: bool = True  # it generates text, so it takes `samples` and `temperature` (methods/votes.py)


METHODS: dict[str, MethodInfo] = {}


VOTE_KEYS = ("samples", "temperature", "anchored")  # every method that generates text takes them (methods/votes.py)
KNOWN_KEYS = ("known_demos", "known_demo_tokens")  # and these: its queries' known judgments (methods/known_demos.py)


def register(name: str, doc: str, family: str = "hiera", options: tuple[str, ...] = (),
             lm_roles: tuple[str, ...] = ROLES, votes: bool = True, **defaults):
    """Register `builder(ctx, **config) -> dspy.Module` under `name` with default config values; `options` names
    further keys the builder accepts without a default; `lm_roles` the roles whose LMs it calls (() for none: its
    runs and artifacts then name no LM, and no LM is built for it). A method with LM roles takes `samples` and
    `temperature` too (a vote over samples), and `known_demos` and `known_demo_tokens` (its queries' known judgments
    as demos), unless `votes=False` (it generates no text: the LLM probe)."""

    def wrap(builder):
        votes_keys = (*VOTE_KEYS, *KNOWN_KEYS) if votes and lm_roles else ()
        METHODS[name] = MethodInfo(name, builder, doc, defaults, family, (*options, *votes_keys), tuple(lm_roles),
                                   bool(votes_keys))
        return builder

    return wrap


def discover() -> list[str]:
    """Import every module of this package (each method module registers itself; helpers such as params and graphs
    register nothing), in name order; return their names. A module whose name starts with "_" is private: skipped."""
    names = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    for name in names:
        importlib.import_module(f"{__name__}.{name}")
    return names


def available() -> dict[str, MethodInfo]:
    """Every registered method by name (importing the package's method modules first)."""
    discover()
    return METHODS


# the methods as a registry (hiera_dspy.registry), read from the `register` decorator's table: each entry's
# parameters are its config keys with their declared types (methods/params.py), its loader the builder
METHOD_REGISTRY = Registry("method", lambda: {
    name: Entry(name, info.doc, {key: PARAMS.get(key) for key in (*info.defaults, *info.options)}, info.builder)
    for name, info in sorted(available().items())}, plural="registered")


def build(name: str, ctx: BuildContext, **config) -> dspy.Module:
    """The method `name` built from `ctx` and its config (defaults, then `config`, each value checked). `samples`
    and `temperature` (or a name `NAME@N`) wrap it in a vote over samples (`hiera_dspy.methods.votes.Votes`); a
    method that generates text reads its queries' known judgments as demos (`methods.known_demos`: `known_demos`
    and `known_demo_tokens`, kept in its config only when given)."""
    from hiera_dspy.methods.known_demos import with_known_demos
    from hiera_dspy.methods.votes import split_name, vote_config, with_votes  # a Votes is a dspy.Module

    name, at = split_name(name)
    config = {**at, **config}
    METHOD_REGISTRY[name]  # an unknown name: UnknownName listing the registered ones
    info = available()[name]
    merged = {**info.defaults, **{k: v for k, v in config.items() if v is not None}}
    # typed keys: a misspelt value is refused, never run as a default
    merged = {key: check(name, key, value) for key, value in merged.items()}
    try:
        voting = vote_config(merged.pop("samples", None), merged.pop("temperature", None), merged.pop("anchored", None))
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    demo_keys = {key: merged.pop(key) for key in KNOWN_KEYS if key in merged}
    program = info.builder(ctx, **merged)
    merged.update(demo_keys)
    program.method = name
    program.config = merged
    program.lm_roles = info.lm_roles
    program.scheme = ctx.scheme  # what it judges by (a guideline file's digest names its runs: runs/spec.py)
    program = with_votes(program, ctx.scheme, voting)
    if info.votes:
        program = with_known_demos(program, ctx.scheme, merged.get("known_demos"), merged.get("known_demo_tokens"))
    remember_lm_keys(ctx.lms)  # before any call: a caller's own LMs' keys are redacted from errors too
    return program
