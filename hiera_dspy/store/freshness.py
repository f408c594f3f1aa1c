"""Whether a labelling run's outputs are up to date, so that re-running a finished million-pair run costs seconds.

After an export of a run in which every pair of the split has its row, eval.label keeps a note in the store: what the
export was made from (the input file's path, size and modification time, the split and limit, the output folder, the
run's row count and last write, its human decisions) and the summary it printed. Started again with nothing changed,
eval.label finds the note equal to what it sees now and stops there (the files on disk are that export), without
reading the input or the rows. Any change (a touched input file, a new row, a decision, `--retry-errors`) misses the
note, and the run resumes and exports as usual. Only inputs that can be fingerprinted cheaply (a jsonl file: the
loader's `notes["source"]`) take this path. In the same way a resume does not rewrite OUT/pairs.jsonl when it was
written from the same input, split and limit and is unchanged since.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.store import sqlite
from hiera_dspy.store.run_store import RunStore

NOTE = "export"
PAIRS_NOTE = "pairs"


@dataclass(frozen=True)
class Freshness:
    """What the store says of a labelling run's outputs now, read in one pass (`check`): `signature`, what an export
    now would be made from (None without a cheap fingerprint); `summary`, the summary of the last export when it was
    made from exactly that (nothing to redo); `pairs`, how many pairs OUT/pairs.jsonl has when it was written from
    this input, split and limit and is unchanged since (None: write it)."""

    signature: dict | None = None
    summary: dict | None = None
    pairs: int | None = None


def check(store: RunStore, run_id: str, source: dict | None, split: str, limit: int | None, out: Path,
          export: bool = True) -> Freshness:
    """The run's `Freshness`: its notes and its last change read from the store once (`export` False: the last
    export is not looked at, e.g. when errors are judged again)."""
    key = _pairs_key(source, split, limit, out)
    if key is None:  # no cheap fingerprint of the input: nothing is known to be up to date
        return Freshness()
    decisions = _decisions(store, run_id)
    rows, last = store.last_change(run_id)
    exported, written = store.note(run_id, NOTE), store.note(run_id, PAIRS_NOTE)
    sig = {**key, "rows": rows, "last_row": last, "decisions": decisions}  # as `signature` makes it
    summary = exported["summary"] if export and exported and exported.get("signature") == sig else None
    pairs = None
    if written and written.get("key") == key and (out / "pairs.jsonl").is_file():
        stat = (out / "pairs.jsonl").stat()
        pairs = written["count"] if [stat.st_size, stat.st_mtime_ns] == written.get("file") else None
    return Freshness(sig, summary, pairs)


def signature(store: RunStore, run_id: str, source: dict | None, split: str, limit: int | None,
              out: str) -> dict | None:
    """What an export of the run would be made from now; None when the input has no cheap fingerprint."""
    if not source:
        return None
    decisions = _decisions(store, run_id)
    rows, last = store.last_change(run_id)
    return {"source": source, "split": split, "limit": limit, "out": out, "rows": rows, "last_row": last,
            "decisions": decisions}


def mark_fresh(store: RunStore, run_id: str, sig: dict | None, summary: dict) -> None:
    """Note that the run's outputs were just exported from `sig`, with this summary."""
    if sig is not None:
        store.set_note(run_id, NOTE, {"signature": sig, "summary": summary})


def mark_pairs(store: RunStore, run_id: str, source: dict | None, split: str, limit: int | None, out: Path,
               count: int) -> None:
    """Note what OUT/pairs.jsonl was just written from (and its size and time, so that an edited file is rewritten)."""
    key = _pairs_key(source, split, limit, out)
    if key is not None:
        stat = (out / "pairs.jsonl").stat()
        store.set_note(run_id, PAIRS_NOTE, {"key": key, "count": count, "file": [stat.st_size, stat.st_mtime_ns]})


def _pairs_key(source: dict | None, split: str, limit: int | None, out: Path) -> dict | None:
    return {"source": source, "split": split, "limit": limit, "out": str(out)} if source else None


def _decisions(store: RunStore, run_id: str) -> list:
    """(count, last time) of the store's human decisions (the review's log lives in the same SQLite file)."""
    db = sqlite.open_read(store.path)
    try:
        # every run's: an export carries a person's decisions on earlier runs of the same folder too
        return list(db.execute("SELECT count(*), max(at) FROM decisions").fetchone())
    except sqlite3.OperationalError:  # no decisions table yet: nobody reviewed anything
        return [0, None]
    finally:
        db.close()
