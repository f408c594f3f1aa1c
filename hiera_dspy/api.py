"""The main jobs from Python: one call each, over a typed, picklable request, returning a typed result. Every command
of eval/ and optimize/ maps its flags onto one of these and prints what it returns (docs/api.md).

    >>> import hiera_dspy as hd
    >>> judged = hd.judge(hd.JudgeRequest(hd.DataSource("msrd"), hd.Judging(method="zero-shot", limit=5)))  # doctest: +SKIP
    >>> judged.metrics["kappa"]                                                                          # doctest: +SKIP

    judge(JudgeRequest) -> Judged            judge a labelled split and score it             (eval.run)
    ablate(AblateRequest) -> Ablation        every method of a grid on the same pairs        (eval.ablate)
    label(LabelRequest) -> Labelled          label pairs; labels.jsonl, qrels.txt            (eval.label)
    fill_holes(HolesRequest) -> Filled       fill a benchmark's holes and conclude           (eval.holes)
    conclusions(run_id) -> Filled           a holes run's conclusions, decisions counted    (eval.holes' export)
    plan(PlanRequest) -> SamplePlan          the human sample a holes run needs              (eval.plan)
    compile_judge(CompileRequest) -> Compiled  compile a judge into an artifact              (optimize.compile)
    export_list(ExportRequest) -> Exported   judgments as qrels, Quepid, SRW or LTR lists    (eval.export)
    load_served(path) -> ServedJudge         a compiled judge that judges pairs on request   (eval.serve)
"""

from __future__ import annotations

from hiera_dspy import _API
from hiera_dspy.data import Dataset, load_dataset
from hiera_dspy.jobs.ablating import AblateRequest, Ablation, ablate
from hiera_dspy.jobs.compiling import Compiled, compile_judge
from hiera_dspy.jobs.exporting import Exported, ExportRequest, export_list
from hiera_dspy.jobs.holes import Filled, conclusions, fill_holes
from hiera_dspy.jobs.judging import Judged, judge
from hiera_dspy.jobs.labelling import Labelled, label
from hiera_dspy.jobs.planning import SamplePlan, plan
from hiera_dspy.jobs.requests import (
    CompileRequest,
    DataSource,
    DryRun,
    HolesRequest,
    HumanSample,
    JudgeRequest,
    Judging,
    KnownList,
    LabelRequest,
    PlanRequest,
    RunOptions,
)
from hiera_dspy.jobs.serving import PairRequest, ServedJudge, Verdict, load_served
from hiera_dspy.lm.choice import LMChoice

__all__ = list(_API)  # the one list of public names: hiera_dspy/__init__.py (kept beside the lazy facade)
