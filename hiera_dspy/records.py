"""Typed records shared by every part of the library: the `Pair` to judge and the `Judgment` made of it; the human
`Sample` of a benchmark's queries (drawn by `hiera_dspy.benchmark.sample`, kept by `hiera_dspy.review.sample_log`,
read by the conclusions).

A Judgment is one row: the runner builds it (`Judgment.of`), the run store keeps it (one SQLite row), and metrics,
reports, traces and predictions.jsonl read it. Its `fields` are the method's own outputs (`prediction_fields`), so a
new method's outputs reach the store and predictions.jsonl without any list to edit. Its `steps` are the ledger's
`Step`s (each booked by hiera_dspy/lm/ledger.py). A Judgment also reads as a mapping (`row["label"]`, `row.get("fields")`), the
shape of its `to_dict()`, so code written against the dict rows keeps working.

On-disk forms, all read back by `Judgment.from_dict`: the run store's row (`to_dict`), a predictions.jsonl line
(`prediction_line`). Rows written before the Judgment existed load too: they repeated the label inside `fields`,
which is dropped on read (`_migrate`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from hiera_dspy.errors import HieraError


class Pair(NamedTuple):
    """One query-item pair to judge. `label` is a label string of the scheme (None when unlabelled); `grade`, where
    the source gives more than the label, the graded value it was binned from on the scheme's 0 .. K-1 scale (Home
    Depot: the raters' mean minus one), which a learned judge can regress on."""

    id: str
    query: str
    item_title: str
    item_text: str
    label: str | None
    query_id: str
    item_id: str
    grade: float | None = None

    def inputs(self) -> dict[str, str]:
        """The program's inputs: query, item title and item text."""
        return {"query": self.query, "item_title": self.item_title, "item_text": self.item_text}


@dataclass
class Step:
    """One agent step of a judgment: its LM calls, tokens, seconds, outputs and salvage notes."""
    name: str
    role: str
    seconds: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_calls: int = 0  # of `calls`, the ones DSPy's cache answered (booked at their recorded cost)
    parse_recovered: bool = False  # the answer did not parse and was salvaged
    degraded: list[str] = field(default_factory=list)  # outputs the salvage had to default
    outputs: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)  # what this step was given beyond the pair (see `shown`)
    profile: str | None = None  # the model profile its prompt was fitted to (hiera_dspy.lm.profiles)

    def to_dict(self) -> dict:
        """The step as a plain dict (what a judgment row stores)."""
        return dict(self.__dict__)


PAIR_INPUTS = frozenset({"query", "item", "item_title", "item_text", "label_definitions"})


def shown(inputs: dict[str, Any]) -> dict[str, Any]:
    """A step's inputs worth keeping in its trace: what it was handed beyond the pair itself (a question, the gaps,
    the triage, the evidence)."""
    return {k: v for k, v in inputs.items() if k not in PAIR_INPUTS}


class RecordError(HieraError):
    """A stored judgment that cannot be read; the message names the file, line and field."""


STEP_KEYS = tuple(f.name for f in dataclasses.fields(Step))
PREDICTION_KEYS = ("id", "gold", "label", "human_label", "error", "escalated", "delegated", "tokens", "lm_calls",
                   "seconds", "fields")  # one predictions.jsonl line (this order)


def json_value(value: Any) -> Any:
    """`value` as JSON data, the rule for a prediction's outputs: JSON types as they are (containers item by item,
    tuples and sets as lists, keys as text), numpy values and arrays via `tolist()`, pydantic models and dataclasses
    as their fields, anything else as its `str()` text (what the run store has always stored for such values)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(v) for v in value]
    if hasattr(value, "model_dump"):  # pydantic
        return json_value(value.model_dump(mode="json"))
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return json_value(value.tolist())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value(dataclasses.asdict(value))
    return str(value)


def prediction_fields(prediction) -> dict[str, Any]:
    """A finished prediction's outputs for its judgment's `fields`: every output with a value, as JSON data
    (`json_value`), except names starting with "_" and `label`, which is the judgment's own (an escalated judgment
    has no label: then the prediction's label, if any, stays in `fields`)."""
    escalated = bool(prediction.get("escalated"))
    return {k: json_value(v) for k, v in prediction.items()
            if v is not None and not k.startswith("_") and (k != "label" or escalated)}


def step_from_dict(data: Mapping) -> Step:
    """A ledger Step from its stored dict (keys a newer version added are ignored, missing ones take defaults; an
    unnamed step is named "?")."""
    return Step(**{"name": "?", "role": "?", **{k: data[k] for k in STEP_KEYS if k in data}})


@dataclass(eq=True)
class Judgment(Mapping):
    """One finished judgment of one pair: its label (None for an error or an escalation), the method's outputs
    (`fields`), the agent steps with their cost, and, once stored, its run, attempts and human label."""

    id: str
    gold: str | None = None
    label: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    tokens: int = 0
    lm_calls: int = 0
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    seconds: float | None = None
    error: str | None = None
    escalated: bool = False
    delegated: bool | None = None
    position: int | None = None
    human_label: str | None = None
    attempts: int = 1
    finished: float | None = None
    run_id: str | None = None

    @classmethod
    def of(cls, pair, prediction, error: str | None, book, seconds: float, position: int | None = None) -> Judgment:
        """The judgment of `pair` from the program's prediction (or its error message) and the judgment's ledger."""
        fields: dict[str, Any] = {}
        label = None
        if error is None:
            fields = prediction_fields(prediction)
            fields.update(failure_fields(book))
            escalated = bool(fields.get("escalated"))
            label = None if escalated else json_value(prediction.get("label"))
        by_role = book.by_role()
        return cls(id=pair.id, position=position, gold=pair.label, label=label, fields=fields, steps=list(book.steps),
                   tokens=book.tokens, lm_calls=book.calls,
                   tokens_by_role={r: v["prompt_tokens"] + v["completion_tokens"] for r, v in by_role.items()},
                   seconds=seconds, error=error, escalated=bool(fields.get("escalated")),
                   delegated=None if fields.get("delegated") is None else bool(fields["delegated"]))

    @property
    def final_label(self) -> str | None:
        """The label the metrics score: a recorded human decision (DREAM escalations) over the automatic one."""
        return self.human_label or self.label

    # --- reading and writing ------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping) -> Judgment:
        """A Judgment from a stored row, a predictions.jsonl line or a `to_dict()`; rows of any earlier version load
        (see `_migrate`). Unknown keys are ignored; a missing or malformed `id` raises RecordError naming it."""
        if isinstance(data, Judgment):
            return data
        if not isinstance(data, Mapping):
            raise RecordError(f"a judgment is a JSON object, got {type(data).__name__}")
        data = dict(data)
        if "id" not in data and "pair_id" in data:
            data["id"] = data.pop("pair_id")
        if not isinstance(data.get("id"), (str, int)) or isinstance(data.get("id"), bool):
            raise RecordError(f"field 'id': expected the pair id, got {data.get('id')!r}")
        for key in ("fields", "tokens_by_role"):
            if not isinstance(data.get(key) or {}, Mapping):
                raise RecordError(f"field {key!r}: expected an object, got {type(data[key]).__name__}")
        if not isinstance(data.get("steps") or [], list):
            raise RecordError(f"field 'steps': expected a list, got {type(data['steps']).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        values["fields"] = dict(values.get("fields") or {})
        values["tokens_by_role"] = dict(values.get("tokens_by_role") or {})
        values["steps"] = [s if isinstance(s, Step) else step_from_dict(s) for s in values.get("steps") or []]
        values["escalated"] = bool(values.get("escalated"))
        if "delegated" in values:
            values["delegated"] = bool(values["delegated"])
        return _migrate(cls(**values))

    def to_dict(self) -> dict[str, Any]:
        """The whole judgment as JSON data (steps as dicts): what the run store writes and `from_dict` reads."""
        return {k: self[k] for k in self}

    def prediction_line(self) -> dict[str, Any]:
        """One predictions.jsonl line: the pair id, gold and given labels, outcome, cost and the method's fields."""
        return {k: self[k] for k in PREDICTION_KEYS}

    # --- read as a mapping: the shape of to_dict() -----------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        if key not in _KEYS:
            raise KeyError(key)
        value = getattr(self, key)
        return [s.to_dict() if isinstance(s, Step) else dict(s) for s in value] if key == "steps" else value

    def __iter__(self) -> Iterator[str]:
        return iter(_KEYS)

    def __len__(self) -> int:
        return len(_KEYS)

    __hash__ = None  # mutable, like a dict


_KEYS = tuple(f.name for f in dataclasses.fields(Judgment))


def _migrate(judgment: Judgment) -> Judgment:
    """Bring a row of an earlier version to this one: rows written before the Judgment repeated the label in
    `fields` (kept only where it says something: an escalated judgment's provisional label)."""
    if not judgment.escalated:
        judgment.fields.pop("label", None)
    return judgment


def failure_fields(book) -> dict:
    """`parse_recovered` when any step's answer was salvaged (its label read from a malformed answer), `degraded`: the
    steps that had to default some outputs; the judgment keeps its label, and both are counted in metrics.json."""
    out: dict = {}
    if book.recovered_steps():
        out["parse_recovered"] = True
    if book.degraded_steps():
        out["degraded"] = sorted(set(book.degraded_steps()))
    return out


def as_judgment(row: Mapping) -> Judgment:
    """`row` as a Judgment (itself if it is one): every reader of rows accepts Judgments and plain dicts alike."""
    return row if isinstance(row, Judgment) else Judgment.from_dict(row)


def write_predictions(path: str | Path, judgments) -> None:
    """predictions.jsonl: one `prediction_line` a line (extra keys of a dict row beside a Judgment are not kept)."""
    with open(path, "w") as fh:
        for row in judgments:
            fh.write(json.dumps(as_judgment(row).prediction_line(), default=str) + "\n")


def read_predictions(path: str | Path) -> list[Judgment]:
    """The judgments of a predictions.jsonl file; a bad line raises RecordError naming the file, line and field."""
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Judgment.from_dict(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise RecordError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        except (RecordError, TypeError) as exc:
            raise RecordError(f"{path}:{number}: {exc}") from None
    return out


@dataclass(frozen=True)
class Sample:
    """The sampled query ids in draw order, the seed, the method and what was asked for (`8` or `10%`); a stratified
    sample also the number of strata and each query's stratum (0 = least uncertain); an active one each query's
    probability when it was drawn and the draw's weight of every query of the benchmark (the estimates weight by
    the inverse, `hiera_dspy.conclude.sequence`)."""
    queries: list[str]
    seed: int
    method: str
    requested: str
    strata: int | None = None
    stratum: list[int] | None = None
    probabilities: list[float] | None = None
    weights: dict[str, float] | None = None

    @property
    def allocation(self) -> list[int] | None:
        """A stratified sample's number of queries per stratum (least uncertain first); None for a random one."""
        if self.strata is None or self.stratum is None:
            return None
        return [self.stratum.count(h) for h in range(self.strata)]
