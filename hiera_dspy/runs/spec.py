"""What defines a run, and the one function that turns it into a run id.

A run is judged once and resumed by id: the same method config, learned state (a cascade's tau), data, LMs and
knowledge give the same id, so an interrupted or repeated run re-judges nothing. Every tool that starts runs (eval.run,
eval.ablate, eval.label, eval.holes, optimize.compile, optimize.search, bench/signals_llm.py) names them through
`RunSpec` (`RunSpec.of(program, ...)` and the per-tool constructors below) and `run_id`; the ids are those the tools
computed before this module existed, so existing run stores resume (tests/runs/test_run_ids_pinned.py pins them).

The learned state is the program's own (`hiera_dspy.methods.learning`: a `Learner` is prepared explicitly, then
`learned_state()` says what it fitted); a RunSpec never prepares nor probes a program.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from hiera_dspy.methods.learning import learned_state


def run_id(*parts) -> str:
    """A stable run id from what defines a run (method config, data split, LMs): same inputs, same id."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def file_digest(path) -> str | None:
    """The first 12 hex digits of the file's SHA-256 (None when it is not a readable file)."""
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()[:12]
    except (OSError, TypeError):
        return None


def describe_lms(lms, program=None) -> dict:
    """role -> model for the roles `program` uses (its method's `lm_roles`; every role when undeclared), plus the
    ensemble pool; a method that uses no LM (embed-lr) describes, and so builds, none."""
    if lms is None or not hasattr(lms, "describe"):
        return {}
    return lms.describe(getattr(program, "lm_roles", None))


@dataclass(frozen=True)
class RunSpec:
    """What defines one run. `identity()` is what the run store records; `run_id` hashes it with `qualifiers`.

    Fields left None are not part of the identity (e.g. optimize.compile names no split: its qualifiers do).
    `learned` is state fitted before judging (a cascade's tau); `extra` the further fields a tool adds (eval.run's
    judge artifact, optimize.search's demos and seed, a bench's name) and, for a scheme read from a guideline file,
    its SHA-256 prefix (`guidelines`)."""

    method: str
    config: dict
    dataset: str | None = None
    split: str | None = None
    lms: dict | None = None
    knowledge: str | None = None
    learned: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    qualifiers: tuple = ()

    @classmethod
    def of(cls, program, *, lms=None, **fields) -> "RunSpec":
        """A run of `program` (prepared already, when it learns from data): its method, config, the LMs of the roles
        it uses and its learned state; `fields` as in the dataclass."""
        if "learned" not in fields:
            fields["learned"] = learned_state(program)
        guidelines = getattr(getattr(program, "scheme", None), "guidelines", None)
        if guidelines:  # a team's guideline file: one changed word is another run
            fields["extra"] = {**fields.get("extra", {}), "guidelines": guidelines}
        described = describe_lms(lms, program) if lms is not None else None
        return cls(program.method, program.config, lms=described, **fields)

    @classmethod
    def judging(cls, program, *, dataset: str, split: str, lms, knowledge: str, judge: str | None = None,
                extra: dict | None = None) -> "RunSpec":
        """A run of eval.run or eval.ablate (one identity: a run started by either is resumed by the other), or of
        a labelling command (eval.label, eval.holes: `extra` names what it labels). A compiled `judge` is named by its
        artifact path and a digest of the file: recompiled into the same path, it is a new judge and a new run."""
        digest = file_digest(judge) if judge else None
        judged_by = {"judge": judge, **({"judge_sha256": digest} if digest else {})}
        return cls.of(program, dataset=dataset, split=split, lms=lms, knowledge=knowledge,
                      learned={} if judge else learned_state(program), extra={**judged_by, **(extra or {})})

    @classmethod
    def compiling(cls, program, *, dataset: str, lms, knowledge: str) -> "RunSpec":
        """optimize.compile's runs (no split: its phases are `qualifiers`); its identity always names tau (None for
        a method without one), as it did before RunSpec."""
        return cls.of(program, dataset=dataset, lms=lms, knowledge=knowledge,
                      learned={"tau": None, **learned_state(program)})

    def identity(self) -> dict:
        """The run's identity as the run store and config.json record it."""
        out = {"method": self.method, "config": self.config}
        for key in ("dataset", "split", "lms", "knowledge"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return {**out, **self.learned, **self.extra}

    @property
    def run_id(self) -> str:
        """The run's id: `run_id(identity, *qualifiers)`."""
        return run_id(self.identity(), *self.qualifiers)
