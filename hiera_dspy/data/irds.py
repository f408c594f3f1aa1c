"""`irds:ID`: a dataset of the `ir_datasets` package (`pip install 'hiera-dspy[irds]'`) as a labelled dataset, e.g.
`irds:msmarco-passage/trec-dl-2020/judged`.

Its queries and qrels are iterated; documents are looked up in its docs store only for the judged ids (and, for
`eval.holes`, the ids the runs retrieve), never iterated whole. The pairs, splits and checks are those of `trec:FOLDER`
(`hiera_dspy.data.judged`): a qrel for an unknown query or document, a grade outside the scheme (default `trec`, 0-3),
or a document without text is a DataError naming the dataset and the qrel, or skipped and counted with
`--on-bad-row skip`. ir_datasets downloads what it has not cached on first use; a dataset registered from local files
(`ir_datasets.registry.register`) needs no network.
"""

from __future__ import annotations

from collections.abc import Iterable

from hiera_dspy.data import BadRows, CatalogEntry, DataError, Dataset
from hiera_dspy.data.judged import Where, grade_of, judged_dataset
from hiera_dspy.labels import LabelScheme, get_scheme

INSTALL = "pip install 'hiera-dspy[irds]' (or pip install ir_datasets)"


def open_dataset(dataset_id: str):
    """The ir_datasets dataset `dataset_id`, checked to have queries, docs and qrels; a DataError saying what to do."""
    if not dataset_id:
        raise DataError("irds: needs an ir_datasets id, e.g. --dataset irds:msmarco-passage/trec-dl-2020/judged")
    try:
        import ir_datasets
    except ImportError:
        raise DataError(f"irds:{dataset_id}: the ir_datasets package is not installed; {INSTALL}") from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise DataError(f"irds:{dataset_id}: ir_datasets knows no dataset {dataset_id!r}; see "
                        "https://ir-datasets.com for the ids") from None
    missing = [part for part in ("queries", "docs", "qrels") if not getattr(dataset, f"has_{part}")()]
    if missing:
        raise DataError(f"irds:{dataset_id}: has no {' and no '.join(missing)}; pick an id with queries, docs and "
                        f"qrels (e.g. a .../judged subset)")
    return dataset


def _where(dataset_id: str, rows: dict) -> Where:
    return lambda q, d: (f"irds:{dataset_id} qrels", {"row": f"qrel {rows[q, d]} (qid {q}, docid {d})"})


def benchmark(dataset_id: str, scheme: LabelScheme, bad: BadRows, more_docids: Iterable[str] = ()):
    """(topics, corpus, qrels, where) of an ir_datasets id: qid -> query text, docid -> CatalogEntry for the judged
    ids and `more_docids` (those the docs store has), (qid, docid) -> grade, and `where(qid, docid)` for BadRows."""
    dataset = open_dataset(dataset_id)
    source = f"irds:{dataset_id}"
    topics = {}
    for number, query in enumerate(dataset.queries_iter(), 1):
        text = (query.default_text() or "").strip()
        if not text:
            bad(f"{source} queries", f"query {query.query_id!r} has no text", row=f"query {number}")
            continue
        topics[str(query.query_id)] = text
    qrels: dict[tuple[str, str], int] = {}
    rows: dict[tuple[str, str], int] = {}
    for number, qrel in enumerate(dataset.qrels_iter(), 1):
        key = (str(qrel.query_id), str(qrel.doc_id))
        at = f"qrel {number} (qid {key[0]}, docid {key[1]})"
        if key in qrels:
            bad(f"{source} qrels", f"judged twice (first as qrel {rows[key]})", row=at)
            continue
        try:
            qrels[key] = grade_of(qrel.relevance, scheme)
        except ValueError as exc:
            bad(f"{source} qrels", str(exc), row=at)
            continue
        rows[key] = number
    wanted = sorted({d for _, d in qrels} | set(more_docids))
    corpus = {}
    for docid, doc in dataset.docs_store().get_many(wanted).items():
        title = str(getattr(doc, "title", "") or "").strip()
        text = str(getattr(doc, "text", None) or doc.default_text() or "").strip()
        if title == text:
            title = ""  # default_text() of a doc without a body is its title: keep it once
        if not (title or text):
            bad(f"{source} docs", "the document has no text", row=f"docid {docid}")
            continue
        corpus[str(docid)] = CatalogEntry(id=str(docid), title=title, text=text)
    return topics, corpus, qrels, _where(dataset_id, rows)


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """The judged pairs of an ir_datasets id under `scheme` (default `trec`): splits all, eval (default), train, dev."""
    scheme = scheme or get_scheme("trec")
    bad = BadRows(on_bad_row)
    topics, corpus, qrels, where = benchmark(arg or "", scheme, bad)
    return judged_dataset(f"irds:{arg}", topics, corpus, qrels, scheme, bad, where)
