"""Known judgments as a judging job's evidence: read and checked against the pairs to judge, handed to the judge
once before any pair (`hiera_dspy.data.known.ReadsKnown`), and what the judge read, per query (the `known` section of
summary.json, report.md and metrics.json).

Checks, each an error naming file, line and what to do, or a count:
- a known pair that is also a pair to judge would leak its label into its own judgment: a DataError naming its line,
  or with `on_overlap="skip"` those known judgments are dropped and counted (`overlap_skipped`);
- judgments of queries with no pair to judge are counted (`outside`, `outside_queries`) and kept (a judge may
  calibrate on the whole collection's judgments); judging goes on.
A judge that is not a ReadsKnown judges every pair alone, as before: the use says so (`reads` False).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hiera_dspy.data import CatalogEntry, DataError, Dataset
from hiera_dspy.data.judgment_lists import apart_from, read_known
from hiera_dspy.data.known import Known, KnownJudgment, ReadsKnown
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair

OVERLAP = ("error", "skip")  # what a known pair that is also to be judged does (--on-known-overlap)


@dataclass(frozen=True)
class Evidence:
    """The known judgments a job hands its judge (`known`), where they came from (`source`), the queries of the
    pairs to judge, in order (`queries`), and the counts of reading and checking them (`counts`)."""

    known: Known
    source: str
    queries: tuple[str, ...]
    counts: Mapping[str, int]

    def identity(self, reads: bool, demos: dict | None = None) -> dict:
        """What a run's identity adds: the digest of the judgments a judge that reads them reads, and how an LLM
        method reads them as demos (nothing else: a judge that reads none judges the same whatever the list holds)."""
        if not reads:
            return {}
        return {"known": self.known.digest(), **({"known_demos": demos} if demos else {})}


def read_evidence(spec: str, on_overlap: str, dataset: Dataset, pairs: Iterable[Pair]) -> Evidence:
    """The judgment list `spec` (`hiera_dspy.data.judgment_lists`) on the dataset's scheme, texts looked up in its
    catalog and its pairs, checked against `pairs` (the pairs to judge)."""
    if on_overlap not in OVERLAP:
        raise DataError(f"--on-known-overlap {on_overlap!r}: give one of {', '.join(OVERLAP)}")
    items: dict[str, CatalogEntry] = {e.id: e for e in dataset.catalog or ()}
    queries: dict[str, str] = {}
    for split in dataset.splits.values():
        for p in split if isinstance(split, list) else ():  # a lazily read split is not read twice for texts
            items.setdefault(p.item_id, CatalogEntry(p.item_id, p.item_title, p.item_text))
            queries.setdefault(p.query_id, p.query)
    counts: Counter = Counter()
    known, asked = apart_from(read_known(spec, dataset.scheme, items=items, queries=queries, counts=counts), pairs,
                              counts, on_overlap)
    return Evidence(known, spec, asked, dict(counts))


def benchmark_evidence(qrels: Mapping[tuple[str, str], int], lines: Mapping[tuple[str, str], int],
                       topics: Mapping[str, str], corpus: Mapping[str, CatalogEntry], scheme: LabelScheme,
                       source: str, pairs: Iterable[Pair]) -> Evidence:
    """A benchmark's own judgments (its qrels, read and checked already, with the `lines` they were read from) as
    the evidence for judging its holes `pairs`; texts from its topics and corpus."""
    judgments = []
    for (qid, docid), grade in qrels.items():
        doc = corpus.get(docid)
        judgments.append(KnownJudgment(qid, docid, grade, item_title=doc.title if doc else "",
                                       item_text=doc.text if doc else None, query=topics.get(qid),
                                       source=f"{source}:{lines[qid, docid]}" if (qid, docid) in lines else source))
    counts = Counter(judgments=len(judgments), without_text=sum(1 for j in judgments if j.item_text is None))
    return checked(Known.of(scheme, judgments), source, pairs, counts, "error")


def checked(known: Known, source: str, pairs: Iterable[Pair], counts: dict[str, int], on_overlap: str) -> Evidence:
    """`known` checked against the pairs to judge (see the module doc)."""
    known, queries = apart_from(known, pairs, counts, on_overlap)
    return Evidence(known, source, queries, dict(counts))


def hand_over(program, evidence: Evidence | None) -> dict | None:
    """Give the judge the known judgments, once and before any pair, when it reads them (a ReadsKnown); returns the
    use (`use`), None without evidence."""
    if evidence is None:
        return None
    reads = isinstance(program, ReadsKnown)
    read = program.read_known(evidence.known) if reads else {}
    found = use(evidence, reads, read)
    demos = getattr(program, "query_demos", None)  # an LLM method: its prompts' demos (methods/known_demos.py)
    if reads and demos is not None:
        found["demos"] = demos.describe()
    return found


def use(evidence: Evidence, reads: bool, read: Mapping[str, int]) -> dict:
    """What the report says: the source, whether the judge reads known judgments, per query of the set the known
    judgments there are and those the judge read, the totals and the counts of reading and checking them."""
    c = evidence.counts
    graded = Counter(j.grade for j in evidence.known)
    given = {q: len(evidence.known.for_query(q)) for q in evidence.queries}
    per_query = {q: int(read.get(q, 0)) for q in evidence.queries}
    return {"source": evidence.source, "reads": reads, "judgments": len(evidence.known),
            "in_set": sum(given.values()), "read": sum(per_query.values()),
            "queries": len(evidence.queries), "queries_with_known": sum(1 for n in given.values() if n),
            "queries_read": sum(1 for n in per_query.values() if n),
            "outside": c.get("outside", 0), "outside_queries": c.get("outside_queries", 0),
            "matched_queries": c.get("matched_queries", 0), "text_matched_queries": c.get("text_matched_queries", 0),
            "overlap_skipped": c.get("overlap_skipped", 0), "without_text": c.get("without_text", 0),
            "duplicates": c.get("duplicates", 0), "unlabelled": c.get("unlabelled", 0),
            "known_per_query": given, "read_per_query": per_query,
            "grades": {label: graded[g] for g, label in enumerate(evidence.known.scheme.labels)}}
