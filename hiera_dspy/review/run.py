"""What eval.label, eval.holes and eval.review share: a labelling run (a run whose pairs may have no gold) and its
exported files. Judging one is `hiera_dspy.jobs.labelling.label_pairs`.

A labelling run is an ordinary run in the run store (resumable, same run id rules as eval.run); its config carries a
`labelling` section (kind, output folder, label scheme, and for holes the input files) from which `export` rewrites
every output file, atomically, after the run and after each review decision:
- pairs.jsonl    the judged pairs (id, query_id, item_id, query, item_title, item_text): what a reviewer reads
- labels.jsonl (eval.label) / new.jsonl (eval.holes): one record per judgment (see `record`)
- qrels.txt      `qid 0 docid grade` (grade = the final label's index in the scheme); escalated, undecided pairs and
                 failed judgments get no line; eval.holes writes every original judgment first, unchanged
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.errors import RequestError
from hiera_dspy.records import Judgment
from hiera_dspy.registry import Entry
from hiera_dspy.review.exports import records_of
from hiera_dspy.store.run_settings import RunSettings, read_settings
from hiera_dspy.store.run_store import RunStore


@dataclass
class LabellingRun:
    """A finished labelling run: its id, store, settings (as the run resumed with them) and judgment rows (streamed
    from the store when iterated)."""
    run_id: str
    store: RunStore
    settings: RunSettings
    rows: Sequence[Judgment]
    fresh: dict | None = None  # the summary of an export made from what it would be made from now: nothing to do


# kind -> function(store, settings, records) -> written paths; `records` is an iterator, read once
# labelling kind -> the function writing its files, imported when a run of that kind exports (a label run does not
# load the holes' conclusions and their plots)
EXPORTERS = {"label": "hiera_dspy.review.exports:export_label", "holes": "hiera_dspy.benchmark.filled:export_holes"}


def export(store: RunStore, run_id: str, tap: Callable[[dict], object] | None = None) -> list[Path]:
    """Rewrite every output file of a labelling run from the store (decisions included); returns the paths. `tap`
    sees every record on its way to the files (a summary counted in the same pass)."""
    settings = read_settings(store, run_id)
    if settings is None or settings.labelling is None:
        raise RequestError(f"run {run_id!r} is not a labelling run (made by eval.label or eval.holes)")
    return export_run(store, settings, tap)


def export_run(store: RunStore, settings: RunSettings, tap: Callable[[dict], object] | None = None) -> list[Path]:
    """`export` of the labelling run whose settings the caller holds already (the job that judged it)."""
    assert settings.labelling is not None  # a labelling run: its job started it as one
    records = records_of(store, settings)
    if tap is not None:
        records = _tapped(records, tap)
    kind = settings.labelling.kind
    return Entry(kind, loader=EXPORTERS[kind]).load()(store, settings, records)


def _tapped(records: Iterable[dict], tap: Callable[[dict], object]) -> Iterator[dict]:
    for r in records:
        tap(r)
        yield r
