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

from typing import TYPE_CHECKING

from hiera_dspy import _API
from hiera_dspy.registry import lazy_names

# name -> the module it lives in; each is imported on first use (PEP 562), so a command loads only its own job
# (`eval.label` does not load the ablation grid, nor `eval.export` DSPy)
_WHERE: dict[str, str] = {
    "Dataset": "hiera_dspy.data", "load_dataset": "hiera_dspy.data",
    "AblateRequest": "hiera_dspy.jobs.ablating", "Ablation": "hiera_dspy.jobs.ablating",
    "ablate": "hiera_dspy.jobs.ablating",
    "Compiled": "hiera_dspy.jobs.compiling", "compile_judge": "hiera_dspy.jobs.compiling",
    "Exported": "hiera_dspy.jobs.exporting", "ExportRequest": "hiera_dspy.jobs.exporting",
    "export_list": "hiera_dspy.jobs.exporting",
    "Filled": "hiera_dspy.jobs.holes", "conclusions": "hiera_dspy.jobs.holes", "fill_holes": "hiera_dspy.jobs.holes",
    "Judged": "hiera_dspy.jobs.judging", "judge": "hiera_dspy.jobs.judging",
    "Labelled": "hiera_dspy.jobs.labelling", "label": "hiera_dspy.jobs.labelling",
    "SamplePlan": "hiera_dspy.jobs.planning", "plan": "hiera_dspy.jobs.planning",
    **dict.fromkeys(("CompileRequest", "DataSource", "DryRun", "HolesRequest", "HumanSample", "JudgeRequest",
                     "Judging", "KnownList", "LabelRequest", "PlanRequest", "RunOptions"), "hiera_dspy.jobs.requests"),
    **dict.fromkeys(("PairRequest", "ServedJudge", "Verdict", "load_served"), "hiera_dspy.jobs.serving"),
    "LMChoice": "hiera_dspy.lm.choice",
}

__all__ = list(_API)  # the one list of public names: hiera_dspy/__init__.py (kept beside the lazy facade)
__getattr__, __dir__ = lazy_names("hiera_dspy.api", _WHERE, globals())  # a job's module imported on first use


if TYPE_CHECKING:  # the names as a type checker sees them
    from hiera_dspy.data import Dataset, load_dataset  # noqa: F401
    from hiera_dspy.jobs.ablating import AblateRequest, Ablation, ablate  # noqa: F401
    from hiera_dspy.jobs.compiling import Compiled, compile_judge  # noqa: F401
    from hiera_dspy.jobs.exporting import Exported, ExportRequest, export_list  # noqa: F401
    from hiera_dspy.jobs.holes import Filled, conclusions, fill_holes  # noqa: F401
    from hiera_dspy.jobs.judging import Judged, judge  # noqa: F401
    from hiera_dspy.jobs.labelling import Labelled, label  # noqa: F401
    from hiera_dspy.jobs.planning import SamplePlan, plan  # noqa: F401
    from hiera_dspy.jobs.requests import (  # noqa: F401
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
    from hiera_dspy.jobs.serving import PairRequest, ServedJudge, Verdict, load_served  # noqa: F401
    from hiera_dspy.lm.choice import LMChoice  # noqa: F401
