"""The language-model flags of the CLIs (--lm, --ROLE-lm, endpoint, key variable, output cap, --blend-lms) and the
role specs and LMs they give (`hiera_dspy.lm.roles.build_lms`): flags over an artifact's recorded models over the
defaults."""

from __future__ import annotations

import argparse

from hiera_dspy import settings
from hiera_dspy.lm.roles import PRESETS, ROLES, LMSpec, RoleLMs, build_lms


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
    else:  # said on stderr when (if) the local model is built: a method that calls no LM builds none (make_lm)
        specs = {role: LMSpec(model=settings.default_lm() or "local") for role in ROLES}
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


def add_lm_arguments(parser: argparse.ArgumentParser) -> None:
    """The language-model flags every CLI shares: --lm, one --ROLE-lm per role, endpoint, key variable, output cap and
    the ensemble pool (--blend-lms)."""
    g = parser.add_argument_group("language models (keys only from the environment)")
    g.add_argument("--lm", help="model for every role: any dspy.LM string (openai/..., anthropic/...), "
                               "'paper' (the paper's Claude setup), 'local' or 'local:PATH.gguf' (default: local)")
    for role in ROLES:
        g.add_argument(f"--{role}-lm", help=f"model for the {role} role (overrides --lm)")
    g.add_argument("--api-base", help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--api-key-env", help="name of the environment variable holding the API key")
    g.add_argument("--max-tokens", type=int, help="cap output tokens for every role")
    g.add_argument("--blend-lms", dest="ensemble", metavar="MODELS", help="the ensemble pool: comma-separated models voted over by "
                                                         "llm-blender and shared by collabeval's agents")


def ensemble_specs(args: argparse.Namespace, recorded: dict[str, dict] | None = None) -> dict[str, LMSpec]:
    """The ensemble pool's specs: --blend-lms models, else an artifact's recorded pool; endpoint and key variable from
    the flags (--api-base, --api-key-env), never from the record."""
    endpoint = {"api_base": getattr(args, "api_base", None), "api_key_env": getattr(args, "api_key_env", None)}
    models = [m.strip() for m in (getattr(args, "ensemble", None) or "").split(",") if m.strip()]
    if models:
        return {model: LMSpec(model=model, **endpoint) for model in models}
    return {name: LMSpec.from_record(spec, **endpoint) for name, spec in (recorded or {}).items()}


def lms_from_args(args: argparse.Namespace, recorded: dict[str, dict] | None = None,
                  recorded_ensemble: dict[str, dict] | None = None) -> RoleLMs:
    """The role LMs from CLI flags over an artifact's recorded models, and the ensemble pool (--blend-lms over the
    artifact's recorded pool). Every LM's endpoint and key variable are the flags', never the artifact's."""
    return build_lms(specs_from_args(args, recorded), ensemble_specs(args, recorded_ensemble))
