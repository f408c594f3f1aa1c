"""What every job sets up before it judges, from its request: the data (`load_data`, again in a replica:
`SourceLoader`), the method's config, the program (a compiled judge or a fresh method), its replicas at other
endpoints (`Replica`), a dry run's cost forecast (`forecast_cost`), a progress display and the engine's job with both
(`judging_job`; the store and its run: `hiera_dspy.store.opening`). Every failure is a `HieraError` whose message names the option to change."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from hiera_dspy import settings
from hiera_dspy.artifacts.judge_file import note_ignored_endpoints, read_artifact, restore_judge
from hiera_dspy.data import Dataset, load_dataset
from hiera_dspy.data.guidelines import read_guidelines
from hiera_dspy.data.known import Known
from hiera_dspy.data.known_evidence import Evidence, Handed, read_by
from hiera_dspy.engines import Job
from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.requests import DataSource, DryRun, Judging
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.labels import SCHEMES, LabelScheme, custom_scheme, get_scheme
from hiera_dspy.methods import KNOWN_KEYS, METHOD_REGISTRY, VOTE_KEYS, BuildContext, available, build
from hiera_dspy.methods.known_demos import with_known_demos
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.methods.params import ConfigError, check
from hiera_dspy.methods.votes import split_name, vote_config, with_votes
from hiera_dspy.records import Pair
from hiera_dspy.runs.cost import forecast, prices_of
from hiera_dspy.runs.progress import Display
from hiera_dspy.store.opening import begin_run as begin_run  # the store and its run: hiera_dspy.store.opening
from hiera_dspy.store.opening import open_store as open_store


def load_data(source: DataSource, scheme: LabelScheme | None = None) -> Dataset:
    """The dataset of `source` (on `scheme` when the source names none: a run's stored scale); rows skipped by
    on_bad_row=skip are counted on stderr."""
    if sum(bool(x) for x in (source.guidelines, source.labels, source.scheme)) > 1:
        raise RequestError("--guidelines, --labels and --scheme each name the label scheme: give one")
    scheme = (read_guidelines(source.guidelines) if source.guidelines else custom_scheme(source.labels)
              if source.labels else get_scheme(source.scheme) if source.scheme else scheme)
    dataset = load_dataset(source.dataset, scheme, on_bad_row=source.on_bad_row)
    skipped = dataset.notes.get("skipped_rows") or []
    if skipped:
        first = skipped[0]
        where = f"line {first['line']}" if "line" in first else first.get("row", "?")
        print(f"skipped {len(skipped)} bad row(s) of {source.dataset} (--on-bad-row skip); the first: {first['file']}, "
              f"{where}: {first['error']}", file=sys.stderr)
    return dataset


def skipped_rows(dataset: Dataset) -> int:
    """How many input rows on_bad_row=skip left out (metrics.json and config.json `skipped_rows`)."""
    return len(dataset.notes.get("skipped_rows") or [])


def runs_dir() -> Path:
    """Where runs live: $HIERA_RUNS_DIR, else ./runs (hiera_dspy.settings)."""
    return settings.runs_dir()


def output_folder(path: str | Path, flag: str = "--out", field: str = "out") -> Path:
    """`path` as a folder to write outputs into, made now: a RequestError (before any judging) if it names a file or
    cannot be written (`flag`, the request's `field`)."""
    path = Path(path)
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            raise RequestError(f"{flag} {path}: {part} is a file; {flag} names a folder for the outputs")
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        raise RequestError(f"{flag} {path} (field `{field}`): cannot write there ({exc.strerror or exc}); give a "
                           "folder you can write") from None
    return path


def read_json_file(path: str | Path, flag: str):
    """A small JSON file named by an option (`flag`, e.g. --config); a RequestError for a folder, a missing file or
    bad JSON."""
    path = Path(path)
    if path.is_dir():
        raise RequestError(f"{flag} {path}: is a folder; {flag} names a JSON file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RequestError(f"{flag} {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RequestError(f"{flag} {path}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise RequestError(f"{flag} {path}, line {exc.lineno}: not valid JSON ({exc.msg})") from None


def method_config(method: str, overrides: tuple[str, ...] | list[str] = (), base: dict | None = None) -> dict:
    """`base` (e.g. a search's config) updated with the KEY=VALUE `overrides` (VALUE is JSON when it parses, else
    text), each key checked against the method's registered config."""
    method, at = split_name(method)  # thomas@5: thomas with samples=5
    config = {**at, **(base or {})}
    known = METHOD_REGISTRY[method].params  # an unknown method: UnknownName listing the registered ones
    for setting in overrides:
        key, sep, text = setting.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RequestError(f"--set {setting!r}: expected KEY=VALUE, e.g. --set delegation=never")
        if key not in known:
            raise RequestError(f"--set {key}: {method} has no config key {key!r}; "
                               f"its keys: {', '.join(sorted(known)) or '(none)'}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        try:
            config[key] = check(method, key, value)
        except ConfigError as exc:
            raise RequestError(f"--set {setting}: {exc} (python -m eval.methods --config {method})") from None
    return config


def build_program(judging: Judging, dataset: Dataset):
    """(program, lms, knowledge): a loaded artifact (the request's models over its recorded ones) or a fresh method.
    Everything the program needs is resolved here, from the request, before the program is built."""
    if judging.judge:
        voting = judge_votes([s for s in judging.settings if s.partition("=")[0].strip() not in KNOWN_KEYS])
        demos = judge_demos(judging.settings)
        doc = read_artifact(judging.judge)
        scheme = judge_scheme(judging.judge, doc, dataset.scheme)
        reading = demo_reading(doc, demos)
    else:
        config = method_config(judging.method or "", judging.settings)  # a request names a method or a judge
    knowledge = make_knowledge(judging.knowledge, dataset)
    train = dataset.splits.get("train", [])
    if judging.judge:
        note_ignored_endpoints(judging.judge, doc, judging.lms.api_base)
        lms = judging.lms.role_lms(doc["lms"], doc.get("ensemble"))
        judge = restore_judge(judging.judge, doc, scheme, lms=lms, knowledge=knowledge, train=train)
        judge = with_votes(judge, dataset.scheme, voting)
        return (judge if reading is None else with_known_demos(judge, scheme, *reading)), lms, knowledge
    lms = judging.lms.role_lms()
    return build(judging.method or "", BuildContext(dataset.scheme, lms, knowledge, train), **config), lms, knowledge


def judge_demos(settings) -> dict:
    """A compiled --judge's --set known_demos / known_demo_tokens (how it reads known judgments as demos)."""
    values = {}
    for setting in settings:
        key, _, text = (part.strip() for part in setting.partition("="))
        if key in KNOWN_KEYS:
            try:
                values[key] = check("judge", key, json.loads(text))
            except (ConfigError, json.JSONDecodeError) as exc:
                raise RequestError(f"--set {key}={text}: {exc}") from None
    return values


def demo_reading(doc: dict, demos: dict) -> tuple[int | None, int | None] | None:
    """How the compiled judge `doc` reads its queries' known judgments as demos (how many, in how many tokens), as its
    config and `demos` (the request's --set) say; None for a judge that generates no text (a RequestError if --set
    known_demos asks it to)."""
    info = available().get(doc["method"])
    if info is None:  # not a registered method: restoring the judge names it (ArtifactError)
        return None
    if not info.votes:
        if demos:
            raise RequestError(f"--set {', '.join(demos)}: the {doc['method']} judge generates no text; known "
                               "judgments as demos are for LLM methods")
        return None
    config = {**doc["config"], **demos}
    return config.get("known_demos"), config.get("known_demo_tokens")


def judge_votes(settings) -> dict:
    """The vote (samples, temperature, anchored) a compiled --judge is run with: the only settings it takes."""
    values: dict = {}
    for setting in settings:
        key, _, text = setting.partition("=")
        if key.strip() not in VOTE_KEYS:
            raise RequestError("--set changes an uncompiled --method; a compiled --judge keeps its config "
                               "(compile again with optimize.compile --set ...); it takes --samples, --temperature "
                               "and --set anchored=true|false")
        try:
            values[key.strip()] = check("judge", key.strip(), json.loads(text))
        except (ConfigError, json.JSONDecodeError) as exc:
            raise RequestError(f"--{key.strip()} {text}: {exc}") from None
    try:
        return vote_config(**{key: values.get(key) for key in VOTE_KEYS})
    except ValueError as exc:
        raise RequestError(str(exc)) from None


def judge_scheme(judge: str, doc: dict, data: LabelScheme) -> LabelScheme:
    """The label scheme of the compiled judge `doc` (read from `judge`); a RequestError, before any pair is judged,
    when its grades are not the data's scheme: its labels could not be scored, exported or resumed."""
    judges = LabelScheme.from_dict(doc["scheme"])
    if tuple(judges.labels) == tuple(data.labels):
        return judges
    give = (f"--labels '{','.join(judges.labels)}' (field `labels`)" if judges.name not in SCHEMES
            else f"--scheme {judges.name} (field `scheme`)")
    raise RequestError(f"--judge {judge}: the judge grades {' < '.join(judges.labels)} (scheme {judges.name!r}) but "
                       f"the data's scheme {data.name!r} is {' < '.join(data.labels)}; give the judge's scheme, "
                       f"{give}, or compile a judge on this scheme (optimize.compile)")


def progress_display(verbose: bool, lms=None, desc: str = "") -> Display:
    """A judging job's progress (hiera_dspy.runs.progress.Display): a bar named `desc`, one line per judgment when
    `verbose`, and the cost so far where every role's model has a price."""
    return Display(desc=desc, verbose=verbose, prices=lambda: prices_of(lms))


@dataclass
class Replica:
    """A picklable recipe for one program replica: the judging request and how to load its dataset, built again at
    another endpoint (`api_base`) inside each Ray actor, so no LM, lock or model is shipped; the known judgments the
    job's judge read (a plain value) are handed to each replica's judge the same way."""

    judging: Judging
    dataset: Callable[[], Dataset]
    split: str
    known: Known | None = None  # the known judgments the job's judge read: each replica's judge reads them too
    targets: list[Pair] | None = None  # the sample of pairs to judge it read them with (`known_evidence.Handed`)
    kind: str = "auto"  # what the known judgments are (`Evidence.kind`)

    def __call__(self, api_base: str | None):
        judging = replace(self.judging, lms=self.judging.lms.at(api_base))
        dataset = self.dataset()
        program, _, _ = build_program(judging, dataset)
        if not judging.judge:
            prepare_fresh(program, dataset, self.split)
        if self.known is not None:
            read_by(program, self.known, self.targets, self.kind)
        return program


def judging_job(judging: Judging, program, pairs: Iterable[Pair], store, run_id: str, lms, split: str,
                reload: Callable[[], Dataset] | None, evidence: Evidence | None, handed: Handed | None) -> Job:
    """The engine's job of `judging`: `program` judges `pairs` into run `run_id` of `store`, shown by its progress
    display (a bar named for the method, one line per judgment with --verbose, the cost so far where every role's model
    has a price) and, where the dataset loads again (`reload`), with the recipe of its replicas at other endpoints
    (--engine ray): their judge reads what the job's judge was handed (`handed`: the known judgments and the sample of
    the pairs to judge), so each cuts as it does."""
    display = Display(desc=program.method, verbose=judging.run.verbose, prices=lambda: prices_of(lms))
    recipe = None
    if reload is not None:
        recipe = (Replica(judging, reload, split, evidence.known, handed.targets, evidence.kind)
                  if evidence is not None and handed is not None and handed.use["reads"]
                  else Replica(judging, reload, split))
    return Job(program, pairs, store, run_id, lms, retry_errors=judging.run.retry_errors, progress=display,
               options=judging.engine_options, factory=recipe)


def forecast_cost(program, pairs: Iterable[Pair], lms, dry: DryRun, knowledge_name: str = "",
             pilot_rows: list | None = None) -> dict:
    """A run's tokens and money from a sample of its real prompts (`hiera_dspy.runs.cost.forecast`); nothing is sent."""
    return forecast(program, pairs if isinstance(pairs, list) else list(pairs), lms, sample=dry.sample,
                         delegation=dry.delegation, output_tokens=dry.output_tokens, pilot_rows=pilot_rows,
                         run_lookups=not knowledge_name.startswith("web"))


@dataclass(frozen=True)
class SourceLoader:
    """The dataset of a request's data source, loaded again where it is called (a picklable recipe)."""

    source: DataSource

    def __call__(self) -> Dataset:
        return load_data(self.source)
