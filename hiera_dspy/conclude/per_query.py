"""Per-query retrieval metric values, the unit of prediction-powered inference over IR metrics.

ir_measures (pytrec_eval underneath) computes each measure per query; a query the run does not answer, or whose
documents nobody judged, counts 0 (trec_eval's `-c` convention), so every system has a value on every query of the
population and the values pair up by query. The measures are the ones `eval.holes` reports: nDCG@k with the scheme's
gains (`LabelScheme.gain`: ESCI's 1 / 0.1 / 0.01 / 0, else the grades) and P@k at the scheme's relevance threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hiera_dspy.conclude.retrieval import MEASURES, measure_key
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import LabelScheme

Qrels = dict[tuple[str, str], int]


def named_measures(scheme: LabelScheme, depth: int) -> dict:
    """key -> ir_measures measure of every registered measure (`hiera_dspy.conclude.retrieval.MEASURES`): nDCG@depth
    with the scheme's gains and P@depth at its relevance threshold."""
    return {measure_key(name, depth): m.ir_measure(scheme, depth) for name, m in MEASURES.items()}


def per_query(lines: Sequence[RunLine], qrels: Qrels, queries: Sequence[str], measures: dict) -> dict[str, np.ndarray]:
    """measure name -> array of the run's value on each of `queries` (in that order; 0 where undefined)."""
    import ir_measures

    wanted = set(queries)
    qrel_rows = [ir_measures.Qrel(q, d, g) for (q, d), g in qrels.items() if q in wanted]
    run_rows = [ir_measures.ScoredDoc(rl.qid, rl.docid, rl.score) for rl in lines if rl.qid in wanted]
    found: dict[tuple[str, str], float] = {}
    if qrel_rows and run_rows:
        by_measure = {m: name for name, m in measures.items()}
        for metric in ir_measures.iter_calc(list(measures.values()), qrel_rows, run_rows):
            found[(by_measure[metric.measure], metric.query_id)] = float(metric.value)
    index = {q: i for i, q in enumerate(queries)}
    out = {name: np.zeros(len(queries)) for name in measures}
    for (name, qid), value in found.items():
        if qid in index:
            out[name][index[qid]] = value
    return out
