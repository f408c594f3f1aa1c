"""A benchmark's pool at depth k and its holes (DREAM/BRIDGE's Hole@k): a hole is a (qid, docid) in some run's top
`depth` that the qrels never judged; `pool_holes` lists each once (union over runs), `hole_rate` gives a run's share of
them. Each run is read one query at a time (`hiera_dspy.conclude.retrieval.query_groups`).
"""

from __future__ import annotations

from hiera_dspy.conclude.retrieval import Qrels, Run, query_groups


def pool_holes(runs: dict[str, Run], qrels: Qrels, depth: int) -> list[tuple[str, str]]:
    """The unjudged (qid, docid) pairs in the top `depth` of any run, each once: runs in the given order, queries
    in order of first appearance, then rank. Each run is read one query at a time."""
    holes: dict[tuple[str, str], None] = {}
    for run in runs.values():
        for qid, lines in query_groups(run):
            for rl in lines[:depth]:
                if (qid, rl.docid) not in qrels:
                    holes.setdefault((qid, rl.docid), None)
    return list(holes)

def hole_rate(lines: Run, qrels: Qrels, depth: int) -> float | None:
    """Share of the run's top-`depth` documents (all queries) with no judgment."""
    shown = unjudged = 0
    for qid, ls in query_groups(lines):
        shown += len(ls[:depth])
        unjudged += sum((qid, rl.docid) not in qrels for rl in ls[:depth])
    return unjudged / shown if shown else None
