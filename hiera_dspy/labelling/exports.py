"""The files of a labelling run, rebuilt from the run store: its records (labels.jsonl / new.jsonl lines), qrels and
pairs.jsonl.

A record is one judgment: the final label (a person's decision over the machine's), where it came from, the machine
label, its confidence and that confidence's source (`record`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from hiera_dspy.data.trec import format_qrels
from hiera_dspy.labelling.confidence import confidence
from hiera_dspy.labelling.history import folder_decisions
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.runs.files import write_atomic
from hiera_dspy.runs.store import RunStore


def pair_record(p: Pair) -> dict:
    """A pair as a line of pairs.jsonl."""
    return {"id": p.id, "query_id": p.query_id, "item_id": p.item_id, "query": p.query, "item_title": p.item_title,
            "item_text": p.item_text, "gold": p.label}


def read_pairs_file(out: Path) -> dict[str, dict]:
    """The pairs.jsonl of a labelling run's output folder, by pair id."""
    path = out / "pairs.jsonl"
    if not path.is_file():
        raise SystemExit(f"error: {path} is missing: the labelling run's output folder was moved or deleted")
    return {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}


def record(row: dict, pair: dict, method: str, decision: dict | None) -> dict:
    """One judgment as a labels.jsonl / new.jsonl record: the final label (a person's decision over the machine's),
    where it came from, the machine label, its confidence and that confidence's source; `manipulation`, the screen's
    flags, when the item text looked manipulated (`hiera_dspy.untrusted.screen`)."""
    conf = confidence(row)
    final = decision["label"] if decision else row.get("label")
    out = {"id": row["id"], "query_id": pair["query_id"], "item_id": pair["item_id"], "label": final,
           "source": "human" if decision else ("machine" if final else "none"), "machine_label": row.get("label"),
           "confidence": conf.value, "confidence_source": conf.source, "distribution": conf.distribution,
           "escalated": bool(row.get("escalated")), "method": method, "error": row.get("error")}
    flags = (row.get("fields") or {}).get("manipulation")
    if flags:
        out["manipulation"] = list(flags)
    if decision:
        out |= {"decided_by": decision["who"], "decided_at": iso(decision["at"]), "decided_via": decision["via"]}
    return out


def iso(t: float) -> str:
    """A Unix time as an ISO 8601 UTC timestamp."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write records as JSON lines (atomically); returns the path."""
    return write_atomic(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records))


def records_of(store: RunStore, run_id: str) -> list[dict]:
    """Every judgment of the labelling run as a record, in run order."""
    config = store.run_config(run_id) or {}
    pairs = read_pairs_file(Path(config["labelling"]["out"]))
    decisions = folder_decisions(store, run_id)  # a person's decisions on earlier runs of this folder still hold
    method = config.get("method", "?")
    return [record(r, pairs[r["id"]], method, decisions.get(r["id"])) for r in store.rows(run_id) if r["id"] in pairs]


def qrels_of(records: list[dict], scheme: LabelScheme) -> dict[tuple[str, str], int]:
    """(qid, docid) -> grade for every record with a final label."""
    return {(r["query_id"], r["item_id"]): scheme.labels.index(r["label"]) for r in records if r["label"]}


def export_label(store: RunStore, run_id: str, config: dict, records: list[dict]) -> list[Path]:
    """labels.jsonl and qrels.txt of an eval.label run."""
    out, scheme = Path(config["labelling"]["out"]), LabelScheme.from_dict(config["labelling"]["scheme"])
    return [write_jsonl(out / "labels.jsonl", records), write_atomic(out / "qrels.txt", format_qrels(qrels_of(
        records, scheme)))]
