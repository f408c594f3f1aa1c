"""One agent step: a predictor called under its role's LM, accounted in the judgment's ledger, with an answer that
does not parse salvaged (`hiera_dspy.lm.salvage`) or failed, never turned into a label.
"""

from __future__ import annotations

import dspy
from dspy.utils.exceptions import AdapterParseError

from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm import ledger
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.lm.salvage import salvage


def run_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
             **inputs) -> dspy.Prediction:
    """Call one predictor as a named, accounted step. An answer that still does not parse after the retries is salvaged
    (see `salvage`): the step is `parse_recovered`, and `degraded` when some of its outputs had to be defaulted; an
    answer with no label, or with nothing readable, fails the step (an `AdapterParseError` naming it)."""
    with ledger.step(name, role, lms.for_role(role)) as record:
        record.inputs, record.profile = ledger.shown(inputs), getattr(predictor, "profile", None)
        try:
            prediction = predictor(**inputs)
        except AdapterParseError as exc:
            prediction, record.degraded = salvage(exc, scheme, name)
            record.parse_recovered = True
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction


async def arun_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
                    **inputs) -> dspy.Prediction:
    """`run_step` through DSPy's async path (`predictor.acall`)."""
    with ledger.step(name, role, lms.for_role(role)) as record:
        record.inputs, record.profile = ledger.shown(inputs), getattr(predictor, "profile", None)
        try:
            prediction = await predictor.acall(**inputs)
        except AdapterParseError as exc:
            prediction, record.degraded = salvage(exc, scheme, name)
            record.parse_recovered = True
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction
