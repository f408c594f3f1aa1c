"""The requests of the main jobs: plain, picklable values (no LM, no open file, no parsed command line), so a notebook
builds one by hand, a command maps its flags onto one, and an engine's replica (a Ray actor) rebuilds its program
from one.

    JudgeRequest    judge a labelled split and score it (python -m eval.run)
    LabelRequest    label pairs that may have no labels; export labels.jsonl, qrels.txt (python -m eval.label)
    HolesRequest    fill the holes of a retrieval benchmark and conclude (python -m eval.holes)
    CompileRequest  compile a judge and write its artifact (python -m optimize.compile)
    PlanRequest     plan the human sample of a holes run (python -m eval.plan)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hiera_dspy.engines import EngineOptions
from hiera_dspy.lm.choice import LMChoice


@dataclass(frozen=True)
class DataSource:
    """Where the pairs come from: a dataset spec (`msrd`, `jsonl:PATH`, `esci:PATH`, ...), its label scheme by name
    (`scheme`) or as labels least relevant first (`labels`, 'Bad,Fair,Good'), and what a malformed row does
    (`on_bad_row`: error | skip); or a team's guideline file (`guidelines`: grades, definitions, cut, examples;
    hiera_dspy/data/guidelines.py)."""

    dataset: str
    scheme: str | None = None
    labels: str | None = None
    on_bad_row: str = "error"
    guidelines: str | None = None


@dataclass(frozen=True)
class RunOptions:
    """Which run of which store, and how it is driven: `run_id` (default: derived from what is judged), `store` (a
    SQLite file; default runs/store.sqlite), `wait` for another writer (else refuse), `verbose` (a line per
    judgment), `retry_errors` (re-judge only the judgments that ended in an error)."""

    run_id: str | None = None
    store: str | None = None
    wait: bool = False
    verbose: bool = False
    retry_errors: bool = False


@dataclass(frozen=True)
class DryRun:
    """Estimate tokens and money instead of judging: `sample` pairs rendered per path, the `delegation` rate and
    `output_tokens` per call to assume (None: a pilot run's, else the defaults of `hiera_dspy.runs.cost`)."""

    sample: int = 20
    delegation: float | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class Judging:
    """What judges and how: a registered `method` (with `settings`, KEY=VALUE overrides of its config) or a compiled
    `judge` artifact; `knowledge` (auto | catalog | web | none); the models (`lms`); `limit` the first N pairs; the
    `engine` (threads | async | batch | ray) and its options; the run; `dry_run` to estimate instead."""

    method: str | None = None
    judge: str | None = None
    settings: tuple[str, ...] = ()
    knowledge: str = "auto"
    lms: LMChoice = field(default_factory=LMChoice)
    limit: int | None = None
    engine: str = "threads"
    engine_options: EngineOptions = field(default_factory=EngineOptions)
    run: RunOptions = field(default_factory=RunOptions)
    dry_run: DryRun | None = None


@dataclass(frozen=True)
class KnownList:
    """Known judgments the judge reads as evidence (a judge that reads none ignores them): `path` a judgment list
    (`qrels:PATH`, `jsonl:PATH`, `trec:FOLDER`, or a PATH whose format is sniffed; None: none), and what a known pair
    that is also a pair to judge does (`on_overlap`: error | skip, dropped from the known judgments and counted), and
    what they are (`kind`: sample, a random sample of the pairs; pool, the top of some systems' runs; auto, checked)."""

    path: str | None = None
    on_overlap: str = "error"
    kind: str = "auto"


@dataclass(frozen=True)
class JudgeRequest:
    """Judge one split of a labelled dataset and score it; outputs under `out` (default: runs/RUN_ID); `known`, the
    known judgments a judge that reads them reads."""

    data: DataSource
    judging: Judging
    split: str | None = None
    out: str | None = None
    known: KnownList = field(default_factory=KnownList)


@dataclass(frozen=True)
class LabelRequest:
    """Label one split (pairs with or without gold); labels.jsonl, qrels.txt and pairs.jsonl go to the folder `out`;
    `known`, the known judgments a judge that reads them reads."""

    data: DataSource
    judging: Judging
    out: str
    split: str | None = None
    known: KnownList = field(default_factory=KnownList)


@dataclass(frozen=True)
class HumanSample:
    """The human sample of a holes run: `size` N queries or 'P%' (None: no sample), its `seed`, how it is drawn
    (`method`: random | stratified, over `strata` strata), the intervals' level `ci` and the machine's per-query values
    (`machine_values`: expected | labels)."""

    size: str | None = None
    seed: int = 0
    method: str | None = None
    strata: int | None = None
    ci: float = 0.95
    machine_values: str = "expected"
    unit: str = "query"  # query: whole queries; pair: single holes (--sample-unit)


@dataclass(frozen=True)
class HolesRequest:
    """Fill the holes of a retrieval benchmark: the unjudged documents in each run's top `depth`. `topics`, `corpus`,
    `qrels` and `runs` are files (or `dataset`, trec:FOLDER | irds:ID, in place of the first three); the qrels' scheme by name (`scheme`) or as labels (`labels`); outputs go to `out`."""

    topics: str | None
    corpus: str | None
    qrels: str | None
    runs: tuple[str, ...]
    out: str
    judging: Judging
    depth: int = 10
    scheme: str | None = None
    labels: str | None = None
    on_bad_row: str = "error"
    sample: HumanSample = field(default_factory=HumanSample)
    dataset: str | None = None  # trec:FOLDER | irds:ID in place of topics, corpus and qrels
    judge_pool: bool = False  # judge the pool's judged pairs too: the machine's own qrels beside the filled ones
    guidelines: str | None = None  # a team's guideline file in place of `scheme` / `labels` (data/guidelines.py)


@dataclass(frozen=True)
class CompileRequest:
    """Compile `method` (or refit the artifact `judge` on the decisions of the labelling runs `train_from`) on the
    dataset's train split (`split`, capped by `train_limit`), score it on dev before and after, and write the artifact
    `out` (default artifacts/DATASET/METHOD.json). `config` is a method config, `config_file` a JSON file of a method
    with its config and knowledge (from optimize.search), both overridden by `settings`; `budget` a tier of
    `hiera_dspy.jobs.optimizers.BUDGETS`. With `judge`, `data` may be None: the artifact's dataset. The dev split is
    scored before and after through `engine` (threads | async | batch | ray) with its `engine_options` (their
    `threads`: `threads`)."""

    data: DataSource | None = None
    method: str = "hiera"
    config: dict = field(default_factory=dict)
    config_file: str | None = None
    settings: tuple[str, ...] = ()
    knowledge: str = "auto"
    split: str | None = None
    train_limit: int | None = None
    train_from: tuple[str, ...] = ()
    judge: str | None = None
    optimizer: str | None = None
    budget: str = "light"
    seed: int = 42
    out: str | None = None
    skip_before: bool = False
    lms: LMChoice = field(default_factory=LMChoice)
    threads: int = 1
    run: RunOptions = field(default_factory=RunOptions)
    engine: str = "threads"
    engine_options: EngineOptions = field(default_factory=EngineOptions)


@dataclass(frozen=True)
class PlanRequest:
    """Plan the human sample of the holes run `run`: intervals of `width`, pairs told apart at `power`, from `draws`
    label sets drawn (seeded by `seed`) from the judge's probabilities."""

    run: str
    store: str | None = None
    width: float = 0.05
    power: float = 0.8
    draws: int = 20
    seed: int = 0
