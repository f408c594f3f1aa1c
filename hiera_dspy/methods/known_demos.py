"""Every LLM method reads its query's known judgments as worked examples: for each pair, up to `known_demos` (K) of
the judgments its query already has (`--known`, a benchmark's qrels) become per-call DSPy demos of its prompts.

Which ones (`QueryDemos.select`):
- never the pair's own: a judgment of the pair's item (by item id, or the same passage text) is left out;
- the most like the pair's passage: cosine of sentence vectors (the installed MiniLM, else hashed bag-of-words,
  `hiera_dspy.signals.feedback.passage_vectors`);
- balanced over grades: one of each grade in turn (the grade whose best is most like the pair first), so a query
  judged mostly irrelevant still shows its relevant passages;
- within `known_demo_tokens` (estimated as characters / 4 of the query and the item block; a demo's passage is cut at
  `DEMO_ITEM_CHARS` characters, as any untrusted text is), those that do not fit passed over;
- in a stable order: least like the pair first, so the most like it is read last, just before the pair.

A demo carries the known query, the passage as the pair's item block shows one (`item_block(..., judged=False)`) and
the grade as the scheme (or `--guidelines`) names it; `hiera_dspy.lm.query_demos` places it in every relevance prompt
(the Judge's and the Relation Analyzer's, each method's labelling step), after a compiled predictor's own demos.

`with_known_demos(program, scheme, k, tokens)` gives a built program its `query_demos` and makes it a
`data.known.ReadsKnown`: the job hands it the known judgments once (`read_known`), the engine judges each pair inside
`query_demos.reading` (`hiera_dspy.runs.runner.judge_one`). `k=0` leaves the program as it was: it reads no known
judgment and its prompts are those without this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.known_match import normalised
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm.query_demos import Demo
from hiera_dspy.untrusted.blocks import item_block

DEFAULT_K = 4
DEFAULT_TOKENS = 800
DEMO_ITEM_CHARS = 500  # a demo's passage is cut here (the pair's own: $HIERA_ITEM_CHARS, default 1,500)
CHARS_PER_TOKEN = 4
KNOWN_KEYS = ("known_demos", "known_demo_tokens")  # the config keys every text-generating LLM method takes


def vector_kind() -> str:
    """The sentence vectors similarity is read with: MiniLM where installed, else hashed bag-of-words."""
    from hiera_dspy.signals.feedback import available_kind

    return available_kind()


def vectors(kind: str, docs: Sequence[str]) -> np.ndarray:
    """(n, d) unit vectors of `docs`."""
    from hiera_dspy.signals.feedback import passage_vectors

    return passage_vectors(kind, list(docs))


def passage(title: str, text: str) -> str:
    """The passage a similarity reads (title and text)."""
    return f"{title}\n{text}".strip()


@dataclass
class _Pool:
    """One query's usable known judgments, their demos, vectors and estimated tokens."""

    judgments: list[KnownJudgment]
    demos: list[Demo]
    vectors: np.ndarray
    tokens: list[int]
    passages: list[str]


class QueryDemos:
    """A program's choice of known judgments for each pair (module doc). Read once (`read`), then shared read-only by
    every copy of the program (a deep copy is the same object) and every worker thread."""

    def __init__(self, scheme: LabelScheme, k: int = DEFAULT_K, tokens: int = DEFAULT_TOKENS):
        self.scheme, self.k, self.tokens = scheme, int(k), int(tokens)
        self.kind = ""
        self.by_id: dict[str, _Pool] = {}
        self.by_text: dict[str, _Pool] = {}

    def __deepcopy__(self, memo) -> QueryDemos:
        return self

    def describe(self) -> dict:
        """What the artifact and `describe()` say: demos a pair at most and their token budget."""
        return {"known_demos": self.k, "known_demo_tokens": self.tokens}

    def read(self, known: Known) -> dict[str, int]:
        """Read the known judgments; query id -> how many the program may show (graded on its scheme's scale, with
        a passage text). A table on another scheme's labels is read as none."""
        self.by_id, self.by_text = {}, {}
        labels = self.scheme.labels
        if tuple(known.scheme.labels) != tuple(labels):
            return {}
        usable = [j for j in known if j.item_text and 0 <= j.grade < len(labels)]
        if not usable:
            return {}
        self.kind = self.kind or vector_kind()
        texts = [passage(j.item_title, j.item_text or "") for j in usable]
        found = vectors(self.kind, texts)
        groups: dict[str, list[int]] = {}
        for i, j in enumerate(usable):
            groups.setdefault(j.query_id, []).append(i)
        for query_id, members in groups.items():
            chosen = [usable[i] for i in members]
            demos = [Demo(j.query or "", item_block(j.item_title, j.item_text or "", DEMO_ITEM_CHARS, judged=False),
                          labels[j.grade], j.grade, j.item_id) for j in chosen]
            pool = _Pool(chosen, demos, found[members], [-(-(len(d.query) + len(d.item)) // CHARS_PER_TOKEN)
                                                         for d in demos], [texts[i] for i in members])
            self.by_id[query_id] = pool
            for j in chosen:
                if j.query:
                    self.by_text.setdefault(normalised(j.query), pool)
        return {q: len(p.demos) for q, p in self.by_id.items()}

    def pool_for(self, query_id: str, query: str) -> _Pool | None:
        """The known judgments of a pair's query: by its id, else by its normalised text."""
        return self.by_id.get(query_id) or self.by_text.get(normalised(query))

    def select(self, pair) -> list[Demo]:
        """The demos of `pair` (a `records.Pair`), in the order its prompts show them (module doc)."""
        pool = self.pool_for(pair.query_id, pair.query) if self.k > 0 else None
        if pool is None:
            return []
        text = passage(pair.item_title, pair.item_text)
        keep = [i for i, j in enumerate(pool.judgments)
                if j.item_id != pair.item_id and pool.passages[i] != text]
        if not keep:
            return []
        similarity = pool.vectors[keep] @ vectors(self.kind, [text])[0]
        ranked = sorted(range(len(keep)), key=lambda r: (-float(similarity[r]), pool.judgments[keep[r]].item_id))
        order = balanced([pool.demos[keep[r]].grade for r in ranked])
        chosen, spent = [], 0
        for r in (ranked[o] for o in order):
            cost = pool.tokens[keep[r]]
            if spent + cost > self.tokens:
                continue
            chosen.append(r)
            spent += cost
            if len(chosen) == self.k:
                break
        chosen.sort(key=lambda r: (float(similarity[r]), pool.judgments[keep[r]].item_id))
        return [pool.demos[keep[r]] if pool.demos[keep[r]].query else replace(pool.demos[keep[r]], query=pair.query)
                for r in chosen]  # a list without query texts (qrels): the pair's own query


def balanced(grades: Sequence[int]) -> list[int]:
    """Positions of `grades` (ranked best first) in turns over the grades: each turn takes the next best of every
    grade, the grades in the order their best came; e.g. [0, 0, 0, 2, 1] -> [0, 3, 4, 1, 2]."""
    queues: dict[int, list[int]] = {}
    for position, grade in enumerate(grades):
        queues.setdefault(grade, []).append(position)
    order: list[int] = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                order.append(queue.pop(0))
    return order


def with_known_demos(program, scheme: LabelScheme, k: int | None = None, tokens: int | None = None):
    """`program` reading its queries' known judgments as demos (module doc); without them for `k=0`. Returns it."""
    k = DEFAULT_K if k is None else int(k)
    if k <= 0:  # none: a program that read them before (a compiled judge turned off) reads none now
        for attribute in ("query_demos", "read_known"):
            program.__dict__.pop(attribute, None)
        return program
    demos = QueryDemos(scheme, k, DEFAULT_TOKENS if tokens is None else tokens)
    program.query_demos = demos
    program.read_known = demos.read  # a data.known.ReadsKnown: the job hands it the known judgments once
    return program
