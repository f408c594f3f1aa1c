"""Which language models a job uses, as a plain value (`LMChoice`): a model for every role, one per role, the endpoint,
the key variable's name, the output cap and the ensemble pool. It resolves over an artifact's recorded models and the
defaults into the role specs (`hiera_dspy.lm.roles.LMSpec`) and LMs (`RoleLMs`); it holds no key and no LM, so a
request that carries it can be pickled (a Ray actor rebuilds its program from it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hiera_dspy import settings
from hiera_dspy.lm.roles import PRESETS, ROLES, LMSpec, RoleLMs, build_lms


@dataclass(frozen=True)
class LMChoice:
    """The models of a job: `lm` for every role ('paper', 'local', 'local:PATH.gguf' or a dspy.LM string), `roles`
    {role: model} overriding it, `api_base` (comma-separated bases: one per engine replica), `api_key_env` (the name
    of the key's environment variable), `max_tokens` for every role, `ensemble` (comma-separated models)."""

    lm: str | None = None
    roles: dict[str, str] = field(default_factory=dict)
    api_base: str | None = None
    api_key_env: str | None = None
    max_tokens: int | None = None
    ensemble: str | None = None

    def at(self, api_base: str | None) -> "LMChoice":
        """The same models at another endpoint (a replica's)."""
        return replace(self, api_base=api_base)

    def specs(self, recorded: dict[str, dict] | None = None) -> dict[str, LMSpec]:
        """Per-role specs: this choice over the models recorded in an artifact, over the defaults. Endpoint and key
        variable come only from this choice (never from the record)."""
        if self.lm in PRESETS:
            specs = {role: LMSpec(**cfg) for role, cfg in PRESETS[self.lm].items()}
        elif self.lm:
            specs = {role: LMSpec(model=self.lm) for role in ROLES}
        elif recorded:  # an artifact's models: names only, the endpoint and key variable come from this choice
            specs = {role: LMSpec.from_record(cfg) for role, cfg in recorded.items()}
        else:  # said on stderr when (if) the local model is built: a method that calls no LM builds none (make_lm)
            specs = {role: LMSpec(model=settings.default_lm() or "local") for role in ROLES}
        for role in ROLES:
            if self.roles.get(role):
                specs[role] = LMSpec(model=self.roles[role])
            spec = specs.setdefault(role, LMSpec(model=specs["judge"].model))
            if self.api_base:
                spec.api_base = self.api_base
            if self.api_key_env:
                spec.api_key_env = self.api_key_env
            if self.max_tokens:
                spec.max_tokens = self.max_tokens
        return specs

    def ensemble_specs(self, recorded: dict[str, dict] | None = None) -> dict[str, LMSpec]:
        """The ensemble pool's specs: this choice's models, else an artifact's recorded pool; endpoint and key variable
        from this choice, never from the record."""
        endpoint = {"api_base": self.api_base, "api_key_env": self.api_key_env}
        models = [m.strip() for m in (self.ensemble or "").split(",") if m.strip()]
        if models:
            return {model: LMSpec(model=model, **endpoint) for model in models}
        return {name: LMSpec.from_record(spec, **endpoint) for name, spec in (recorded or {}).items()}

    def role_lms(self, recorded: dict[str, dict] | None = None,
                 recorded_ensemble: dict[str, dict] | None = None) -> RoleLMs:
        """The role LMs (each built on first use) and the ensemble pool, over an artifact's recorded ones."""
        return build_lms(self.specs(recorded), self.ensemble_specs(recorded_ensemble))

    build = role_lms  # the old name, kept for one release (`build` names building a method: hiera_dspy.methods)
