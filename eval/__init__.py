"""The commands of the evaluation and labelling jobs, each `python -m eval.NAME` (or `hiera-dspy NAME`)."""

import hiera_dspy  # noqa: F401 - its import lets a command's earlier module name run (hiera_dspy/moved.py)
