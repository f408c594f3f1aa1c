"""Export judgments as a judgment list in the format of a team's tool (python -m eval.export): qrels, Quepid's ratings
CSV, OpenSearch SRW's judgment import JSON, an Elasticsearch LTR judgment list, labelled JSONL (`hiera_dspy.data.judgment_lists.write_list`).

The judgments come from a run in the run store (`run_id`: a labelling run's final labels, a holes run's filled
benchmark, any other run's labels; `hiera_dspy.jobs.list_sources`), or from a judgment list in another format
(`source`, `FORMAT:FILE`; `hiera_dspy.data.judgment_lists.read_list`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.data.judgment_lists import WRITERS, read_list, write_list
from hiera_dspy.data.known import Known
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.list_sources import LABELLING_SOURCES, judged_known
from hiera_dspy.jobs.preparing import load_data, open_store
from hiera_dspy.jobs.requests import DataSource
from hiera_dspy.labels import custom_scheme, get_scheme
from hiera_dspy.store.run_settings import read_settings


@dataclass(frozen=True)
class ExportRequest:
    """Write `format` (qrels | quepid | srw | esltr | jsonl) to `out` from run `run_id` of `store`, or from `source`
    (`FORMAT:FILE`, read on the scheme `scheme`/`labels`, default `trec`). A judged run (not a labelling run) needs
    `data`, the dataset it judged, for its pairs' ids and texts (default: the dataset its config names); `split`
    (default: the run's). `name` and `description` go into an SRW list."""

    format: str
    out: str
    run_id: str | None = None
    store: str | None = None
    source: str | None = None
    data: DataSource | None = None
    split: str | None = None
    scheme: str | None = None
    labels: str | None = None
    on_bad_row: str = "error"
    name: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Exported:
    """What was written: the file, its format, how many judgments of how many queries, and the rows of a `source`
    list skipped as bad (`on_bad_row="skip"`: file, line or row, error)."""

    path: Path
    format: str
    judgments: int
    queries: int
    skipped: tuple[dict, ...] = ()


def export_list(request: ExportRequest) -> Exported:
    """Write the judgment list the request asks for; RequestError for a request that names no judgments."""
    if request.format not in WRITERS:
        raise RequestError(f"--format {request.format!r}: expected one of {', '.join(WRITERS)}")
    if (request.run_id is None) == (request.source is None):
        raise RequestError("give the judgments to export: --run RUN_ID, or --from FORMAT:FILE")
    skipped: list[dict] = []
    known = _from_source(request, skipped) if request.source else _from_run(request)
    name = request.name or Path(request.out).stem
    path = write_list(request.format, request.out, known, name=name, description=request.description)
    return Exported(path, request.format, len(known), len(known.by_query), tuple(skipped))


def _from_source(request: ExportRequest, skipped: list[dict]) -> Known:
    scheme = (custom_scheme(request.labels) if request.labels else get_scheme(request.scheme or "trec"))
    return read_list(request.source or "", scheme, on_bad_row=request.on_bad_row, skipped=skipped)


def _from_run(request: ExportRequest) -> Known:
    store = open_store(request.store)
    run_id = request.run_id or ""
    settings = read_settings(store, run_id)
    if settings is None:
        raise RequestError(f"--run {run_id!r}: no such run in {store.path}; give the id the run printed, "
                           f"or --store with the run store it is in")
    if (kind := settings.kind()) in LABELLING_SOURCES:
        return LABELLING_SOURCES[kind](store, settings)
    data = request.data or (DataSource(settings.dataset, request.scheme, request.labels, request.on_bad_row)
                            if settings.dataset else None)
    if data is None:
        raise RequestError(f"run {run_id!r} names no dataset; pass --dataset, the dataset it judged")
    dataset = load_data(data, settings.scheme)  # the scale it judged on, if the run kept it
    return judged_known(store, run_id, dataset.scheme, dataset.split(request.split or settings.split))
