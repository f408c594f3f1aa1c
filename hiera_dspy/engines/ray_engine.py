"""The Ray engine: judging on a Ray cluster, one program replica and one LM endpoint per actor (`--engine ray`).

Pairs are read a window at a time and grouped by query within it (so a replica's query analyses are reused within a
group), groups of at most
`GROUP_SIZE` pairs go to a pool of `--ray-actors` actors, at most two groups in flight per actor. Each actor builds
its own program from `Job.factory(api_base)` (a picklable recipe, `hiera_dspy.jobs.preparing.Replica`: the job's request
at the actor's endpoint; actor i uses the i-th of `--api-base a,b,c`, cycling), so no LM, lock or model is shipped. Every finished
judgment flows back to the driver, which writes it to the run store at once: killing the driver loses only the groups
in flight (re-judged on resume); a killed actor is restarted by Ray and its group retried.

`--ray-address` joins an existing cluster (the package must be installed on its nodes); without it a local Ray
instance starts. An actor reserves a quarter CPU (it mostly waits on its endpoint). Ray is an optional extra: `pip install -e '.[ray]'`.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

from hiera_dspy import settings
from hiera_dspy.engines import Job
from hiera_dspy.errors import RequestError
from hiera_dspy.records import Judgment
from hiera_dspy.runs.runner import Progress, RunRows, judge_one, pending, run_rows, windows

GROUP_SIZE = 16
IN_FLIGHT_PER_ACTOR = 2
WINDOW_GROUPS = 4  # pending pairs read at a time: actors x in flight x group size x this
ACTOR_CPUS = 0.25


def groups_by_query(todo: list[tuple[int, object]], size: int = GROUP_SIZE) -> list[list[tuple[int, object]]]:
    """(position, pair) grouped by query, each group cut into chunks of at most `size`, in split order."""
    by_query: dict[str, list] = defaultdict(list)
    for item in todo:
        by_query[item[1].query].append(item)
    return [group[i:i + size] for group in by_query.values() for i in range(0, len(group), size)]


class JudgeActor:
    """One program replica (built in the actor from the recipe) judging groups of pairs."""

    def __init__(self, factory, api_base: str | None):
        import dspy

        dspy.configure_cache(enable_disk_cache=False)  # replicas on one node must not share a disk cache file
        self.program = factory(api_base)

    def judge(self, group: list) -> list[Judgment]:
        """Judge each (position, pair) of `group` with this replica; return the judgments in order."""
        return [judge_one(self.program, pair, position) for position, pair in group]


def _init_ray(job: Job):
    try:
        import ray
    except ImportError:
        raise RequestError("--engine ray needs Ray: pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = {"env_vars": {"PYTHONPATH": path, **settings.process_env()}}
        if job.options.ray_address:
            ray.init(address=job.options.ray_address, runtime_env=env, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, runtime_env=env, log_to_driver=False, configure_logging=False)
    return ray


def run(job: Job) -> RunRows:
    """Judge the pending pairs on Ray actors, one program replica each (spread over the API bases); return the run's
    rows. The pending pairs are read a window at a time (grouped by query within it), so memory stays bounded."""
    if job.factory is None:
        raise RequestError("--engine ray needs a program recipe (Job.factory) to build one replica per actor")
    todo = pending(job.pairs, job.store, job.run_id, job.retry_errors, job.progress)
    report = Progress(todo.total, todo.done, job.progress)
    if not todo:
        return run_rows(job.store, job.run_id, todo)
    ray = _init_ray(job)
    bases = job.options.api_bases or [None]
    # an actor mostly waits on its endpoint: a small CPU share, so more actors than cores can be placed
    remote = ray.remote(num_cpus=ACTOR_CPUS, max_restarts=2, max_task_retries=2)(JudgeActor)
    actors = [remote.remote(job.factory, bases[i % len(bases)]) for i in range(max(1, job.options.ray_actors))]
    window = len(actors) * IN_FLIGHT_PER_ACTOR * GROUP_SIZE * WINDOW_GROUPS
    try:
        for part in windows(todo, window):
            _dispatch(ray, actors, groups_by_query(part), job, report)
    finally:
        for actor in actors:
            ray.kill(actor)
        if job.progress:
            print(f"ray: {len(actors)} actors, endpoints {bases}", file=sys.stderr)
    return run_rows(job.store, job.run_id, todo)


def _dispatch(ray, actors: list, queue: list, job: Job, report) -> None:
    """Send the groups to the actors, at most IN_FLIGHT_PER_ACTOR each; record every row as its group returns."""
    queue.reverse()  # pop() from the end keeps split order
    in_flight: dict = {}
    while queue or in_flight:
        for actor in actors:
            while queue and sum(1 for a in in_flight.values() if a is actor) < IN_FLIGHT_PER_ACTOR:
                in_flight[actor.judge.remote(queue.pop())] = actor
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            in_flight.pop(ref)
            for row in ray.get(ref):
                job.store.record(job.run_id, row)
                report(row)
