"""The judged pairs of a retrieval benchmark (topics, a corpus, qrels) as a labelled dataset: `trec:FOLDER` and
`irds:ID` both end here.

Every judgment is one labelled Pair: id `qid:docid`, `query_id` the qid, `item_id` the docid, its label the scheme's
label at the qrel's grade (the `trec` scheme by default: 0 Irrelevant .. 3 Perfectly relevant; its binary view counts
grade 2 and up). A qrel whose qid is not a topic or whose docid is not in the corpus is a bad row (a DataError
naming the qrels file and line, or skipped and counted with `on_bad_row="skip"`). Passages keep their whole text
here: an LLM judge's prompt cuts a long one visibly (`$HIERA_ITEM_CHARS`, the judgment's `truncated` field);
`notes["long_items"]` counts the passages longer than that budget, `notes["longest_item"]` gives the longest one's
characters.

Splits: `all` (every judged pair, in qrels order), and `eval` (the default), `train`, `dev` drawn by the paper's
protocol (`sampling.make_splits`: disjoint sets of queries, 60/20/20, each a label-balanced sample).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hiera_dspy.data import BadRows, CatalogEntry, DataError, Dataset
from hiera_dspy.data.sampling import make_splits
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.untrusted.blocks import item_text_budget

# where a qrel was read: (file or source, {"line": N} or {"row": "..."}), for BadRows
Where = Callable[[str, str], tuple[str, dict]]


def judged_pairs(topics: Mapping[str, str], corpus: Mapping[str, CatalogEntry], qrels: Mapping[tuple[str, str], int],
                 scheme: LabelScheme, bad: BadRows, where: Where) -> list[Pair]:
    """One labelled Pair per qrel whose topic and document are known (in qrels order); any other qrel is a bad row."""
    pairs = []
    for (qid, docid), grade in qrels.items():
        problem = (f"qid {qid!r} is not in the topics" if qid not in topics else
                   f"docid {docid!r} is not in the corpus" if docid not in corpus else None)
        if problem is not None:
            source, at = where(qid, docid)
            bad(source, f"{problem}; a judgment needs its query's text and its passage's text", **at)
            continue
        doc = corpus[docid]
        pairs.append(Pair(id=f"{qid}:{docid}", query=topics[qid], item_title=doc.title, item_text=doc.text,
                          label=scheme.labels[grade], query_id=qid, item_id=docid))
    return pairs


def judged_dataset(name: str, topics: Mapping[str, str], corpus: Mapping[str, CatalogEntry],
                   qrels: Mapping[tuple[str, str], int], scheme: LabelScheme, bad: BadRows, where: Where) -> Dataset:
    """The labelled dataset of a benchmark's judgments (see the module doc); the catalog is the corpus."""
    pairs = judged_pairs(topics, corpus, qrels, scheme, bad, where)
    if not pairs:
        raise DataError(f"{name}: no judged pair has both its query and its passage"
                        + (f" ({len(bad.rows)} bad rows skipped)" if bad.rows else "")
                        + "; check that the qrels' qids and docids are those of the topics and the corpus")
    budget = item_text_budget()
    lengths = [len(p.item_text) for p in pairs]
    notes = {"n_pairs": len(pairs), "queries": len({p.query_id for p in pairs}), "skipped_rows": bad.rows,
             "long_items": sum(1 for n in lengths if n > budget), "longest_item": max(lengths),
             "item_chars": budget}
    return Dataset(name=name, scheme=scheme, splits={"all": pairs, **make_splits(pairs, scheme)},
                   catalog=list(corpus.values()), default_split="eval", notes=notes)


def grade_of(value, scheme: LabelScheme) -> int:
    """A qrel's grade as an index of `scheme.labels`; ValueError naming the scheme's grades otherwise."""
    top = len(scheme.labels) - 1
    try:
        grade = int(value)
    except (TypeError, ValueError):
        raise HieraError(f"grade {value!r} is not an integer") from None
    if not 0 <= grade <= top:
        raise HieraError(f"grade {grade} is outside the scheme {scheme.name!r} (0..{top}: "
                         f"{', '.join(f'{i}={lab}' for i, lab in enumerate(scheme.labels))})")
    return grade
