"""hiera-dspy: HIERA (arXiv 2608.00785), hierarchical multi-agent relevance judgments, as a declarative DSPy program.

Example:
    >>> import hiera_dspy
    >>> judge = hiera_dspy.load_judge("artifacts/msrd/hiera.json")
    >>> judge(query="tom cruise spy movie", item_title="Mission: Impossible", item_text="...").label

The main jobs are one call each (`hiera_dspy.api`; docs/api.md): judge, ablate, label, fill_holes, conclusions,
plan, compile_judge. Every name here is imported on first use (PEP 562), so `import hiera_dspy.metrics` or
`import hiera_dspy.conclude` loads no DSPy.
"""

from hiera_dspy import moved, settings
from hiera_dspy.registry import lazy_names

moved.install()  # modules that moved import under their earlier names for one release (hiera_dspy/moved.py)
settings.configure_process()  # before dspy is imported: litellm's cost map offline, DSPy's cache under our cache root

# The public names of the main jobs, in one list: hiera_dspy.api imports each and takes this list as its __all__.
_API = ("judge", "ablate", "label", "fill_holes", "conclusions", "plan", "compile_judge", "load_dataset", "Dataset",
        "JudgeRequest", "LabelRequest", "HolesRequest", "CompileRequest", "PlanRequest", "DataSource", "Judging",
        "RunOptions", "DryRun", "HumanSample", "KnownList", "LMChoice", "Judged", "Labelled", "Filled", "Compiled",
        "AblateRequest", "Ablation", "SamplePlan", "export_list", "ExportRequest", "Exported", "load_served",
        "ServedJudge", "PairRequest", "Verdict")
_WHERE = {
    "load_judge": "hiera_dspy.artifacts.judge_file", "save_judge": "hiera_dspy.artifacts.judge_file",
    "LabelScheme": "hiera_dspy.labels", "get_scheme": "hiera_dspy.labels",
    "build": "hiera_dspy.methods", "available": "hiera_dspy.methods", "BuildContext": "hiera_dspy.methods",
    "Pair": "hiera_dspy.records", "HieraError": "hiera_dspy.errors",
    **dict.fromkeys(_API, "hiera_dspy.api"),
}

__all__ = list(_WHERE)
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_names("hiera_dspy", _WHERE, globals())  # each imported from its module on first use
