"""Plan the human sample of a holes run before anyone labels (what `python -m eval.plan` and `hiera-dspy plan` do): how
many queries a person must label, per system and per pair, from the run's machine values and the judge's
probabilities, beside what its decided sample gives now (the sample-size maths: `hiera_dspy.conclude.sample_size`;
docs/conclusions.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from hiera_dspy.benchmark.draws import DEFAULT_STRATA, active_weights
from hiera_dspy.benchmark.filled import hole_records
from hiera_dspy.benchmark.inputs import read_inputs
from hiera_dspy.benchmark.pair_conclusions import population_of
from hiera_dspy.conclude import pair_plan
from hiera_dspy.conclude.certainty import certain
from hiera_dspy.conclude.holes import conclusions, machine_values_of, population, simulated_values
from hiera_dspy.conclude.pair_sample import DESIGNS
from hiera_dspy.conclude.ranges import value_ranges
from hiera_dspy.conclude.sample_size import active_design_gain, recommended_design
from hiera_dspy.conclude.sample_size import plan as sample_size_plan
from hiera_dspy.conclude.strata import query_uncertainty, relevance_probability, stratum_labels
from hiera_dspy.errors import HieraError, RequestError
from hiera_dspy.jobs.preparing import open_store
from hiera_dspy.jobs.requests import PlanRequest
from hiera_dspy.review.exports import records_of
from hiera_dspy.review.sample_log import SampleLog
from hiera_dspy.store.run_settings import read_settings
from hiera_dspy.store.run_store import no_run


def plan_run(store, run_id: str, width: float = 0.05, power: float = 0.8, draws: int = 20, seed: int = 0) -> dict:
    """The plan of a holes labelling run (`hiera_dspy.conclude.sample_size`): per measure, every system and every pair
    with n_min, the sampled queries for an interval of `width` (the report's: the confidence sequence over each
    query's range, `hiera_dspy.conclude.ranges`) and, for a pair, for `power` to tell it apart, from
    the machine's values on all N queries and label sets drawn from the judge's probabilities; beside each, what
    the run's decided human sample gives now (its estimate from the run's conclusions) and the n for `width` its
    own residual spread predicts (`n_width_sample`) and its residual variance over the simulated one
    (`variance_ratio`); the calibration check on the decided holes (`hiera_dspy.conclude.calibration`), whose
    inflation scales the plan's residual spread. HieraError when the run is not a holes labelling run."""
    import numpy as np

    settings = read_settings(store, run_id)
    if settings is None:
        raise RequestError(no_run(store, run_id))
    labelling = settings.labelling
    if labelling is None or labelling.kind != "holes" or labelling.scheme is None:
        raise HieraError(f"run {run_id!r} is not a holes run (made by eval.holes): hiera-dspy plan needs one")
    scheme, depth = labelling.scheme, labelling.get("depth")
    level, kind = labelling.get("ci", 0.95), labelling.get("machine_values", "expected")
    inputs = read_inputs(labelling.section, scheme)
    records = hole_records(list(records_of(store, settings)), inputs.qrels)
    runs = {name: list(lines) for name, lines in inputs.runs.items()}
    queries = population(runs)
    machine_of, _ = machine_values_of(inputs.qrels, records, scheme, depth, kind)
    per_run = {name: machine_of(lines, queries) for name, lines in runs.items()}
    machine = {m: {name: np.asarray(v[m]) for name, v in per_run.items()} for m in next(iter(per_run.values()))}
    simulated = simulated_values(runs, inputs.qrels, records, scheme, depth, draws, seed)
    log = SampleLog(store.path)
    try:
        sample = log.get(run_id)
    finally:
        log.close()
    c = conclusions(runs, inputs.qrels, records, sample, scheme, depth, level, kind, simulated)
    now = {(m, run, None): e for run, per in c["estimates"].items() for m, e in per.items()}
    now |= {(d["measure"], d["a"], d["b"]): d for d in c["differences"]}
    checked = c.get("calibration")
    inflation = checked["inflation"] if checked else 1.0
    hole_keys = [(r["query_id"], r["item_id"]) for r in records]
    sure = {name: certain(lines, queries, hole_keys, inputs.qrels, scheme, depth) for name, lines in runs.items()}
    holes = {m: {name: ~sure[name][m] for name in runs} for m in machine}
    ranges = {name: value_ranges(lines, queries, hole_keys, inputs.qrels, scheme, depth) for name, lines in runs.items()}
    spans = {m: {name: ranges[name][m] for name in runs} for m in machine}
    sample_sd = {key: e["sd"] for key, e in now.items() if e.get("sd") is not None and (e.get("n") or 0) >= 2}
    strata = stratum_labels(queries, records, scheme, (sample and sample.strata) or DEFAULT_STRATA)
    sample_n_min = {key: now[key].get("n_min") for key in sample_sd}
    weights = active_weights(query_uncertainty(queries, ((r["query_id"], relevance_probability(r, scheme))
                                                         for r in records)))
    planned = sample_size_plan(machine, simulated, width, level, power, inflation, holes, sample_sd=sample_sd,
                               strata=strata, sample_n_min=sample_n_min, weights=np.asarray(weights), spans=spans)
    design, gain = recommended_design(planned)
    lines = [line.to_dict() | {"now": now.get((line.measure, line.a, line.b))} for line in planned]
    for line in lines:  # the decided sample's residual variance over the simulated one (no calibration assumed)
        sd = sample_sd.get((line["measure"], line["a"], line["b"]))
        line["variance_ratio"] = (sd / line["sd_holes"]) ** 2 if sd is not None and line["sd_holes"] else None
    return {"run_id": run_id, "queries": len(queries), "width": width, "power": power, "level": level,
            "design": design, "stratified_gain": gain, "active_gain": active_design_gain(planned),
            "draws": draws, "decided": (c["human_sample"] or {}).get("decided", 0), "lines": lines,
            "calibration": checked, **in_judgments(runs, inputs.qrels, records, scheme, depth, kind, lines, width,
                                                   level, power, len(queries))}


def in_judgments(runs, originals, records, scheme, depth, kind, query_lines, width, level, power, queries) -> dict:
    """The plan in judgments for both units (`hiera_dspy.conclude.pair_plan`): per design of the pair unit every
    system's and pair's judgments for `width` and to tell a pair apart, the design with the fewest (median over the
    estimates), and which unit is cheaper and by how much."""
    import numpy as np

    pop = population_of(runs, originals, records, scheme, depth, kind)
    if not pop.keys:
        return {"pair": None, "units": None}
    designs = {d: pair_plan.plan_lines(pop, d, width, level, power) for d in DESIGNS}
    best = min(designs, key=lambda d: float(np.median([line["n_width"] for line in designs[d]])))
    units = pair_plan.compare_units(designs[best], query_lines, len(pop.keys), queries)
    return {"pair": {"holes": len(pop.keys), "design": best, "designs": designs}, "units": units}


@dataclass(frozen=True)
class SamplePlan:
    """The plan of a holes run's human sample (`plan`): per measure, a line for every system and every pair
    (`lines`: n_min, the n for `width`, the n to tell a pair apart at `power`, what the decided sample gives now), the
    design it recommends and its gain, the calibration check. Reads as a mapping too (`plan["queries"]`), the shape
    of `to_dict()`, which `eval.plan --json` prints."""

    run_id: str
    queries: int
    width: float
    power: float
    level: float
    design: str
    stratified_gain: float | None
    active_gain: float | None
    draws: int
    decided: int
    lines: tuple[dict, ...]
    calibration: dict | None
    pair: dict | None = None
    units: dict | None = None

    def to_dict(self) -> dict:
        """Every number of the plan as JSON data."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}

    def __getitem__(self, key: str):
        return getattr(self, key)


def plan(request: PlanRequest) -> SamplePlan:
    """The plan of the holes run `request.run`: every number `eval.plan --json` prints."""
    if not 0 < request.width < 2 or not 0 < request.power < 1 or request.draws < 2:
        raise RequestError("give --width in (0, 2), --power in (0, 1) and --draws of at least 2")
    planned = plan_run(open_store(request.store), request.run, request.width, request.power, request.draws,
                       request.seed)
    return SamplePlan(**{**planned, "lines": tuple(planned["lines"])})
