"""A run's judgments as a `Known` table, the form every judgment-list writer takes
(`hiera_dspy.data.judgment_lists.write_list`).

- a labelling run (eval.label): each record's final label (a person's decision over the machine's), query and
  document ids and the query's text from the run's pairs.jsonl; records without a final label (escalated and
  undecided, failed) are left out, as from its qrels.txt;
- a holes run (eval.holes), the filled benchmark: the benchmark's own judgments, then the filled holes, as its
  qrels.txt; query texts from its topics;
- any other run (eval.run, eval.ablate, optimize.compile's scoring): each judged pair's label given by the judge,
  its ids and text from the dataset the run judged (`pairs`, loaded by the caller); failed judgments are left out.
Which kind a run is comes from its config in the run store (`labelling.kind`).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from hiera_dspy.benchmark.filled import hole_records
from hiera_dspy.benchmark.inputs import read_inputs
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.review.exports import records_of
from hiera_dspy.store.pairs_file import iter_pairs_file
from hiera_dspy.store.run_settings import RunSettings
from hiera_dspy.store.run_store import RunStore


def labelled_known(store: RunStore, settings: RunSettings) -> Known:
    """An eval.label run's final labels."""
    labelling, run_id = settings.labelling, settings.run_id
    assert labelling is not None and labelling.scheme is not None  # a label run (LABELLING_SOURCES)
    scheme = labelling.scheme
    texts = {p["query_id"]: p["query"] for p in iter_pairs_file(labelling.out / "pairs.jsonl")}
    return Known.of(scheme, (KnownJudgment(r["query_id"], r["item_id"], scheme.labels.index(r["label"]),
                                           query=texts.get(r["query_id"]), source=f"run {run_id}:{r['id']}")
                             for r in records_of(store, settings) if r["label"]))


def filled_known(store: RunStore, settings: RunSettings) -> Known:
    """A holes run's filled benchmark: the given judgments, then the holes with a final label."""
    labelling, run_id = settings.labelling, settings.run_id
    assert labelling is not None and labelling.scheme is not None  # a holes run (LABELLING_SOURCES)
    scheme = labelling.scheme
    inputs = read_inputs(labelling.section, scheme)
    given = (KnownJudgment(q, d, g, query=inputs.topics.get(q), source=f"{labelling.get('qrels') or 'qrels'}")
             for (q, d), g in inputs.qrels.items())
    holes = (KnownJudgment(r["query_id"], r["item_id"], scheme.labels.index(r["label"]),
                           query=inputs.topics.get(r["query_id"]), source=f"run {run_id}:{r['id']}")
             for r in hole_records(list(records_of(store, settings)), inputs.qrels) if r["label"])
    return Known.of(scheme, chain(given, holes))


def judged_known(store: RunStore, run_id: str, scheme: LabelScheme, pairs: Iterable[Pair]) -> Known:
    """Any other run's labels (the judge's), the pairs' ids and texts from the dataset it judged."""
    by_id = {p.id: p for p in pairs}
    out, missing = [], 0
    for row in store.iter_rows(run_id, columns="pair_id, label, error"):
        pair = by_id.get(row.id)
        if pair is None:
            missing += 1
            continue
        if row.label and not row.error and row.label in scheme.labels:
            out.append(KnownJudgment(pair.query_id or pair.query, pair.item_id or pair.id,
                                     scheme.labels.index(row.label), item_title=pair.item_title,
                                     query=pair.query, source=f"run {run_id}:{row.id}"))
    if missing and not out:
        raise RequestError(f"run {run_id!r}: none of its {missing} judged pairs is in the dataset it names; pass the "
                           f"dataset and split it judged")
    return Known.of(scheme, out)


# labelling kind -> its Known; a run without a labelling section is a judged run (`judged_known`)
LABELLING_SOURCES = {"label": labelled_known, "holes": filled_known}
