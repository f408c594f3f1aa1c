"""Holes in a retrieval benchmark and what filling them changes (DREAM/BRIDGE's Hole@k and system rankings).

A hole is a (qid, docid) in some run's top `depth` that the qrels never judged; `pool_holes` lists each once (union
over runs). Retrieval metrics come from ir_measures (pytrec_eval underneath): nDCG@k with the grades as gains, P@k
counting grades at or above the scheme's relevance threshold, averaged over the queries that have judgments
(trec_eval's convention; how many is reported beside them). The hole rate is the share of a run's top-k documents
(over all its queries) that nobody judged. Kendall's tau (tau-b, scipy) compares system orderings.
"""

from __future__ import annotations

import math

from hiera_dspy.data.trec import RunLine, ranked
from hiera_dspy.labels import LabelScheme

Qrels = dict[tuple[str, str], int]


def top_k(lines: list[RunLine], depth: int) -> dict[str, list[str]]:
    """qid -> its first `depth` docids in rank order."""
    return {qid: [rl.docid for rl in ls[:depth]] for qid, ls in ranked(lines).items()}


def pool_holes(runs: dict[str, list[RunLine]], qrels: Qrels, depth: int) -> list[tuple[str, str]]:
    """The unjudged (qid, docid) pairs in the top `depth` of any run, each once: runs in the given order, queries
    in order of first appearance, then rank."""
    holes: dict[tuple[str, str], None] = {}
    for lines in runs.values():
        for qid, docids in top_k(lines, depth).items():
            for docid in docids:
                if (qid, docid) not in qrels:
                    holes.setdefault((qid, docid), None)
    return list(holes)


def hole_rate(lines: list[RunLine], qrels: Qrels, depth: int) -> float | None:
    """Share of the run's top-`depth` documents (all queries) with no judgment."""
    shown = [(qid, d) for qid, docids in top_k(lines, depth).items() for d in docids]
    return sum((pair not in qrels) for pair in shown) / len(shown) if shown else None


def measures(scheme: LabelScheme, depth: int):
    """The ir_measures measures for a scheme: nDCG@depth and P@depth at the scheme's relevance threshold."""
    from ir_measures import P, nDCG

    return {f"ndcg@{depth}": nDCG @ depth, f"p@{depth}": P(rel=scheme.labels.index(scheme.threshold)) @ depth}


def evaluate(lines: list[RunLine], qrels: Qrels, scheme: LabelScheme, depth: int = 10) -> dict:
    """{"ndcg@k", "p@k", "hole_rate", "queries"}; metrics are None when no query of the run has a judgment."""
    import ir_measures

    named = measures(scheme, depth)
    judged_queries = {qid for qid, _ in qrels}
    run_queries = {rl.qid for rl in lines}
    qrel_rows = [ir_measures.Qrel(q, d, g) for (q, d), g in qrels.items() if q in run_queries]
    run_rows = [ir_measures.ScoredDoc(rl.qid, rl.docid, rl.score) for rl in lines]
    values = ir_measures.calc_aggregate(list(named.values()), qrel_rows, run_rows) if qrel_rows else {}
    out = {name: _number(values.get(m)) for name, m in named.items()}
    out["hole_rate"] = hole_rate(lines, qrels, depth)
    out["queries"] = len(run_queries & judged_queries)
    return out


def kendall_tau(before: list[float], after: list[float]) -> float | None:
    """Kendall's tau-b between two scorings of the same systems (None with fewer than 2 or when undefined)."""
    from scipy.stats import kendalltau

    if len(before) != len(after):
        raise ValueError(f"kendall_tau: {len(before)} scores before, {len(after)} after")
    if len(before) < 2:
        return None
    return _number(kendalltau(before, after).statistic)


def _number(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
