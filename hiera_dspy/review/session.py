"""One run's review queue and its decisions, shared by the review page (eval.review) and the text view
(eval.escalations)."""

from __future__ import annotations

import getpass
import threading

from hiera_dspy.data import DataError, load_dataset
from hiera_dspy.errors import HieraError, RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.review.decisions import DecisionLog
from hiera_dspy.review.exports import iso
from hiera_dspy.review.history import folder_decisions
from hiera_dspy.review.pair_sample import PAIR_REASON, pair_entries, read_pair_sample
from hiera_dspy.review.queue import QueueEntry, review_queue
from hiera_dspy.review.run import export
from hiera_dspy.review.sample_log import SAMPLE_REASON, read_sample, sample_entries
from hiera_dspy.store.pairs_file import read_pairs_file
from hiera_dspy.store.run_settings import RunSettings, read_settings
from hiera_dspy.store.run_store import RunStore, no_run
from hiera_dspy.untrusted.screen import screen_item


class Review:
    """One run's review: the queue with everything a person needs to decide, and recording a decision."""

    def __init__(self, store: RunStore, run_id: str, budget: int = 50, who: str | None = None):
        self.store, self.run_id, self.budget = store, run_id, budget
        self.who = who or _user()
        settings = read_settings(store, run_id)
        if settings is None:
            raise RequestError(no_run(store, run_id))
        self.settings = settings
        self.scheme, self.pairs = _scheme_and_pairs(settings)
        self.decisions = DecisionLog(store.path)
        self.sample = read_sample(store.path, run_id)
        self.pair_sample = read_pair_sample(store.path, run_id)
        self._lock = threading.Lock()

    def decided_earlier(self) -> set[str]:
        """Pairs a person decided on an earlier run of this run's output folder and not on this run: their decision
        holds for this run too (`hiera_dspy.review.history`), so they are not queued again."""
        here = set(self.decisions.latest(self.run_id))
        return {pid for pid, d in folder_decisions(self.store, self.settings).items()
                if d["run_id"] != self.run_id and pid not in here}

    def queue(self) -> list[QueueEntry]:
        """The judgments a person should look at: the human sample's pairs first (every pair of each sampled
        query), then escalations, then the least confident within the budget; never a pair decided on an earlier
        run of the same output folder (the budget counts the others)."""
        done = self.decided_earlier()
        rows = [r for r in self.store.rows(self.run_id) if r["id"] not in done]
        first = sample_entries(self.sample, rows, {i: p.get("query_id") for i, p in self.pairs.items()})
        first += pair_entries(self.pair_sample, rows)
        taken = {e.row["id"] for e in first}
        return first + [e for e in review_queue(rows, self.budget) if e.row["id"] not in taken]

    def payload(self) -> dict:
        """The queue as the review page reads it, with the latest human decisions."""
        latest = self.decisions.latest(self.run_id)
        items = [self._item(entry, latest.get(entry.row["id"])) for entry in self.queue()]
        sample = [i for i in items if i["reason"] in (SAMPLE_REASON, PAIR_REASON)]
        return {"run_id": self.run_id, "method": self.settings.identity.get("method"), "labels": list(self.scheme.labels),
                "definitions": {label: self.scheme.definitions.get(label, "") for label in self.scheme.labels},
                "instructions": self.scheme.instructions, "examples": [dict(e) for e in self.scheme.examples],
                "budget": self.budget, "who": self.who, "items": items,
                "sample": {"pairs": len(sample), "remaining": sum(1 for i in sample if not i["decision"])}}

    def _item(self, entry: QueueEntry, decision: dict | None) -> dict:
        row, pair = entry.row, self.pairs.get(entry.row["id"], {})
        return {"id": row["id"], "query": pair.get("query", "(pair text not available)"),
                "item_title": pair.get("item_title", ""), "item_text": pair.get("item_text", ""),
                "machine_label": row.get("label"), "confidence": entry.confidence.value,
                "confidence_source": entry.confidence.source, "distribution": entry.confidence.distribution,
                "escalated": bool(row.get("escalated")), "reason": entry.reason, "transcript": transcript(row),
                "decision": _public(decision), **manipulation(row, pair)} | _hidden(entry, decision)

    def decide(self, pair_id: str, label: str, who: str, via: str = "review-page") -> dict:
        """Store one decision and re-export the labelling run's files (`decide_many`); `unchanged` when the pair's
        latest decision had this label already (not stored again). ValueError / UnknownPair for bad input."""
        done = self.decide_many([(pair_id, label, who)], via)
        return {"decision": done["decisions"][0], "unchanged": done["unchanged"] == 1, "written": done["written"]}

    def decide_many(self, decisions: list[tuple[str, str, str]], via: str = "review-page") -> dict:
        """Store (pair id, label, who) decisions in one transaction, all or nothing, then re-export the labelling
        run's files once. A decision equal to the pair's latest is not stored again (counted in `unchanged`).
        ValueError (a label not in the scheme) / UnknownPair before anything is stored."""
        for _, label, _ in decisions:
            if label not in self.scheme.labels:
                raise HieraError(f"label {label!r} is not in the scheme {list(self.scheme.labels)}")
        with self._lock:
            stored = self.decisions.record_many(self.run_id, decisions, via=via)
            written = export(self.store, self.run_id) if self.settings.labelling is not None else []
        return {"decisions": [_public(d) for d in stored], "recorded": sum(not d["unchanged"] for d in stored),
                "unchanged": sum(d["unchanged"] for d in stored), "written": [str(p) for p in written]}

    def next_step(self) -> str:
        """What to run after decisions, for this kind of run (`NEXT_STEP`)."""
        kind = self.settings.kind()
        return NEXT_STEP[kind].format(run_id=self.run_id)


# what a person runs after recording decisions, by the run's labelling kind (None: a plain eval.run run)
NEXT_STEP = {
    None: "metrics.json is eval.run's: rerun python -m eval.run with the same flags and --run-id {run_id} to refresh it",
    "label": "labels.jsonl and qrels.txt are up to date; the rest of the queue: python -m eval.review --run {run_id}",
    "holes": "qrels.txt, new.jsonl, summary.json and report.md are up to date; to print the report, rerun "
             "python -m eval.holes with the same flags and --run-id {run_id}; the rest of the queue: "
             "python -m eval.review --run {run_id}",
}


def manipulation(row: dict, pair: dict) -> dict:
    """What the review page shows of a judgment whose item looked manipulated: the screen's flags and the item as
    the judge read it (`hiera_dspy.untrusted.screen`); empty flags and no judged text for a clean item."""
    flags = list((row.get("fields") or {}).get("manipulation") or [])
    if not flags or not pair:
        return {"manipulation": flags}
    screened = screen_item(pair.get("query", ""), pair.get("item_title", ""), pair.get("item_text", ""))
    return {"manipulation": flags, "judged_title": screened.title, "judged_text": screened.text}


def _hidden(entry: QueueEntry, decision: dict | None) -> dict:
    """A sample pair shows nothing of the machine's until the person decides (no anchoring)."""
    if entry.reason not in (SAMPLE_REASON, PAIR_REASON) or decision:
        return {"hidden": False}
    return {"machine_label": None, "confidence": None, "confidence_source": None, "distribution": None,
            "escalated": False, "transcript": [], "hidden": True}


def transcript(row: dict) -> list[str]:
    """The debate turns, or the argument and reasoning a judge gave, as lines of text."""
    fields = row.get("fields") or {}
    lines = []
    for turn in fields.get("history") or []:
        if isinstance(turn, dict):
            who = turn.get("agent")
            lines.append(f"Round {turn.get('round')}, {who} ({turn.get('stance', turn.get('label'))}): "
                         f"{turn.get('argument', turn.get('rationale', ''))}")
        else:
            lines.append(str(turn))
    for key in ("argument", "evidence", "reasoning"):
        if fields.get(key):
            lines.append(f"{key.capitalize()}: {fields[key]}")
    return lines


def _public(decision: dict | None) -> dict | None:
    if not decision:
        return None
    return {"label": decision["label"], "who": decision["who"], "at": iso(decision["at"]), "via": decision["via"]}


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return "reviewer"


def _scheme_and_pairs(settings: RunSettings) -> tuple[LabelScheme, dict[str, dict]]:
    """A labelling run's scheme and pairs file; for a plain eval.run run, its dataset reloaded."""
    if (labelling := settings.labelling) is not None and labelling.scheme is not None:
        return labelling.scheme, read_pairs_file(labelling.out)

    try:
        dataset = load_dataset(settings.identity["dataset"])
        pairs = dataset.split(settings.split)
    except (DataError, KeyError) as exc:
        raise RequestError(f"cannot show this run's pairs ({exc}); eval.review shows runs of eval.label and "
                         "eval.holes, and eval.run runs of datasets that need no --scheme") from None
    return dataset.scheme, {p.id: p._asdict() for p in pairs}
