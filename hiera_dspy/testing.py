"""A fake LM that answers any DSPy Signature, for tests, demos and throughput benchmarks (no model, no network).

It reads the output fields from ChatAdapter's system message and fills each one: scripted values or callables from
`answers`, else a default by type (first Literal option, True, one-element list, short text). Token usage is counted
as words so accounting is exercised.

The test kit around it (as dspy/utils/dummies.py is DSPy's): role LMs, a fake knowledge source, pair factories, a
judgment under a fresh ledger, and readers of what the fake LMs were sent.

Example:
    >>> lm = fake_lm({"label": lambda prompt: "Relevant" if "spy" in prompt else "Irrelevant"})
    >>> prediction, ledger = judge_once(program, pair())
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from hiera_dspy.knowledge import Passage
from hiera_dspy.lm import ledger
from hiera_dspy.lm.roles import ROLES, RoleLMs
from hiera_dspy.records import Pair

FIELD_LINE = re.compile(r"^\d+\. `(\w+)` \((.+?)\):", re.M)
Answer = Any | Callable[[str], Any]


class FakeEngine:
    """Canonical dspy engine: complete(Request) -> Response."""

    def __init__(self, answers: dict[str, Answer] | None = None, latency: float = 0.0):
        self.answers = answers or {}
        self.latency = latency
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request):
        """A ChatAdapter answer filling every output field the request's system message lists."""
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or [])
        user = "\n".join(m.text or "" for m in request.messages)
        outputs = system.split("Your output fields are:", 1)[-1].split("All interactions", 1)[0]
        # Answer for the last user turn (demos come earlier in the conversation).
        last_user = request.messages[-1].text or ""
        body = "\n\n".join(f"[[ ## {name} ## ]]\n{self._value(name, type_, last_user)}"
                           for name, type_ in FIELD_LINE.findall(outputs))
        with self._lock:
            self.calls += 1
        if self.latency:
            time.sleep(self.latency)
        text = body + "\n\n[[ ## completed ## ]]"
        n_in, n_out = len((system + user).split()), len(text.split())
        return Response(id=None, model="fake", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out))

    def _value(self, name: str, type_: str, prompt: str) -> str:
        if name in self.answers:
            answer = self.answers[name]
            value = answer(prompt) if callable(answer) else answer
            return str(value) if not isinstance(value, (list, dict)) else _json(value)
        if type_.startswith("Literal["):
            return re.findall(r"'([^']*)'", type_)[0]
        if type_ == "bool":
            return "True"
        if type_.startswith("dict"):
            return "{}"
        if type_.startswith("list"):
            return '["fake lookup"]'
        if type_ in ("int", "float"):
            return "1"
        return f"fake {name.replace('_', ' ')}"

    def stream(self, request):
        """The `complete` answer as stream events."""
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self):
        """Nothing to release."""
        pass


class AsyncFakeEngine:
    """The async face of a FakeEngine (same answers, same call counter)."""
    def __init__(self, sync: FakeEngine):
        self.sync = sync

    async def complete(self, request):
        """The wrapped FakeEngine's answer."""
        return self.sync.complete(request)

    async def aclose(self):
        """Nothing to release."""
        pass


def _json(value) -> str:
    import json

    return json.dumps(value)


def fake_lm(answers: dict[str, Answer] | None = None, latency: float = 0.0, name: str = "fake/judge") -> dspy.LM:
    """A dspy.LM backed by FakeEngine, uncached so every call reaches the engine."""
    engine = FakeEngine(answers, latency)
    return dspy.LM(name, engine=engine, async_engine=AsyncFakeEngine(engine), cache=False)


# ── shared by the tests (and handy in demos): role LMs, a knowledge source, pairs, a judgment under a ledger ───────


def role_lms(answers: dict[str, Answer] | None = None, per_role: bool = False, **kwargs):
    """RoleLMs whose every role is one fake LM answering `answers`, or (per_role=True) each role its own fake LM
    (named fake/ROLE, with its own engine call counter)."""
    if per_role:
        return RoleLMs.of({role: fake_lm(answers, name=f"fake/{role}", **kwargs) for role in ROLES})
    lm = fake_lm(answers, **kwargs)
    return RoleLMs.of({role: lm for role in ROLES})


class FakeKnowledge:
    """A knowledge source answering every search with fixed passages (or `passages(text)` when a callable) and
    recording each search as (text, k) in `calls`; shared, never copied, by an optimizer's program copies."""

    name = "fake-knowledge"
    default_k = 3

    def __init__(self, passages=None, name: str | None = None):
        self.passages = passages if passages is not None else [
            Passage(title="KB-TITLE", text="KB-PASSAGE-TEXT about the item", source=self.name)]
        if name:
            self.name = name
        self.calls: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo):
        return self

    @property
    def searches(self) -> list[str]:
        """The searched texts, in order."""
        return [text for text, _ in self.calls]

    def search(self, text: str, k: int | None = None) -> list:
        """Up to `k` (default `default_k`) passages; the search is recorded."""
        k = self.default_k if k is None else k
        with self._lock:
            self.calls.append((text, k))
        passages = self.passages(text) if callable(self.passages) else self.passages
        return list(passages[:k])


def pair(i: int = 0, query: str = "tom cruise spy movie", title: str = "Mission: Impossible",
         text: str = "An IMF agent is framed.", label: str | None = "Relevant"):
    """A Pair with ids derived from its parts (p{i}, q-{query}, i-{title})."""
    return Pair(id=f"p{i}", query=query, item_title=title, item_text=text, label=label, query_id=f"q-{query}",
                item_id=f"i-{title}")


def labelled_pairs(scheme, per_label: int = 2) -> list:
    """`per_label` labelled pairs for each label of `scheme` (ids t{label}{i}): a tiny train split."""
    return [Pair(f"t{label}{i}", f"query {label} {i}", f"Title {label} {i}", f"text about {label}", label,
                 f"q{label}{i}", f"i{label}{i}") for label in scheme.labels for i in range(per_label)]


def judge_once(program, pair=None, **inputs):
    """Judge one pair (a Pair, or its inputs query, item_title, item_text as keywords) under a fresh ledger;
    returns (prediction, ledger)."""
    book = ledger.Ledger()
    with ledger.bind(book):
        prediction = program(**(pair.inputs() if pair is not None else inputs))
    return prediction, book


def input_of(prompt: str, name: str = "query") -> str:
    """The value of the input field `name` in a ChatAdapter user message (the last one given, when demos repeat it)."""
    after = prompt.rsplit(f"[[ ## {name} ## ]]", 1)[-1] if f"[[ ## {name} ## ]]" in prompt else ""
    return after.split("[[ ##", 1)[0].strip()


def sent_texts(lm: dspy.LM, role: str | None = None) -> list[str]:
    """Every message text an LM was sent, in order (`role`: only "system" or only "user" messages)."""
    return [m["content"] for h in lm.history for m in h["messages"] if role is None or m["role"] == role]


def engine_calls(lms) -> dict[str, int]:
    """How many requests each role's fake engine answered."""
    return {role: lm.engine.calls for role, lm in lms.items()}


# ── a tiny synthetic TREC benchmark (no MS MARCO text): a folder in the `trec:` layout, and the same files as an
# ir_datasets dataset registered from local files (`irds:`), for tests, demos and docs ────────────────────────────

TREC_WORDS = ("river", "mountain", "python", "garden", "coffee", "violin", "rocket", "glacier", "harbor", "lantern",
              "orchid", "saddle", "tundra", "copper", "falcon", "meadow", "pepper", "quartz", "walnut", "zephyr")


def write_trec_folder(folder, queries: int = 12, passages: int = 8, long_passage: int = 0, seed: int = 0):
    """A synthetic TREC folder: topics.tsv, corpus.jsonl and qrels.txt (grades 0-3, the `trec` scheme), `queries`
    topics of two words with `passages` judged passages each, grade i % 4, the query's words said more often the
    higher the grade; `long_passage` > 0 makes the first passage that many characters long. Returns the folder."""
    import json
    import random
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    topics, corpus, qrels = [], [], []
    for q in range(queries):
        words = rng.sample(TREC_WORDS, 2)
        topics.append(f"q{q}\twhat about {' and '.join(words)}\n")
        for p in range(passages):
            grade = p % 4
            filler = " ".join(rng.choice([w for w in TREC_WORDS if w not in words]) for _ in range(6))
            text = " ".join([*words * grade, filler]) + f". A passage on {'the topic' if grade else 'something else'}."
            if long_passage and q == 0 and p == 0:  # numbered sentences: no repetition for the screen to drop
                parts = [text]
                while sum(map(len, parts)) < long_passage:
                    parts.append(f" Note {len(parts)}: {rng.choice(TREC_WORDS)} {rng.randrange(10**6)}.")
                text = "".join(parts)[:long_passage]
            corpus.append(json.dumps({"id": f"p{q}-{p}", "text": text}) + "\n")
            qrels.append(f"q{q} 0 p{q}-{p} {grade}\n")
    (folder / "topics.tsv").write_text("".join(topics))
    (folder / "corpus.jsonl").write_text("".join(corpus))
    (folder / "qrels.txt").write_text("".join(qrels))
    return folder


def write_trec_run(path, folder, tag: str, noise: float = 0.0, seed: int = 0, extra: int = 2):
    """A TREC run over `folder`'s judged passages plus `extra` unjudged ones per query (added to the corpus): scores
    follow the grade, blurred by `noise` (0: a perfect run). Returns the path."""
    import json
    import random
    from pathlib import Path

    folder, rng = Path(folder), random.Random(seed)
    grades = {}
    for line in (folder / "qrels.txt").read_text().splitlines():
        qid, _, docid, grade = line.split()
        grades.setdefault(qid, {})[docid] = int(grade)
    known = {json.loads(line)["id"] for line in (folder / "corpus.jsonl").read_text().splitlines()}
    lines, added = [], []
    for qid, docs in grades.items():
        scored = {d: g + rng.gauss(0, noise) for d, g in docs.items()}
        for i in range(extra):
            docid = f"u{qid}-{i}"
            scored[docid] = 1.5 + rng.gauss(0, noise)
            if docid not in known:
                known.add(docid)
                added.append(json.dumps({"id": docid, "text": f"an unjudged passage {i} on {rng.choice(TREC_WORDS)}"})
                             + "\n")
        ranked = sorted(scored.items(), key=lambda kv: -kv[1])
        lines += [f"{qid} Q0 {d} {r} {s:.4f} {tag}\n" for r, (d, s) in enumerate(ranked, 1)]
    with open(folder / "corpus.jsonl", "a") as fh:
        fh.writelines(added)
    Path(path).write_text("".join(lines))
    return Path(path)


def register_irds(name: str, folder) -> str:
    """Register `folder` (a `write_trec_folder` folder) as the ir_datasets dataset `name`, from its local files with
    ir_datasets' own components (TsvQueries, JsonlDocs, TrecQrels); returns the `irds:` spec. Registering a name
    twice keeps the first."""
    from pathlib import Path

    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import JsonlDocs, TrecQrels, TsvQueries
    from ir_datasets.util import LocalDownload

    folder = Path(folder)
    if name not in ir_datasets.registry:
        grades = {0: "Irrelevant", 1: "Related", 2: "Highly relevant", 3: "Perfectly relevant"}
        ir_datasets.registry.register(name, Dataset(
            TsvQueries(LocalDownload(folder / "topics.tsv")),
            JsonlDocs(LocalDownload(folder / "corpus.jsonl"), mapping={"doc_id": "id", "text": "text"}),
            TrecQrels(LocalDownload(folder / "qrels.txt"), grades)))
    return f"irds:{name}"
