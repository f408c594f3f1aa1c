"""The human sample: whole queries drawn at random, stratified or actively by the judge's uncertainty (seeded, `--sample`;
`hiera_dspy.benchmark.draws`), whose every hole a person labels; the run store's table of it is
`hiera_dspy.review.sample_log`.

A per-query metric needs every pair of the query's top k labelled, so the unit of the sample is the query, as in
prediction-powered inference over IR metrics (Oosterhuis et al., KDD 2024). The sample is drawn once per labelling run
and kept in the run store (table `human_sample`, beside the judgments, with the method, the number of strata and each
query's stratum): stopping and resuming never redraws it, and a different request on the same run is refused. Its state
follows from the decisions: a sampled query is decided when every one of its pairs has a person's label (a query with no
holes is decided at once: its existing judgments are human already); a partly labelled query is pending and does not
count yet.

Example:
    >>> size = parse_size("10%")                                                   # doctest: +SKIP
    >>> queries, _ = run_draw("random", Draw(["q1", "q2", "q3"], count(size, 3), seed=0))  # doctest: +SKIP
    >>> SampleLog("runs/store.sqlite").save("RUN_ID", Sample(queries, 0, "random", "10%"))  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from hiera_dspy.benchmark.draws import DEFAULT_STRATA, DRAWS, Draw, active_weights, draw_active, run_draw
from hiera_dspy.conclude.sample import Sample
from hiera_dspy.errors import HieraError
from hiera_dspy.review.sample_log import SampleLog

METHODS = tuple(DRAWS)  # how the queries are drawn


def parse_size(text: str) -> tuple[float, bool]:
    """`--human-sample N|P%` as (value, is_percent); HieraError for anything else."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) if raw.endswith("%") else int(raw)
    except ValueError:
        raise HieraError(f"--human-sample {text!r}: give a number of queries (8) or a percentage of them (10%)") \
            from None
    percent = raw.endswith("%")
    if value <= 0 or (percent and value > 100):
        raise HieraError(f"--human-sample {text!r}: give a positive number of queries, or a percentage in (0, 100]")
    return value, percent


def count(size: tuple[float, bool], n_queries: int) -> int:
    """How many queries a size asks for out of `n_queries` (a percentage rounds up, at least 1); HieraError when the
    sample would be larger than the queries."""
    value, percent = size
    wanted = max(1, math.ceil(value * n_queries / 100 - 1e-9)) if percent else int(value)
    if wanted > n_queries:
        raise HieraError(f"--human-sample {int(value)}: the benchmark has only {n_queries} queries; ask for at most "
                         f"{n_queries} (or a percentage, e.g. 10%)")
    return wanted










def ensure(log: SampleLog, run_id: str, query_ids: Sequence[str], requested: str | None, seed: int,
           method: str | None = None, strata: int | None = None,
           uncertainty: Callable[[], Sequence[float]] | None = None) -> Sample | None:
    """The run's sample: the stored one, else drawn now from `query_ids` and stored (None when none is asked for).
    `method` (default "random") and `strata` (stratified only, default 4) as given on the command line (None: not
    given); `uncertainty` returns each query's uncertainty (in `query_ids` order) for a stratified draw, None when the
    holes are not judged yet. HieraError if the request differs from the stored sample (it is never redrawn) or
    cannot be met."""
    if strata is not None and strata < 1:
        raise HieraError(f"--strata {strata}: give at least 1 stratum (default {DEFAULT_STRATA})")
    if strata is not None and (method or "random") != "stratified":
        raise HieraError(f"--strata {strata} applies to --sample stratified only")
    stored = log.get(run_id)
    if stored is not None:
        if requested is not None:  # the whole request, defaults filled in
            method = method or "random"
            strata = (strata or DEFAULT_STRATA) if method == "stratified" else None
            asked = {"--human-sample": (str(requested).strip(), stored.requested), "--sample-seed": (seed, stored.seed),
                     "--sample": (method, stored.method), "--strata": (strata, stored.strata)}
        else:  # a rerun without --human-sample: only what it names must agree
            asked = {k: v for k, v in {"--sample": (method, stored.method), "--strata": (strata, stored.strata)}.items()
                     if v[0] is not None}
        differ = [k for k, (a, b) in asked.items() if a != b]
        if differ:
            raise HieraError(f"run {run_id} already has a human sample ({_described(stored)}: "
                             f"{len(stored.queries)} queries) and a sample is never redrawn; this request differs in "
                             f"{', '.join(differ)}. Rerun with the same --human-sample, --sample-seed, --sample and "
                             f"--strata (or none of them), or start another run with a new --run-id")
        return stored
    if requested is None:
        if method is not None or strata is not None:
            raise HieraError(f"--sample {method or 'random'} draws nothing without --human-sample N|P%")
        return None
    method = method or "random"
    if method not in METHODS:
        raise HieraError(f"--sample {method!r}: give one of {', '.join(METHODS)}")
    n = count(parse_size(requested), len(query_ids))
    k = (strata or DEFAULT_STRATA) if method == "stratified" else None
    if method == "active":  # drawn here to keep its probabilities and weights (the estimates weight by them)
        if uncertainty is None:
            run_draw(method, Draw(query_ids, n, seed))  # raises, saying what it needs
            raise AssertionError("unreachable")
        weights = active_weights(list(uncertainty()))
        queries, probs = draw_active(query_ids, n, seed, weights)
        return log.save(run_id, Sample(queries, seed, method, str(requested).strip(), probabilities=probs,
                                       weights=dict(zip(query_ids, weights))))
    queries, stratum = run_draw(method, Draw(query_ids, n, seed, k or DEFAULT_STRATA, uncertainty))
    return log.save(run_id, Sample(queries, seed, method, str(requested).strip(), k, stratum))


def _described(s: Sample) -> str:
    how = f"stratified, {s.strata} strata" if s.method == "stratified" else s.method
    return f"{s.requested}, seed {s.seed}, {how}"
