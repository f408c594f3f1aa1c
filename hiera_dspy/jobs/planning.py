"""Plan the human sample of a holes run before anyone labels (what `python -m eval.plan` does): per system and pair
of systems, the sampled queries an interval of a width, or telling a pair apart, needs
(`hiera_dspy.labelling.plan.plan_run`)."""

from __future__ import annotations

from hiera_dspy.errors import RequestError
from hiera_dspy.jobs.preparing import open_store
from hiera_dspy.jobs.requests import PlanRequest
from hiera_dspy.labelling.plan import plan_run


def plan(request: PlanRequest) -> dict:
    """The plan of the holes run `request.run`: every number `eval.plan --json` prints."""
    if not 0 < request.width < 2 or not 0 < request.power < 1 or request.draws < 2:
        raise RequestError("give --width in (0, 2), --power in (0, 1) and --draws of at least 2")
    return plan_run(open_store(request.store), request.run, request.width, request.power, request.draws, request.seed)
