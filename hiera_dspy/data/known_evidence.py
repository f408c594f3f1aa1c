"""Known judgments as a judging job's evidence: read and checked against the pairs to judge, handed to the judge
once before any pair (`hiera_dspy.data.known.ReadsKnown`), and what the judge read, per query (the `known` section of
summary.json, report.md and metrics.json).

Checks, each an error naming file, line and what to do, or a count:
- a known pair that is also a pair to judge would leak its label into its own judgment: a DataError naming its line,
  or with `on_overlap="skip"` those known judgments are dropped and counted (`overlap_skipped`);
- judgments of queries with no pair to judge are counted (`outside`, `outside_queries`) and kept (a judge may
  calibrate on the whole collection's judgments); judging goes on.
A judge that is not a ReadsKnown judges every pair alone, as before: the use says so (`reads` False).

What the known judgments are (`kind`: sample | pool | auto, `data.known.KINDS`) is the user's word
(--known-kind) or, for a benchmark's own qrels, a pool; a judge that can (`reads_targets`) is also handed a seeded
sample of the pairs to judge (`targets`), to estimate their grade shares and cut at them (summary `known.shares`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hiera_dspy.data import CatalogEntry, DataError, Dataset
from hiera_dspy.data.judgment_lists import apart_from, read_known
from hiera_dspy.data.known import KINDS, Known, ReadsKnown
from hiera_dspy.records import Pair

OVERLAP = ("error", "skip")  # what a known pair that is also to be judged does (--on-known-overlap)
TARGET_SAMPLE = 400  # pairs to judge (a seeded sample, of queries with known judgments) a judge's cut is set on


@dataclass(frozen=True)
class Evidence:
    """The known judgments a job hands its judge (`known`), where they came from (`source`), the queries of the
    pairs to judge, in order (`queries`), and the counts of reading and checking them (`counts`)."""

    known: Known
    source: str
    queries: tuple[str, ...]
    counts: Mapping[str, int]
    kind: str = "auto"  # what the known judgments are: sample | pool | auto (`data.known.KINDS`)

    def identity(self, reads: bool, demos: dict | None = None) -> dict:
        """What a run's identity adds: the digest of the judgments a judge that reads them reads, how an LLM method
        reads them as demos, and what they were said to be unless auto (nothing else: a judge that reads none judges
        the same whatever the list holds)."""
        if not reads:
            return {}
        return {"known": self.known.digest(), **({"known_demos": demos} if demos else {}),
                **({"known_kind": self.kind} if self.kind != "auto" else {})}


def read_evidence(spec: str | None, on_overlap: str, dataset: Dataset, pairs: Iterable[Pair], kind: str = "auto"
                  ) -> Evidence | None:
    """The judgment list `spec` (`hiera_dspy.data.judgment_lists`) on the dataset's scheme, texts looked up in its
    catalog and its pairs, checked against `pairs` (the pairs to judge); `kind`, what they are (--known-kind). None
    when no list is named (a job without --known)."""
    if not spec:
        return None
    if kind not in KINDS:
        raise DataError(f"--known-kind {kind!r}: give one of {', '.join(KINDS)}")
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
    return Evidence(known, spec, asked, dict(counts), kind)


def checked(known: Known, source: str, pairs: Iterable[Pair], counts: dict[str, int], on_overlap: str) -> Evidence:
    """`known` checked against the pairs to judge (see the module doc)."""
    known, queries = apart_from(known, pairs, counts, on_overlap)
    return Evidence(known, source, queries, dict(counts))


def targets_of(evidence: Evidence, pairs: Iterable[Pair] | None) -> list[Pair] | None:
    """A seeded sample of up to `TARGET_SAMPLE` of the pairs to judge whose query has known judgments (None for a
    lazily read split, which is not read twice)."""
    if not isinstance(pairs, list):
        return None
    among = [p for p in pairs if evidence.known.for_query(p.query_id)]
    if len(among) <= TARGET_SAMPLE:
        return among
    rng = random.Random(0)
    return [among[i] for i in sorted(rng.sample(range(len(among)), TARGET_SAMPLE))]


def read_by(program, known: Known, targets: list[Pair] | None, kind: str) -> dict[str, int]:
    """The judge reads `known` (and the pairs to judge, `targets`, where it takes them: `reads_targets`)."""
    if getattr(program, "reads_targets", False):
        return program.read_known(known, targets=targets, kind=kind)
    return program.read_known(known)


@dataclass(frozen=True)
class Handed:
    """What a judge was handed of the evidence: its use as the report and the run's config record it (`use`, see
    `hand_over`) and the sample of the pairs to judge that it read them with (`targets`: None when it reads none, or
    for a lazily read split), which its replicas read again."""

    use: dict
    targets: list[Pair] | None = None


def handed_over(program, evidence: Evidence | None, pairs: Iterable[Pair] | None = None) -> Handed | None:
    """Give the judge the known judgments, once and before any pair, when it reads them (a ReadsKnown), with a
    sample of the pairs to judge where it takes them (`targets_of`); returns the use (`use`, with the shares the
    judge estimated and cut at in `shares`) and that sample, None without evidence."""
    if evidence is None:
        return None
    reads = isinstance(program, ReadsKnown)
    targets = targets_of(evidence, pairs) if reads else None
    read = read_by(program, evidence.known, targets, evidence.kind) if reads else {}
    out = use(evidence, reads, read)
    shares = getattr(program, "known_shares", lambda: None)() if reads else None
    out["kind"] = evidence.kind
    if shares is not None:
        out["shares"] = shares
    demos = getattr(program, "query_demos", None)  # an LLM method: its prompts' demos (methods/known_demos.py)
    if reads and demos is not None:
        out["demos"] = demos.describe()
    return Handed(out, targets)


def hand_over(program, evidence: Evidence | None, pairs: Iterable[Pair] | None = None) -> dict | None:
    """Give the judge the known judgments (`handed_over`); returns their use alone, None without evidence."""
    handed = handed_over(program, evidence, pairs)
    return None if handed is None else handed.use


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
