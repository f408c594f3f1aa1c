"""Decisions outlive the judge that was reviewed: a labelling run in an output folder keeps the decisions made on
earlier runs of the same folder.

Relabelling a folder with a refitted judge (`eval.holes ... --judge v2.json --out runs/f`) is a new run (another
judge, another run id); a person's decisions on the earlier runs of `runs/f` still hold, so every exported record
takes the latest decision on its pair over all the folder's runs, while `machine_label` and `confidence` are the new
judge's. Only pairs no person decided change.
"""

from __future__ import annotations

from hiera_dspy.review.decisions import DecisionLog
from hiera_dspy.store.run_settings import RunSettings, runs_writing
from hiera_dspy.store.run_store import RunStore


def folder_runs(store: RunStore, settings: RunSettings) -> list[str]:
    """The labelling runs of the store writing the same output folder as the run of `settings` (itself included)."""
    run_id = settings.run_id
    if settings.labelling is None:
        return [run_id]
    same = runs_writing(store, settings.labelling.out)
    return same if run_id in same else [*same, run_id]


def folder_decisions(store: RunStore, settings: RunSettings) -> dict[str, dict]:
    """pair id -> the latest decision on it over every run of the output folder of the run of `settings` (with
    `run_id` of the run it was made in)."""
    log = DecisionLog(store.path)
    latest: dict[str, dict] = {}
    for run in folder_runs(store, settings):
        for pair_id, decision in log.latest(run).items():
            if pair_id not in latest or decision["at"] >= latest[pair_id]["at"]:
                latest[pair_id] = {**decision, "run_id": run}
    return latest
