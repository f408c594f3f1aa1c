"""The conclusions of a filled benchmark: each system's metric and each pairwise difference with a PPI confidence
interval, from the machine's labels of the holes on every query and a person's on the sampled queries.

Per query and system, `Yhat` is the metric with the original judgments plus the machine's label of every hole (an
escalated hole with no machine label stays unjudged), and `Y` the metric with the original judgments plus a
person's decision on every hole of a sampled query. The original judgments are human labels and enter both as they
are. A sampled query counts once every one of its holes is decided; human decisions outside the sample (a reviewed
escalation) stay in qrels.txt but not in the estimates, which must treat every query's machine value alike.
Estimators: `hiera_dspy.conclude.ppi` (ppi_py). Pure: records and runs in, a JSON-ready dict out.
"""

from __future__ import annotations

from collections.abc import Sequence

from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.conclude.ppi import Values, differences, estimate
from hiera_dspy.labelling.sample import Sample, SampleState, state
from hiera_dspy.labels import LabelScheme

CORRECTION = "holm"


def population(runs: dict[str, list]) -> list[str]:
    """The benchmark's queries: every query some run answers, in order of first appearance."""
    return list(dict.fromkeys(rl.qid for lines in runs.values() for rl in lines))


def holes_by_query(records: Sequence[dict]) -> dict[str, list[str]]:
    """query id -> the ids of its judged holes, in run order."""
    out: dict[str, list[str]] = {}
    for r in records:
        out.setdefault(r["query_id"], []).append(r["id"])
    return out


def conclusions(runs: dict[str, list], originals: dict, records: Sequence[dict], sample: Sample | None,
                scheme: LabelScheme, depth: int, level: float = 0.95) -> dict:
    """{"human_sample", "estimates" (run -> measure -> Estimate dict), "differences", "ranking", "level",
    "correction"}; with no sample, the machine-only values alone."""
    queries = population(runs)
    by_query = holes_by_query(records)
    human_decided = {r["id"] for r in records if r.get("source") == "human"}
    st = state(sample, by_query, human_decided) if sample else SampleState()
    measures = named_measures(scheme, depth)
    machine_qrels = {**originals, **{(r["query_id"], r["item_id"]): scheme.labels.index(r["machine_label"])
                                     for r in records if r.get("machine_label")}}
    decided = set(st.decided)
    human_qrels = {**{k: g for k, g in originals.items() if k[0] in decided},
                   **{(r["query_id"], r["item_id"]): scheme.labels.index(r["label"]) for r in records
                      if r["query_id"] in decided and r.get("source") == "human"}}
    labelled = [q for q in st.decided if q in set(queries)]
    rest = [q for q in queries if q not in decided]
    values: dict[str, dict[str, Values]] = {m: {} for m in measures}
    for name, lines in runs.items():
        y = per_query(lines, human_qrels, labelled, measures)
        yhat_s, yhat_r = per_query(lines, machine_qrels, labelled, measures), per_query(lines, machine_qrels, rest,
                                                                                         measures)
        for m in measures:
            values[m][name] = Values(y[m], yhat_s[m], yhat_r[m])
    estimates = {name: {m: estimate(values[m][name].human, values[m][name].machine_sampled,
                                    values[m][name].machine_rest, level=level).to_dict() for m in measures}
                 for name in runs}
    diffs = [d.to_dict() for m in measures for d in differences(values[m], m, level=level)]
    ranking = {m: sorted(runs, key=lambda n: -(_key(estimates[n][m]))) for m in measures}
    return {"level": level, "correction": CORRECTION, "queries": len(queries), "measures": list(measures),
            "human_sample": _sample_summary(sample, st, by_query), "estimates": estimates, "differences": diffs,
            "ranking": ranking}


def _key(e: dict) -> float:
    value = e["ppi"] if e["ppi"] is not None else e["machine"]
    return float(value) if value is not None else float("-inf")


def _sample_summary(sample: Sample | None, st: SampleState, by_query: dict[str, list[str]]) -> dict | None:
    if sample is None:
        return None
    return {"queries": len(sample.queries), "decided": len(st.decided), "seed": sample.seed, "method": sample.method,
            "requested": sample.requested, "pairs": sum(len(by_query.get(q, [])) for q in sample.queries),
            "remaining_pairs": st.remaining_pairs, "pending": st.pending, "partial": st.partial,
            "no_holes": st.no_holes, "sample_queries": sample.queries}

