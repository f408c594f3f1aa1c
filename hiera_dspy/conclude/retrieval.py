"""Holes in a retrieval benchmark and what filling them changes (DREAM/BRIDGE's Hole@k and system rankings).

A hole is a (qid, docid) in some run's top `depth` that the qrels never judged (the pool and its holes are
`hiera_dspy.benchmark.pool`). Retrieval metrics are trec_eval's (what ir_measures computes through pytrec_eval; a test holds them equal),
computed here one query at a time so that a run of millions of lines is never held in memory: nDCG@k with the
scheme's gains, P@k counting grades at or above the scheme's relevance threshold, averaged over the queries that have
judgments (trec_eval's convention; how many is reported beside them). The hole rate is the share of a run's top-k documents
(over all its queries) that nobody judged. Kendall's tau (tau-b, scipy) compares system orderings.

The measures are registered in `MEASURE_REGISTRY` (hiera_dspy.registry: name, one-line doc, parameter k, the
`Measure`): each has its one per-query implementation here and its ir_measures equivalent, and every place that lists
or picks measures (`evaluate`, `hiera_dspy.conclude.expected`, `hiera_dspy.conclude.per_query`) reads the registry.

Example:
    >>> MEASURE_REGISTRY["ndcg"].doc
    "nDCG@k: DCG of the top k with the scheme's gains over the ideal DCG (trec_eval's ndcg_cut)"
    >>> measure_keys(10)
    ['ndcg@10', 'p@10']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hiera_dspy.data.trec import RunLine, ranked
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.registry import Entry, Registry

Qrels = dict[tuple[str, str], int]
Run = Iterable[RunLine]  # a list of run lines, or a RunFile (hiera_dspy.benchmark.runs) read one query at a time


def query_groups(run: Run) -> Iterator[tuple[str, list[RunLine]]]:
    """(qid, its lines in rank order) of a run: a RunFile streams them one query at a time, a list is grouped."""
    groups = getattr(run, "groups", None)
    return groups() if groups else iter(ranked(run).items())


def top_k(lines: Run, depth: int) -> dict[str, list[str]]:
    """qid -> its first `depth` docids in rank order."""
    return {qid: [rl.docid for rl in ls[:depth]] for qid, ls in query_groups(lines)}






def evaluate(lines: Run, qrels: Qrels, scheme: LabelScheme, depth: int = 10,
             queries: Iterable[str] | None = None) -> dict:
    """{"ndcg@k", "p@k", "hole_rate", "queries" (those with judgments)} in one pass over the run, one query at a time; metrics are None
    when no query of the run has a judgment. nDCG@k and P@k as trec_eval's ndcg_cut and P (what ir_measures
    computes through pytrec_eval; a test holds them equal): gains are the scheme's (`LabelScheme.gain`), the ideal
    ranking is the query's judged documents by gain, P@k counts grades at or above the scheme's threshold over k, and
    the mean runs over the run's queries that have judgments; with `queries` (the benchmark's), over those, a query
    the run does not answer or nobody judged counting 0: the conclusions' mean (`hiera_dspy.conclude.per_query`)."""
    by_query: dict[str, dict[str, int]] = {}
    for (q, d), g in qrels.items():
        by_query.setdefault(q, {})[d] = g
    threshold = scheme.labels.index(scheme.threshold)
    over = None if queries is None else set(queries)
    totals = dict.fromkeys(measure_keys(depth), 0.0)
    queries = shown = unjudged = 0
    for qid, ls in query_groups(lines):
        top = ls[:depth]
        shown += len(top)
        unjudged += sum((qid, rl.docid) not in qrels for rl in top)
        judged = by_query.get(qid)
        if not judged or (over is not None and qid not in over):
            continue
        queries += 1
        grades = [judged.get(rl.docid, 0) for rl in top]
        values = query_values([scheme.gain(g) for g in grades], [float(g >= threshold) for g in grades],
                              map(scheme.gain, judged.values()), depth)
        totals = {key: totals[key] + values[key] for key in totals}
    over_n = queries if over is None or not queries else len(over)  # with `queries`: a missing one counts 0
    return {**{key: total / over_n if queries else None for key, total in totals.items()},
            "hole_rate": unjudged / shown if shown else None, "queries": queries}


def dcg(gains_in_rank_order: Iterable[float]) -> float:
    """Discounted cumulative gain, log2(rank + 1) discounts (trec_eval's ndcg_cut)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains_in_rank_order) if g > 0)


def ndcg_value(shown_gains: list[float], shown_relevant: list[float], ideal_gains: list[float], depth: int) -> float:
    """nDCG@depth of one query: the DCG of its top `depth` gains (or expected gains) in rank order over the DCG of
    its judged documents' best `depth` gains (`ideal_gains`, highest first); 0 when that is 0."""
    best = dcg(ideal_gains[:depth])
    return dcg(shown_gains) / best if best > 0 else 0.0


def precision_value(shown_gains: list[float], shown_relevant: list[float], ideal_gains: list[float],
                    depth: int) -> float:
    """P@depth of one query: its top `depth` relevance indicators (or probabilities) summed over `depth`."""
    return sum(shown_relevant) / depth


def ndcg_measure(scheme: LabelScheme, depth: int) -> Any:
    """ir_measures' nDCG@depth with the scheme's gains (plain nDCG for the grade gains)."""
    from ir_measures import nDCG

    gains = scheme.gain_map()
    return nDCG(gains=gains) @ depth if gains else nDCG @ depth


def precision_measure(scheme: LabelScheme, depth: int) -> Any:
    """ir_measures' P@depth at the scheme's relevance threshold."""
    from ir_measures import P

    return P(rel=scheme.labels.index(scheme.threshold)) @ depth


@dataclass(frozen=True)
class Measure:
    """A retrieval measure at a cutoff k: `value` (shown gains, shown relevance, ideal gains highest first, k) -> its
    value on one query, the one implementation; `ir_measure` (scheme, k) -> the ir_measures measure equal to it."""

    doc: str
    value: Callable[[list[float], list[float], list[float], int], float]
    ir_measure: Callable[[LabelScheme, int], Any]


# name -> Measure: one line here is a measure in `evaluate`, the expected values, the conclusions and their errors.
MEASURES: dict[str, Measure] = {
    "ndcg": Measure("nDCG@k: DCG of the top k with the scheme's gains over the ideal DCG (trec_eval's ndcg_cut)",
                    ndcg_value, ndcg_measure),
    "p": Measure("P@k: the share of the top k at or above the scheme's relevance threshold (trec_eval's P)",
                 precision_value, precision_measure),
}

MEASURE_REGISTRY = Registry("retrieval measure", lambda: {
    name: Entry(name, m.doc, {"k": int}, m) for name, m in MEASURES.items()})


def measure_key(name: str, depth: int) -> str:
    """The key of a measure at a cutoff in every table of values ('ndcg@10'); an unknown name raises `UnknownName`
    listing the measures there are."""
    return f"{MEASURE_REGISTRY[name].name}@{depth}"


def measure_keys(depth: int) -> list[str]:
    """The key of every registered measure at `depth`, in registry order."""
    return [measure_key(name, depth) for name in MEASURE_REGISTRY]


def query_values(shown_gains: list[float], shown_relevant: list[float], judged_gains: Iterable[float],
                 depth: int) -> dict[str, float]:
    """Every registered measure's value on one query, by key ('ndcg@10', 'p@10'): the gains (or expected gains) and
    relevance indicators (or probabilities) of its top `depth` in rank order, and the gains of its judged documents
    for the ideal ranking. `evaluate` streams it over a run, `hiera_dspy.conclude.expected` over label
    distributions; ir_measures (pytrec_eval) agrees with it (tests)."""
    ideal = sorted(judged_gains, reverse=True)
    return {measure_key(name, depth): m.value(shown_gains, shown_relevant, ideal, depth)
            for name, m in MEASURES.items()}


def kendall_tau(before: list[float], after: list[float]) -> float | None:
    """Kendall's tau-b between two scorings of the same systems (None with fewer than 2 or when undefined)."""
    from scipy.stats import kendalltau

    if len(before) != len(after):
        raise HieraError(f"kendall_tau: {len(before)} scores before, {len(after)} after")
    if len(before) < 2:
        return None
    return _number(kendalltau(before, after).statistic)


def tau_ap(truth: list[float], estimate: list[float]) -> float | None:
    """AP rank correlation (Yilmaz, Aslam and Robertson, "A new rank correlation coefficient for information
    retrieval", SIGIR 2008): how well `estimate` ranks the systems that `truth` ranks, errors near the top costing
    more than errors below (Kendall's tau weighs every swap alike). With the systems in the estimate's order (highest
    score first), C(i) counts the systems above position i that the truth also puts above the system at i:

        tau_ap = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1

    1 for the same order, -1 for the reverse; not symmetric (the truth is the reference). Ties, which the paper leaves
    undefined: the estimate's are kept in the given order, and a system above i counts only when its truth is strictly
    higher. None with fewer than 2 systems.

    Example:
        >>> round(tau_ap([4, 3, 2, 1], [4, 2, 3, 1]), 4)  # one swap in the middle: Kendall's tau 0.667 too
        0.6667
        >>> round(tau_ap([4, 3, 2, 1], [3, 4, 2, 1]), 4)  # one swap at the top costs more
        0.3333
    """
    if len(truth) != len(estimate):
        raise HieraError(f"tau_ap: {len(truth)} true scores, {len(estimate)} estimated")
    n = len(truth)
    if n < 2:
        return None
    order = sorted(range(n), key=lambda i: -estimate[i])  # stable: ties keep the given order
    total = sum(sum(truth[above] > truth[order[i]] for above in order[:i]) / i for i in range(1, n))
    return 2 * total / (n - 1) - 1


def ranking_agreement(runs: list[str], truth: list[float], estimate: list[float]) -> dict:
    """How far the system ranking by `estimate` (e.g. nDCG on filled or machine-judged qrels) keeps the one by `truth`
    (the same measure on the given qrels): Kendall's tau, tau_ap (the truth as reference) and the run whose score
    moved most (`largest_change`: run, before, after, change = after - before; None without runs)."""
    change = max(range(len(runs)), key=lambda i: abs(estimate[i] - truth[i]), default=None)
    return {"kendall_tau": kendall_tau(truth, estimate), "tau_ap": tau_ap(truth, estimate),
            "largest_change": None if change is None else {
                "run": runs[change], "before": truth[change], "after": estimate[change],
                "change": estimate[change] - truth[change]}}


def _number(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
