"""A judge that reads known judgments, for the tests of how they reach a judge: it labels a pair by the majority
grade of its query's known judgments (a tie: the higher grade), a query without any by the scheme's least relevant
label. A stand-in for the feedback stage; `registered` makes it `--method known-majority` for a test."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import dspy

from hiera_dspy import methods
from hiera_dspy.data.known import Known

NAME = "known-majority"
READ: list[Known] = []  # every Known a judge of this kind read, in order (a test reads what reached the judge)


class KnownMajority(dspy.Module):
    """The majority grade of the pair's query's known judgments (matched by query text, as a judge sees a pair)."""

    def __init__(self, scheme):
        super().__init__()
        self.scheme = scheme
        self.majority: dict[str, str] = {}

    def read_known(self, known: Known) -> dict[str, int]:
        READ.append(known)
        used: dict[str, int] = {}
        for qid, judgments in known.by_query.items():
            usable = [j for j in judgments if j.item_text is not None and j.query]
            if usable:
                grades = Counter(j.grade for j in usable)
                top = max(grades.items(), key=lambda kv: (kv[1], kv[0]))[0]
                self.majority[usable[0].query] = self.scheme.labels[top]
                used[qid] = len(usable)
        return used

    def forward(self, query, item_title, item_text):
        return dspy.Prediction(label=self.majority.get(query, self.scheme.labels[0]))


def register() -> None:
    """`known-majority` registered as a method (no LM)."""
    methods.register(NAME, "the majority grade of the query's known judgments (a test's judge)", family="baseline",
                     lm_roles=())(lambda ctx: KnownMajority(ctx.scheme))


@dataclass(frozen=True)
class Registering:
    """A job's dataset loader that registers `known-majority` first, so a Ray actor's process can build it too."""

    load: Callable

    def __call__(self):
        register()
        return self.load()


@contextmanager
def registered():
    """`known-majority` registered as a method (no LM) for the duration."""
    register()
    READ.clear()
    try:
        yield NAME
    finally:
        methods.METHODS.pop(NAME, None)
        READ.clear()
