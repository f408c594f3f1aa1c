"""A pair's known judgments as the per-call demos of its prompts: the worked examples a predictor reads before the
pair, taken from the judgments its query already has (`hiera_dspy.methods.known_demos` chooses them).

The engine judges a pair inside `reading(program, pair)`: the demos the program's `query_demos` chooses for the pair
are this thread's (or task's) for the duration. Every predictor call then goes through the retrying adapter
(`hiera_dspy.lm.retry`), which calls `extended(signature, demos)`: a predictor whose signature gives a relevance
answer (a `label` of the scheme, a `grade` of its scale, or the Relation Analyzer's `argument`) reads the demos after
its own (a compiled predictor's demos stay first); any other predictor (a specialist's analysis, a plan, a debate
turn) reads none. A demo fills the signature's `query` and `item` with the known judgment's and its answer field with
the known grade; every other field says "Not supplied for this particular example." as DSPy's own incomplete demos
do, so each demo counts as complete and keeps its place after the compiled ones.

With no known judgment for the pair (none given, `known_demos=0`, a query without any) nothing is added: the prompt is
byte for byte the one without this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

NOT_SUPPLIED = "Not supplied for this particular example."


@dataclass(frozen=True)
class Demo:
    """One known judgment as a worked example: the query and item as a prompt shows them, the grade's label (as the
    scheme or the team's guidelines name it) and its index on the scale, and the judged item's id."""

    query: str
    item: str
    label: str
    grade: int
    item_id: str


_CURRENT: ContextVar[tuple[Demo, ...]] = ContextVar("hiera_query_demos", default=())


@contextmanager
def reading(program: Any, pair: Any) -> Iterator[tuple[Demo, ...]]:
    """Within this block, the demos `program.query_demos` chooses for `pair` are read by every relevance predictor
    (none when the program has no `query_demos`: it was built without them or reads no known judgments)."""
    source = getattr(program, "query_demos", None)
    chosen = tuple(source.select(pair)) if source is not None else ()
    token = _CURRENT.set(chosen)
    try:
        yield chosen
    finally:
        _CURRENT.reset(token)


def current() -> tuple[Demo, ...]:
    """The demos of the pair being judged in this thread or task (empty outside `reading`)."""
    return _CURRENT.get()


def _label_choices(signature) -> tuple | None:
    """The labels a signature's `label` output may take (None when its type names none)."""
    annotation = signature.output_fields["label"].annotation
    return get_args(annotation) if get_origin(annotation) is Literal else None


def answer(signature, demo: Demo) -> dict | None:
    """The answer fields a demo gives this signature (None: the signature gives no relevance answer, or a label
    outside the labels it may give, as a step restricted to the relevant labels)."""
    outputs, inputs = signature.output_fields, signature.input_fields
    if "query" not in inputs or "item" not in inputs:
        return None
    if "label" in outputs:
        choices = _label_choices(signature)
        return None if choices is not None and demo.label not in choices else {"label": demo.label}
    if "grade" in outputs:
        return {"grade": demo.grade}
    if "argument" in outputs and "guidance" in inputs:  # the Relation Analyzer's synthesis (not a debate's turn)
        return {"argument": f"Conclusion: {demo.label}."}
    return None


def rendered(signature, demos: Sequence[Demo]) -> list[dict]:
    """The demos as DSPy demo records of `signature` (those it gives an answer for)."""
    rows = []
    for demo in demos:
        given = answer(signature, demo)
        if given is None:
            continue
        row = dict.fromkeys(signature.fields, NOT_SUPPLIED)
        row.update(query=demo.query, item=demo.item, **given)
        rows.append(row)
    return rows


def extended(signature, demos: Sequence | None) -> Sequence | None:
    """A predictor call's demos with the current pair's after them (the call's own list when there are none)."""
    chosen = _CURRENT.get()
    if not chosen:
        return demos
    return [*(demos or []), *rendered(signature, chosen)]
