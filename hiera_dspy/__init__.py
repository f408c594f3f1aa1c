"""hiera-dspy: HIERA (arXiv 2608.00785), hierarchical multi-agent relevance judgments, as a declarative DSPy program.

Example:
    >>> import hiera_dspy
    >>> judge = hiera_dspy.load_judge("artifacts/msrd/hiera.json")
    >>> judge(query="tom cruise spy movie", item_title="Mission: Impossible", item_text="...").label
"""

from hiera_dspy import settings

settings.configure_process()  # before dspy is imported: litellm's cost map offline, DSPy's cache under our cache root

from hiera_dspy.artifacts.judge_file import load_judge, save_judge  # noqa: E402
from hiera_dspy.labels import LabelScheme, get_scheme  # noqa: E402
from hiera_dspy.methods import BuildContext, available, build  # noqa: E402
from hiera_dspy.records import Pair  # noqa: E402

__all__ = ["load_judge", "save_judge", "build", "available", "BuildContext", "LabelScheme", "get_scheme", "Pair"]
__version__ = "0.1.0"
