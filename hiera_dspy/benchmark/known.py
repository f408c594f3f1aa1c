"""A benchmark's own qrels as known judgments: the evidence a holes run hands its judge (a pool, `kind="pool"`),
checked against the holes to judge as any known list is (`hiera_dspy.data.known_evidence.checked`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

from hiera_dspy.data import CatalogEntry
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.known_evidence import Evidence, checked
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair


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
    return replace(checked(Known.of(scheme, judgments), source, pairs, counts, "error"), kind="pool")
