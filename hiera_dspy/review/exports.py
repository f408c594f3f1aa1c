"""The files of a labelling run, rebuilt from the run store: its records (labels.jsonl / new.jsonl lines) and qrels
(its pairs.jsonl, written before judging, is the store's: `hiera_dspy.store.pairs_file`).

A record is one judgment: the final label (a person's decision over the machine's), where it came from, the machine
label, its confidence and that confidence's source (`record`). Everything streams: pairs.jsonl is written in one
pass over the split, the records come from one merge pass over the store's rows and pairs.jsonl, and labels.jsonl and
qrels.txt are written together in one pass over the records, so an export's memory does not grow with the run.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from hiera_dspy.data.known_qrels import token_ids
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Judgment
from hiera_dspy.review.confidence import confidence
from hiera_dspy.review.history import folder_decisions
from hiera_dspy.store.files import atomic_file
from hiera_dspy.store.pairs_file import iter_pairs_file
from hiera_dspy.store.run_settings import RunSettings
from hiera_dspy.store.run_store import RunStore


def record(row: dict, pair: dict, method: str, decision: dict | None) -> dict:
    """One judgment as a labels.jsonl / new.jsonl record: the final label (a person's decision over the machine's),
    where it came from, the machine label, its confidence and that confidence's source; `manipulation`, the screen's
    flags, when the item text looked manipulated (`hiera_dspy.untrusted.screen`); `truncated` (field -> original
    characters) when a field was cut to fit the prompt."""
    conf = confidence(row)
    final = decision["label"] if decision else row.get("label")
    out = {"id": row["id"], "query_id": pair["query_id"], "item_id": pair["item_id"], "label": final,
           "source": "human" if decision else ("machine" if final else "none"), "machine_label": row.get("label"),
           "confidence": conf.value, "confidence_source": conf.source, "distribution": conf.distribution,
           "escalated": bool(row.get("escalated")), "method": method, "error": row.get("error")}
    flags = (row.get("fields") or {}).get("manipulation")
    if flags:
        out["manipulation"] = list(flags)
    cut = (row.get("fields") or {}).get("truncated")
    if cut:
        out["truncated"] = dict(cut)  # field -> original characters: the judge read only the first part
    if decision:
        out |= {"decided_by": decision["who"], "decided_at": iso(decision["at"]), "decided_via": decision["via"]}
    return out


def iso(t: float) -> str:
    """A Unix time as an ISO 8601 UTC timestamp."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write_jsonl(path: Path, records: Iterable[dict]) -> Path:
    """Write records as JSON lines (atomically, streamed); returns the path."""
    with atomic_file(path) as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    return path


RECORD_COLUMNS = ("run_id, pair_id, position, gold, label, fields, tokens, lm_calls, tokens_by_role, seconds, error, "
                  "escalated, delegated, human_label, attempts, finished")  # a record needs no step trace


def records_of(store: RunStore, settings: RunSettings) -> Iterator[dict]:
    """Every judgment of the labelling run (its settings read by the caller) as a record, in run order, streamed: the
    store's rows (in position order) are matched to pairs.jsonl (in split order) in one merge pass; a row whose
    position no longer names its pair (the split changed between runs) is matched in one more pass at the end. Rows of
    pairs not in the file are left out."""
    run_id = settings.run_id
    if settings.labelling is None:
        raise RequestError(f"run {run_id!r} is not a labelling run (made by eval.label or eval.holes)")
    path = settings.labelling.out / "pairs.jsonl"
    decisions = folder_decisions(store, settings)  # a person's decisions on earlier runs of this folder still hold
    method = settings.method
    strays: dict[str, Judgment] = {}
    lines = enumerate(iter_pairs_file(path))
    index, pair = next(lines, (None, None))
    for row in store.iter_rows(run_id, columns=RECORD_COLUMNS):
        while index is not None and row.position is not None and index < row.position:
            index, pair = next(lines, (None, None))
        if index is not None and index == row.position and pair["id"] == row.id:
            yield record(row, pair, method, decisions.get(row.id))
        else:
            strays[row.id] = row
    if strays:
        for pair in iter_pairs_file(path):
            row = strays.pop(pair["id"], None)
            if row is not None:
                yield record(row, pair, method, decisions.get(row.id))


def qrels_of(records: Iterable[dict], scheme: LabelScheme) -> dict[tuple[str, str], int]:
    """(qid, docid) -> grade for every record with a final label."""
    return {(r["query_id"], r["item_id"]): scheme.labels.index(r["label"]) for r in records if r["label"]}


def export_label(store: RunStore, settings: RunSettings, records: Iterable[dict]) -> list[Path]:
    """labels.jsonl and qrels.txt of an eval.label run, written from one pass over the records. A qrels line is
    `qid 0 docid grade`, its qid numbered as `export --format qrels` numbers them (`token_ids`: the ids themselves
    when every one is a token, else 1, 2, ... in run order, for pairs whose query id is their text); the judged
    (query, docid, grade) wait in a spool file meanwhile, so memory holds only the distinct query ids."""
    assert settings.labelling is not None and settings.labelling.scheme is not None  # a label run (review.run)
    out, scheme = settings.labelling.out, settings.labelling.scheme
    queries: dict[str, None] = {}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        with atomic_file(out / "labels.jsonl") as labels:
            for r in records:
                labels.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
                if r["label"]:
                    queries.setdefault(r["query_id"])
                    spool.write(json.dumps([r["query_id"], r["item_id"], scheme.labels.index(r["label"])]) + "\n")
        ids = token_ids(queries)
        spool.seek(0)
        with atomic_file(out / "qrels.txt") as qrels:
            for line in spool:
                query_id, item_id, grade = json.loads(line)
                qrels.write(f"{ids[query_id]} 0 {item_id} {grade}\n")
    return [out / "labels.jsonl", out / "qrels.txt"]
