"""A job's run store and its run, opened for a request: the store at the request's path (default
RUNS/store.sqlite, `hiera_dspy.settings.runs_dir`), the run created or resumed under its lease, and a labelling run
resumed under the request's label scheme and writing where the request says (`open_labelling_run`). A store or run a caller named wrongly is a `RequestError`
naming the option; a full or locked disk stays `StoreWriteFailed` (exit status 3)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from hiera_dspy import settings
from hiera_dspy.errors import RequestError
from hiera_dspy.records import Pair
from hiera_dspy.store.run_settings import RunSettings
from hiera_dspy.store.run_store import RunStore, StoreError, StoreWriteFailed


def open_store(path: str | Path | None = None) -> RunStore:
    """The run store at `path` (default runs/store.sqlite); a RequestError if it is not one."""
    try:
        return RunStore(path or settings.runs_dir() / "store.sqlite")
    except StoreWriteFailed:
        raise  # a full or locked disk: exit status 3
    except StoreError as exc:
        raise RequestError(f"--store {exc}") from None


def begin_run(store: RunStore, run_id: str, identity: dict, wait: bool = False,
              may_differ: tuple[str, ...] = ()) -> None:
    """Create or resume the run and take its lease (`wait` waits for another writer); a RequestError otherwise."""
    try:
        store.start_run(run_id, identity, may_differ=may_differ, wait=wait)
    except StoreError as exc:
        raise RequestError(str(exc)) from None


def open_labelling_run(store: RunStore, run_id: str, identity: dict, labelling: dict, pairs: Iterable[Pair],
                       wait: bool = False) -> RunSettings:
    """Create or resume the labelling run `run_id` under its lease (`begin_run`; its `limit` and `labelling` may
    differ between resumes), read in the request's label scheme where the stored one lacks its judgments' labels
    (`adopt_scheme`) and writing where the request says (`follow_request`); returns the run's settings as they now
    stand."""
    begin_run(store, run_id, {**identity, "labelling": labelling}, wait, may_differ=("limit", "labelling"))
    return follow_request(store, adopt_scheme(store, run_id, labelling["scheme"], pairs), labelling)


def adopt_scheme(store: RunStore, run_id: str, scheme: dict, pairs: Iterable[Pair]) -> RunSettings:
    """The run's settings. A run whose judgments carry labels its stored scheme lacks (a compiled judge of other
    grades stopped it before its export, in an earlier version) takes the request's scheme when that one holds them
    all, and its gold labels are read again from `pairs`, so the run resumes and exports; otherwise a RequestError says
    what to do."""
    config = store.run_config(run_id) or {}
    stored = config.get("labelling", {}).get("scheme") or scheme
    judged = store.labels(run_id)
    if judged <= set(stored["labels"]):
        return RunSettings.of(run_id, config)
    if not judged <= set(scheme["labels"]):
        raise RequestError(f"run {run_id}: its judgments carry labels {sorted(judged - set(scheme['labels']))} that "
                           f"the scheme {' < '.join(scheme['labels'])} lacks; label with the judge's own scheme "
                           "(--scheme or --labels), or start a new run (field `run_id`, flag --run-id)")
    print(f"run {run_id}: its labels are read in the scheme {' < '.join(scheme['labels'])} (it was started with "
          f"{' < '.join(stored['labels'])}, which lacks {sorted(judged - set(stored['labels']))})", file=sys.stderr)
    store.amend_gold(run_id, ((p.id, p.label) for p in pairs))
    return RunSettings.of(run_id, store.amend_config(run_id, "labelling", {**config["labelling"], "scheme": scheme}))


def follow_request(store: RunStore, settings: RunSettings, labelling: dict) -> RunSettings:
    """The run's settings, its `labelling` now the request's (a resumed run writes into the request's `out` and names
    the request's `--known`), the scheme the run's judgments are read in kept."""
    run_id = settings.run_id
    stored = dict(settings.identity.get("labelling") or {})
    if {k: v for k, v in stored.items() if k != "scheme"} == {k: v for k, v in labelling.items() if k != "scheme"}:
        return settings
    if stored.get("out") not in (None, labelling["out"]):
        print(f"run {run_id} resumed: its outputs now go to {labelling['out']} (they were in {stored['out']})",
              file=sys.stderr)
    return RunSettings.of(run_id, store.amend_config(
        run_id, "labelling", {**labelling, "scheme": stored.get("scheme", labelling["scheme"])}))
