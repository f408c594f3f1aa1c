"""The conclusions of a filled benchmark: each system's metric and each pairwise difference with a PPI confidence
interval, from the machine's labels of the holes on every query and a person's on the sampled queries.

Per query and system, `Yhat` is the metric with the original judgments plus the machine's label of every hole (an
escalated hole with no machine label stays unjudged), and `Y` the metric with the original judgments plus a
person's decision on every hole of a sampled query. The original judgments are human labels and enter both as they
are. A sampled query counts once every one of its holes is decided; human decisions outside the sample (a reviewed
escalation) stay in qrels.txt but not in the estimates, which must treat every query's machine value alike.
With `machine_values="expected"` (the default) `Yhat` is the metric expected under the judge's label probabilities
(a record's `distribution`; a hole without one counts its label): P@k and DCG are linear in the labels, so this is a
smoother predictor of `Y` than the hard labels' metric, which narrows the PPI interval (`hiera_dspy.conclude.expected`;
measured in docs/conclusions.md). `"labels"` uses the hard labels. Either is valid: PPI holds for any predictor.
Estimators: `hiera_dspy.conclude.ppi` (ppi_py). Pure: records and runs in, a JSON-ready dict out.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import takewhile

from hiera_dspy.conclude import calibration
from hiera_dspy.conclude.certainty import certain
from hiera_dspy.conclude.expected import Dist, expected_per_query, gains, one_hot
from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.conclude.ppi import Values, differences, estimate
from hiera_dspy.conclude.ranges import value_ranges
from hiera_dspy.conclude.retrieval import top_k
from hiera_dspy.conclude.sample import Sample, SampleState, state
from hiera_dspy.conclude.strata import stratum_labels
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme

CORRECTION = "holm"
MACHINE_VALUES = ("expected", "labels")
DRAWS = 20  # label sets drawn from the judge's probabilities for n_min (hiera_dspy.conclude.sample_size)


def population(runs: dict[str, list]) -> list[str]:
    """The benchmark's queries: every query some run answers, in order of first appearance."""
    return list(dict.fromkeys(rl.qid for lines in runs.values() for rl in lines))


def holes_by_query(records: Sequence[dict]) -> dict[str, list[str]]:
    """query id -> the ids of its judged holes, in run order."""
    out: dict[str, list[str]] = {}
    for r in records:
        out.setdefault(r["query_id"], []).append(r["id"])
    return out


def machine_dists(originals: dict, records: Sequence[dict], scheme: LabelScheme) -> tuple[dict[tuple[str, str], Dist],
                                                                                          int]:
    """(qid, docid) -> label distribution for the expected machine values: an original judgment is certain, a
    machine-labelled hole has its record's distribution (or its label, certain, when it has none or an unusable
    one); and how many holes carried a distribution."""
    dists: dict[tuple[str, str], Dist] = {k: one_hot(g, scheme) for k, g in originals.items()}
    soft = 0
    for r in records:
        if not r.get("machine_label"):
            continue
        dist = r.get("distribution")
        try:
            usable = isinstance(dist, dict) and gains(dist, scheme) is not None
        except ValueError:  # no probability on any of the scheme's labels
            usable = False
        dists[(r["query_id"], r["item_id"])] = dist if usable else one_hot(scheme.labels.index(r["machine_label"]),
                                                                           scheme)
        soft += usable
    return dists, soft


def machine_values_of(originals: dict, records: Sequence[dict], scheme: LabelScheme, depth: int,
                      machine_values: str = "expected"):
    """(function(run lines, queries) -> measure -> the machine's per-query values, how many holes carried a
    distribution): the metric under the judge's labels ("labels") or expected under its probabilities
    ("expected")."""
    if machine_values == "labels":
        qrels = {**originals, **{(r["query_id"], r["item_id"]): scheme.labels.index(r["machine_label"])
                                 for r in records if r.get("machine_label")}}
        measures = named_measures(scheme, depth)
        return (lambda lines, queries: per_query(lines, qrels, queries, measures)), 0
    dists, soft = machine_dists(originals, records, scheme)
    return (lambda lines, queries: expected_per_query(lines, dists, queries, scheme, depth)), soft


def simulated_values(runs: dict[str, list], originals: dict, records: Sequence[dict], scheme: LabelScheme,
                     depth: int, draws: int = 20, seed: int = 0) -> list[dict[str, dict]]:
    """`draws` sets of measure -> run -> per-query values (over `population(runs)`) with every hole's label drawn
    from the judge's probabilities (`hiera_dspy.conclude.strata.label_distribution`: its record's distribution,
    else its label with its confidence and the rest spread over the other labels; an escalated or failed hole every
    label alike), the original judgments as they are, the scheme's gains: the human values
    `hiera_dspy.conclude.sample_size` assumes before anyone labels."""
    import numpy as np

    from hiera_dspy.conclude.sample_size import draw_labels
    from hiera_dspy.conclude.strata import label_distribution

    queries = population(runs)
    fixed = {k: one_hot(g, scheme) for k, g in originals.items()}
    hole_dists = {(r["query_id"], r["item_id"]): label_distribution(r, scheme) for r in records}
    rng = np.random.default_rng(seed)
    listed = {name: list(lines) for name, lines in runs.items()}  # a run file read once, not once a draw
    out = []
    for _ in range(draws):
        dists = {**fixed, **draw_labels(hole_dists, rng)}
        per_run = {name: expected_per_query(lines, dists, queries, scheme, depth) for name, lines in listed.items()}
        out.append({m: {name: v[m] for name, v in per_run.items()} for m in named_measures(scheme, depth)})
    return out


def predicted_n_mins(machine: dict[str, dict], simulated: Sequence[dict[str, dict]],
                     holes: dict[str, dict] | None = None) -> dict[tuple, int]:
    """(measure, run, None) and (measure, a, b) -> the plan's n_min (`hiera_dspy.conclude.sample_size.predicted_n_min`)
    from measure -> run -> the machine's values over every query and label sets simulated over the same queries;
    with `holes` (measure -> run -> whether a hole can change each query's value), over those queries only (a
    pair's: where either run's can change), the domain the estimate samples."""
    from itertools import combinations

    import numpy as np

    from hiera_dspy.conclude.sample_size import predicted_n_min

    out = {}
    for m, per in machine.items():
        x = {name: np.asarray(v, dtype=float) for name, v in per.items()}
        where = {name: np.ones(len(v), dtype=bool) if holes is None else np.asarray(holes[m][name])
                 for name, v in x.items()}
        for name, values in x.items():
            w = where[name]
            out[(m, name, None)] = predicted_n_min(values[w], [np.asarray(sim[m][name])[w] for sim in simulated])
        for a, b in combinations(x, 2):
            w = where[a] | where[b]
            out[(m, a, b)] = predicted_n_min((x[a] - x[b])[w], [(np.asarray(sim[m][a]) - np.asarray(sim[m][b]))[w]
                                                                for sim in simulated])
    return out


def conclusions(runs: dict[str, list], originals: dict, records: Sequence[dict], sample: Sample | None,
                scheme: LabelScheme, depth: int, level: float = 0.95, machine_values: str = "expected",
                simulated: Sequence[dict] | None = None) -> dict:
    """{"human_sample", "estimates" (run -> measure -> Estimate dict), "differences", "ranking", "level",
    "correction", "machine_values", "soft_holes", "calibration" (`hiera_dspy.conclude.calibration.check` on the
    decided holes)}; with no sample, the machine-only values alone. Each estimate's
    n_min is the plan's (`predicted_n_mins`, from `simulated`, else DRAWS label sets drawn here) or the sample's
    own residuals' if larger."""
    if machine_values not in MACHINE_VALUES:
        raise HieraError(f"machine_values must be one of {MACHINE_VALUES}, got {machine_values!r}")
    queries = population(runs)
    by_query = holes_by_query(records)
    human_decided = {r["id"] for r in records if r.get("source") == "human"}
    st = state(sample, by_query, human_decided) if sample else SampleState()
    measures = named_measures(scheme, depth)
    decided = set(st.decided)
    human_qrels = {**{k: g for k, g in originals.items() if k[0] in decided},
                   **{(r["query_id"], r["item_id"]): scheme.labels.index(r["label"]) for r in records
                      if r["query_id"] in decided and r.get("source") == "human"}}
    labelled = [q for q in st.decided if q in set(queries)]
    active = sample is not None and sample.method == "active"
    if active:  # Des Raj's weights need the draw's order: the decided queries before the first pending one
        assert sample is not None
        labelled = list(takewhile(decided.__contains__, [q for q in sample.queries if q in set(queries)]))
        decided = set(labelled)
    rest = [q for q in queries if q not in decided]
    machine, soft = machine_values_of(originals, records, scheme, depth, machine_values)

    index = {q: i for i, q in enumerate(queries)}
    s_idx, r_idx = [index[q] for q in labelled], [index[q] for q in rest]
    hole_keys = [(r["query_id"], r["item_id"]) for r in records]
    known = {name: certain(lines, queries, hole_keys, originals, scheme, depth) for name, lines in runs.items()}
    layer = stratum_labels(queries, records, scheme, sample.strata) if sample and sample.strata else None
    n_min: dict[tuple, int] = {}
    if 2 <= len(labelled) < len(queries):  # only then does an estimate carry an interval and its n_min
        if simulated is None:
            simulated = simulated_values(runs, originals, records, scheme, depth, DRAWS)
        every = {name: machine(lines, queries) for name, lines in runs.items()}
        n_min = predicted_n_mins({m: {name: every[name][m] for name in runs} for m in measures}, simulated,
                                 {m: {name: ~known[name][m] for name in runs} for m in measures})
    span = {name: value_ranges(lines, queries, hole_keys, originals, scheme, depth) for name, lines in runs.items()}
    horizon = len(sample.queries) if sample else None  # the sequence's bets are tuned for the whole sample
    draw = None
    if active:
        assert sample is not None
        weights = sample.weights or {}
        draw = ([weights.get(q, 0.0) for q in labelled + rest], len(sample.queries))
    values: dict[str, dict[str, Values]] = {m: {} for m in measures}
    for name, lines in runs.items():
        y = per_query(lines, human_qrels, labelled, measures)
        yhat_s, yhat_r = machine(lines, labelled), machine(lines, rest)
        key = ranking_key(lines, queries, depth)
        for m in measures:
            lo, hi = span[name][m]
            values[m][name] = Values(y[m], yhat_s[m], yhat_r[m], key, known[name][m][s_idx], known[name][m][r_idx],
                                     None if layer is None else layer[s_idx],
                                     None if layer is None else layer[r_idx], draw,
                                     (lo[s_idx], hi[s_idx], lo[r_idx], hi[r_idx], horizon))
    estimates = {name: {m: estimate(**values[m][name].split(), level=level,
                                    n_min=n_min.get((m, name, None))).to_dict() for m in measures}
                 for name in runs}
    diffs = [d.to_dict() for m in measures
             for d in differences(values[m], m, level=level,
                                  n_min={(a, b): v for (mm, a, b), v in n_min.items() if mm == m and b})]
    ranking = {m: sorted(runs, key=lambda n: -(_key(estimates[n][m]))) for m in measures}
    return {"level": level, "correction": CORRECTION, "queries": len(queries), "measures": list(measures),
            "human_sample": _sample_summary(sample, st, by_query), "estimates": estimates, "differences": diffs,
            "ranking": ranking, "machine_values": machine_values, "soft_holes": soft,
            "calibration": calibration.check(records, st.decided, scheme) if sample else None}


def ranking_key(lines, queries: Sequence[str], depth: int) -> tuple:
    """What a run shows: its top `depth` documents of every query, in order (two runs with equal keys have equal
    per-query values under any labels)."""
    top = top_k(lines, depth)
    return tuple(tuple(top.get(q, ())) for q in queries)


def _key(e: dict) -> float:
    value = e["ppi"] if e["ppi"] is not None else e["machine"]
    return float(value) if value is not None else float("-inf")


def _sample_summary(sample: Sample | None, st: SampleState, by_query: dict[str, list[str]]) -> dict | None:
    if sample is None:
        return None
    return {"queries": len(sample.queries), "decided": len(st.decided), "seed": sample.seed, "method": sample.method,
            "strata": sample.strata, "allocation": sample.allocation, "requested": sample.requested, "pairs": sum(len(by_query.get(q, [])) for q in sample.queries),
            "remaining_pairs": st.remaining_pairs, "pending": st.pending, "partial": st.partial,
            "no_holes": st.no_holes, "sample_queries": sample.queries,
            **({"probabilities": sample.probabilities} if sample.probabilities is not None else {})}

