"""Classification metrics and percentile-bootstrap CIs for relevance judgments: they live in the library
(`hiera_dspy.scoring`, which writes every run's metrics.json); this module keeps the names the reports import."""

from hiera_dspy.scoring import (METRICS, NON_LM_ROLES, _nan_to_none, _point, bootstrap_ci,  # noqa: F401
                                classification_metrics, cost_columns, final_label, metrics_from_confusion,
                                reached_llm)
