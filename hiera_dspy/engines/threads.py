"""The thread engine (the default): `runner.run_pairs` with `--threads N` worker threads."""

from __future__ import annotations

from hiera_dspy.engines import Job
from hiera_dspy.runs.runner import RunRows, run_pairs


def run(job: Job) -> RunRows:
    """Judge the job's pending pairs on a thread pool; return every row of the run in split order."""
    return run_pairs(job.program, job.pairs, job.store, job.run_id, threads=job.options.threads,
                     retry_errors=job.retry_errors, progress=job.progress, lms=job.lms, breaker=job.breaker)
