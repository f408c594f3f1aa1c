"""The language-model flags of the CLIs (--lm, --ROLE-lm, endpoint, key variable, output cap, --blend-lms) and the
role specs and LMs they give (`hiera_dspy.lm.roles.build_lms`): flags over an artifact's recorded models over the
defaults."""

from __future__ import annotations

import argparse

from hiera_dspy.lm.choice import LMChoice
from hiera_dspy.lm.roles import ROLES, LMSpec, RoleLMs


def lm_choice(args: argparse.Namespace) -> LMChoice:
    """The models the flags choose (--lm, --ROLE-lm, --api-base, --api-key-env, --max-tokens, --blend-lms)."""
    return LMChoice(lm=getattr(args, "lm", None),
                    roles={role: model for role in ROLES if (model := getattr(args, f"{role}_lm", None))},
                    api_base=getattr(args, "api_base", None), api_key_env=getattr(args, "api_key_env", None),
                    max_tokens=getattr(args, "max_tokens", None), ensemble=getattr(args, "ensemble", None))


def specs_from_args(args: argparse.Namespace, recorded: dict[str, dict] | None = None) -> dict[str, LMSpec]:
    """Per-role specs: the flags over models recorded in an artifact, over the defaults (`LMChoice.specs`)."""
    return lm_choice(args).specs(recorded)


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


def lms_from_args(args: argparse.Namespace, recorded: dict[str, dict] | None = None,
                  recorded_ensemble: dict[str, dict] | None = None) -> RoleLMs:
    """The role LMs from the flags over an artifact's recorded models, and the ensemble pool (`LMChoice.build`).
    Every LM's endpoint and key variable are the flags', never the artifact's."""
    return lm_choice(args).role_lms(recorded, recorded_ensemble)
