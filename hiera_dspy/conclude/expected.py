"""The machine's per-query metric as an expectation under the judge's label probabilities (soft labels).

PPI is valid for any predictor of the human per-query value (Angelopoulos et al., Science 2023): the machine's value
enters only through its mean on every query and its gap to the human value on the sampled ones. The closer the
predictor follows the human value, the narrower the interval. A judge that gives label probabilities (embed-lr's
calibrated scorer, an LLM's token log-probabilities) predicts better with them than with its hard labels: a hole it
is 40% sure of counts 0.4 of a relevant document, not 0 or 1.

`expected_per_query` computes, per query, P@k as the expected number of relevant documents in the top k over k
(exact: P@k is linear in the relevance indicators) and nDCG@k as the expected DCG (exact, linear in the gains) over
the ideal DCG of the expected gains (a plug-in: the ideal ranking of expected gains, not the expectation of the
ratio). A judged document (the original qrels, a person's decision) has its grade with probability 1; with every
probability 0 or 1 the values equal ir_measures' (trec_eval's) nDCG@k and P@k, ranks in trec_eval's order (score
descending, ties by docid descending). A query with no judged document counts 0, as in `per_query`.
Pure: run lines and label distributions in, arrays out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hiera_dspy.conclude.retrieval import measure_keys, query_values
from hiera_dspy.data.trec import RunLine, ranked
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme

Dist = dict[str, float]  # label -> probability


def gains(dist: Dist, scheme: LabelScheme) -> tuple[float, float]:
    """(expected gain (`LabelScheme.gain`: the grade unless the scheme says otherwise), probability of a grade at or
    above the scheme's threshold) of a label distribution; labels outside the scheme are ignored and the rest
    renormalised."""
    probs = np.array([max(float(dist.get(label, 0.0)), 0.0) for label in scheme.labels])
    total = probs.sum()
    if total <= 0:
        raise HieraError(f"a label distribution needs a positive probability on one of {scheme.labels}: {dist}")
    probs /= total
    threshold = scheme.labels.index(scheme.threshold)
    values = np.array([scheme.gain(i) for i in range(len(probs))])
    return float(probs @ values), float(probs[threshold:].sum())


def one_hot(grade: int, scheme: LabelScheme) -> Dist:
    """The distribution of a known grade."""
    return {scheme.labels[grade]: 1.0}


def expected_per_query(lines: Sequence[RunLine], dists: dict[tuple[str, str], Dist], queries: Sequence[str],
                       scheme: LabelScheme, depth: int) -> dict[str, np.ndarray]:
    """{"ndcg@depth", "p@depth"} -> the run's expected value on each of `queries` (in that order) when each
    judged (qid, docid) has the label distribution `dists` gives it (unjudged: irrelevant, not in the ideal)."""
    by_query: dict[str, dict[str, tuple[float, float]]] = {}
    for (q, d), dist in dists.items():
        by_query.setdefault(q, {})[d] = gains(dist, scheme)
    top = {q: [rl.docid for rl in ls[:depth]] for q, ls in ranked(lines).items()}
    out = {key: np.zeros(len(queries)) for key in measure_keys(depth)}
    for i, q in enumerate(queries):
        judged = by_query.get(q)
        if not judged:
            continue
        shown = [judged.get(d, (0.0, 0.0)) for d in top.get(q, [])]
        values = query_values([g for g, _ in shown], [rel for _, rel in shown], (g for g, _ in judged.values()), depth)
        for key, value in values.items():
            out[key][i] = value
    return out
