"""The certainty stratum: the queries on which no hole can change a run's value, so its machine value is the human
one, known for every query whether sampled or not.

P@k counts the run's own top k: a query whose top k holds no hole is certain for that run. nDCG@k divides by the
ideal DCG, which every judged document of the query enters, a hole of another run's too: a query is certain for a
run when it has no hole at all, or when the run's top k holds no hole and no judged document of positive gain (its
DCG is 0 whatever the holes turn out to be). A query the run does not answer counts 0 on both. A pair's difference is
certain where both runs' values are. The estimators treat the other queries as the domain a sample estimates
(`hiera_dspy.conclude.ppi.estimate`'s `known`).
Pure: run lines and keys in, boolean arrays out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hiera_dspy.conclude.retrieval import measure_key, top_k
from hiera_dspy.labels import LabelScheme


def certain(lines, queries: Sequence[str], holes: Iterable[tuple[str, str]], originals: dict, scheme: LabelScheme,
            depth: int) -> dict[str, np.ndarray]:
    """{"ndcg@depth", "p@depth"} -> per query (in `queries` order) whether no hole can change the run's value;
    `holes` the (query id, doc id) of every hole, `originals` (query id, doc id) -> grade."""
    holes = set(holes)
    with_holes = {q for q, _ in holes}
    top = top_k(lines, depth)
    p, ndcg = np.zeros(len(queries), dtype=bool), np.zeros(len(queries), dtype=bool)
    for i, q in enumerate(queries):
        shown = top.get(q, [])
        clear = not any((q, d) in holes for d in shown)
        p[i] = clear
        ndcg[i] = q not in with_holes or (clear and not any(scheme.gain(originals.get((q, d), 0)) > 0
                                                            for d in shown))
    return {measure_key("ndcg", depth): ndcg, measure_key("p", depth): p}
