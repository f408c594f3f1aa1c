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
from pathlib import Path

from hiera_dspy.store import sqlite
from hiera_dspy.store.run_store import RunStore

NOTE = "export"
PAIRS_NOTE = "pairs"


def signature(store: RunStore, run_id: str, source: dict | None, split: str, limit: int | None,
              out: str) -> dict | None:
    """What an export of the run would be made from now; None when the input has no cheap fingerprint."""
    if not source:
        return None
    rows, last = store.last_change(run_id)
    return {"source": source, "split": split, "limit": limit, "out": out, "rows": rows, "last_row": last,
            "decisions": _decisions(store, run_id)}


def fresh_summary(store: RunStore, run_id: str, sig: dict | None) -> dict | None:
    """The summary of the run's last export if that export was made from `sig` (nothing changed since); else None."""
    if sig is None:
        return None
    note = store.note(run_id, NOTE)
    return note["summary"] if note and note.get("signature") == sig else None


def mark_fresh(store: RunStore, run_id: str, sig: dict | None, summary: dict) -> None:
    """Note that the run's outputs were just exported from `sig`, with this summary."""
    if sig is not None:
        store.set_note(run_id, NOTE, {"signature": sig, "summary": summary})


def pairs_written(store: RunStore, run_id: str, source: dict | None, split: str, limit: int | None,
                  out: Path) -> int | None:
    """How many pairs OUT/pairs.jsonl has, if it was written from exactly this input, split and limit (a resume
    then skips rewriting it); None when it must be written."""
    note = store.note(run_id, PAIRS_NOTE)
    key = _pairs_key(source, split, limit, out)
    if key is None or not note or note.get("key") != key or not (out / "pairs.jsonl").is_file():
        return None
    stat = (out / "pairs.jsonl").stat()
    return note["count"] if [stat.st_size, stat.st_mtime_ns] == note.get("file") else None


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
