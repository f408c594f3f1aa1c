"""Model profiles: the one place that says how long each role may write.

A profile holds each role's output budget (max tokens) and the length caps written into output-field descriptions.
`paper` is the paper's setup (App. A.1: 3000 tokens for the Judge, 1500 for the Relation Analyzer, 1000 for the Query
and Item Analyzers) with no caps in the prompts: any hosted model gets it. `local` is the embedded 1.5B model's: it
writes ~6-11 tokens/s on 2 cores and runs on until its token cap, so it gets small budgets and caps in words, and
`consultation=auto` means undirected for it (each specialist's cached analysis, no per-pair answers: ~4 calls fewer).
The signatures (`signatures/hiera.py`) carry no caps; `fit(signature, profile)` adds the profile's.

Example:
    >>> fit(QueryAnalysis, PROFILES["local"]).output_fields["implicit_intent"].json_schema_extra["desc"]
    'at most 20 words: unstated preferences for style, function, genre, audience'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only, but for reasoning_field: a profile is named without loading DSPy
    import dspy

from hiera_dspy.errors import HieraError


@dataclass(frozen=True)
class Profile:
    """Output budgets per role and the caps prefixed to output-field descriptions (field name -> cap)."""

    name: str
    max_tokens: dict[str, int]
    caps: dict[str, str] = field(default_factory=dict)
    consultation: str = "directed"  # what `consultation=auto` means under this profile
    doc: str = ""


PAPER = Profile("paper", {"judge": 3000, "relation": 1500, "query": 1000, "item": 1000},
                doc="the paper's output budgets (App. A.1), no length caps in the prompts; any hosted model")
LOCAL = Profile("local", {"judge": 200, "relation": 128, "query": 96, "item": 96}, {
    "guidance": "at most 20 words",
    "reasoning": "one or two sentences",
    "question_for_query_analyzer": "at most 15 words",
    "question_for_item_analyzer": "at most 15 words",
    "explicit_requirements": "at most 20 words",
    "implicit_intent": "at most 20 words",
    "stated_properties": "at most 25 words",
    "inferred_properties": "at most 20 words",
    "answer": "at most 30 words",
    "argument": "at most 50 words",
}, consultation="undirected",
    doc="the embedded 1.5B model: small output budgets, word caps in prompts, undirected consultation (fewer calls)")
PROFILES: dict[str, Profile] = {p.name: p for p in (PAPER, LOCAL)}
SETTINGS = ("auto", *PROFILES)  # the `profile` config key: auto = from the role's LM


def fit(signature: type[dspy.Signature], profile: Profile) -> type[dspy.Signature]:
    """The signature with the profile's cap prefixed to each capped output field's description."""
    for name, info in signature.output_fields.items():
        cap = profile.caps.get(name)
        if cap:
            desc = (info.json_schema_extra or {}).get("desc") or ""
            desc = f"{cap}: {desc}" if desc and not desc.startswith("${") else cap
            signature = signature.with_updated_fields(name, desc=desc)
    return signature


def reasoning_field(profile: Profile, desc: str) -> dspy.OutputField:
    """A ChainOfThought rationale field under the profile's cap for `reasoning`."""
    cap = profile.caps.get("reasoning")
    import dspy

    return dspy.OutputField(desc=f"{cap}: {desc}" if cap else desc)


def describe(name: str) -> str:
    """One line for a trace: a profile's budgets and whether its prompts carry length caps."""
    profile = PROFILES.get(name)
    if profile is None:
        return name
    budgets = ", ".join(f"{role} {n}" for role, n in profile.max_tokens.items())
    caps = f"length caps on {len(profile.caps)} fields" if profile.caps else "no length caps in the prompts"
    return f"{name} (output budgets in tokens: {budgets}; {caps})"


def tag(module: dspy.Module, profile: Profile) -> dspy.Module:
    """Mark a predictor with the profile its prompt was fitted to (each accounted step records it)."""
    module.profile = profile.name
    return module


def of_lm(lm) -> Profile:
    """The profile an LM asks for (`lm.hiera_profile`, set on the embedded model); any other model: the paper's."""
    return PROFILES.get(getattr(lm, "hiera_profile", None) or "paper", PAPER)


def resolve(setting: str | None, lms, role: str) -> Profile:
    """The profile of one role: `setting` (paper | local) when given, else (auto) its LM's profile."""
    if setting and setting != "auto":
        if setting not in PROFILES:
            raise HieraError(f"profile must be one of {', '.join(SETTINGS)}; got {setting!r}")
        return PROFILES[setting]
    return of_lm(lms.for_role(role) if lms is not None and hasattr(lms, "for_role") else None)
