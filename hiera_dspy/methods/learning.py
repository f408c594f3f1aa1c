"""The protocol of a program that learns from data before it judges, and the two calls every tool makes on any program.

A method whose program fits something on labelled pairs (the learned scorer of embed-lr, hiera+signals, stacked; a
cascade's threshold tau) subclasses `Learner`: `prepare(train, dev)` fits it, explicitly, before the first judgment,
and `learned_state()` returns what it fitted that names a run (a cascade's tau; empty for most). Every other program
learns nothing: `prepare(program, ...)` below leaves it as it is and `learned_state(program)` is {}. The run
identity (`hiera_dspy.runs.spec.RunSpec`) takes that state; nothing probes a program's attributes to find it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence

from hiera_dspy.records import Pair


class Learner:
    """Mixin of a program that learns from data: `prepare` fits it, `learned_state` names what was fitted."""

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None):
        """Fit on the labelled `train` pairs (and pick what needs `dev`); returns the program."""
        raise NotImplementedError

    def learned_state(self) -> dict:
        """The fitted values that are part of a run's identity (JSON-able): {} unless a run depends on them."""
        return {}

    def reads_dev_labels(self) -> bool:
        """True when `prepare` read the dev labels (a score on dev is then optimistic)."""
        return False


def prepare(program, train: Sequence[Pair] | None, dev: Sequence[Pair] | None) -> dict:
    """Fit `program` if it learns from data (a `Learner`); its learned state ({} for every other program)."""
    if isinstance(program, Learner):
        program.prepare(train, dev)
    return learned_state(program)


def learned_state(program) -> dict:
    """What `program` learned that names a run: `Learner.learned_state()` plus, once fitted, `"fitted"`: a digest of
    the fitted weights its artifact would carry (`dump_extra()`), so a judge refitted on other pairs, features or
    hidden states never resumes the judgments of the old fit; {} for a program that learns nothing."""
    if not isinstance(program, Learner):
        return {}
    state = _rounded(dict(program.learned_state()))  # a tau picked as a quantile: its last bits are the CPU's
    extra = program.dump_extra() if callable(getattr(program, "dump_extra", None)) else None
    if extra:
        blob = json.dumps(_rounded(extra), sort_keys=True, default=str).encode()
        state["fitted"] = hashlib.sha256(blob).hexdigest()[:12]
    return state


def _rounded(value):
    """`value` with every float at 6 significant digits and numpy arrays as lists (in full: str() would abbreviate
    them): a refit on other data moves the digest, the last bits of a BLAS on another CPU do not."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (str, bytes)):
        value = tolist()
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def reads_dev_labels(program) -> bool:
    """True when preparing `program` read the dev labels (`Learner.reads_dev_labels`)."""
    return isinstance(program, Learner) and program.reads_dev_labels()


def prepare_fresh(program, dataset, split: str) -> dict:
    """Prepare an uncompiled program that learns from data (a `Learner`: embed-lr,
    hiera+signals, hiera-cascade, stacked) on the train split, and the dev split where it picks something there (a
    cascade's tau). Returns its learned state ({} for every other program), which `RunSpec` takes. A program that read
    the dev labels (tau_rule=kappa) makes a dev score optimistic: said on stderr."""
    state = prepare(program, dataset.splits.get("train"), dataset.splits.get("dev"))
    if reads_dev_labels(program) and split == "dev":
        print(f"{program.method}: tau was picked with the dev labels (tau_rule=kappa), so this dev score is "
              "optimistic; compile it (optimize.compile) and judge another split for an unbiased one", file=sys.stderr)
    return state
