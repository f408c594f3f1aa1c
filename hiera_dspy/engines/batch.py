"""The batch engine: OpenAI's Batch API, level by level over all pairs (`--engine batch`; half price, <= 24 h a level).

Each round replays every unfinished pair's program in-process with its role LMs' engines swapped for a
`ReplayEngine` (`hiera_dspy.lm.intercept`): a request whose answer is known is answered from the run store, the first
unknown one stops that pair for this round and is collected. Pairs go in waves of at most `batch_max_requests`, read lazily
from the split, and answers are looked up in the store by key, so memory holds one wave. The requests a round
collects (all triages, then the plans of the delegated pairs, then their specialists, ...) become batch jobs, one per endpoint and model, split at
`batch_max_requests` / `batch_max_bytes` (OpenAI: 50,000 requests, 200 MB). Bodies are exactly what DSPy's native
engine would POST (same adapter, same lm15 serialisation); answers are parsed by the same adapter and their usage
lands in the ledger, so rows are ordinary judgments with the same tokens and calls as the thread engine. Identical
requests (a query analysis shared by pairs) are sent once.

Restart safety: an uploaded input file is recorded before its batch is created, the batch id as soon as it exists, and
a finished batch's answers in one transaction with its status. A restarted command polls the open batches (adopting
one created just before a crash, found by its input file) and never resubmits a request that is in an open or
finished batch; it then replays, so pairs finish from stored answers. A failed or expired batch turns its requests'
pairs into error rows; `--retry-errors` sends those requests again.

Rows' `seconds` are the replay time, not the time spent waiting for the provider.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping

import dspy

from hiera_dspy.agents.memo import commit_memos, provisional_memos
from hiera_dspy.engines import EngineOptions, Job
from hiera_dspy.engines.openai_batch import BatchClient
from hiera_dspy.errors import HieraError, RequestError
from hiera_dspy.lm.intercept import lm_objects, openai_chat_body, openai_chat_response, swapped_engines, wire_model
from hiera_dspy.lm.retry import RetryPolicy, retrying_adapter
from hiera_dspy.runs.runner import Progress, RunRows, judge_one, pending, run_rows, windows
from hiera_dspy.store.run_store import RunStore

OPENAI_BASE = "https://api.openai.com/v1"


class Pending(BaseException):
    """A request with no answer yet (a BaseException: no adapter fallback, retry or error row may swallow it)."""


class BatchRequestError(HieraError, RuntimeError):
    """The provider answered this request with an error (or its batch failed): the pair becomes an error row."""


def request_key(body: dict) -> str:
    """custom_id of a request: the hash of its exact body (identical requests share one answer)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


class Endpoint:
    """Where one LM's batches go: base URL, key (from the LM's settings or the environment) and wire model."""

    def __init__(self, lm: dspy.LM):
        if not lm.model.startswith("openai/"):
            raise RequestError(f"--engine batch needs OpenAI-compatible models (openai/...), not {lm.model!r}")
        kwargs = getattr(lm, "kwargs", None) or {}
        self.base_url = (kwargs.get("api_base") or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE).rstrip("/")
        self.client = BatchClient(self.base_url, kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY"))
        self.model = wire_model(lm.model)


class ReplayEngine:
    """Answers a request from the stored batch answers, or records it as wanted and stops the pair (`Pending`)."""

    def __init__(self, endpoint: Endpoint, answers: dict, wanted: dict):
        self.endpoint, self.answers, self.wanted = endpoint, answers, wanted

    def complete(self, request):
        """Answer `request` from the collected batch answers; an unanswered one is noted as wanted and raises
        Pending."""
        body = openai_chat_body(request)
        key = request_key(body)
        if key not in self.answers:
            self.wanted.setdefault(key, (self.endpoint, body))
            raise Pending(key)
        response, error = self.answers[key]
        if error:
            raise BatchRequestError(error)
        return openai_chat_response(json.loads(response), request.model)

    def close(self):
        """Nothing to release: the engine holds no connection."""
        pass


def replay_round(job: Job, todo, answers: dict, endpoints: dict, report) -> tuple[list, dict]:
    """Judge every pair of `todo` from `answers`; record finished rows; return (unfinished pairs, wanted requests)."""
    wanted: dict = {}
    still = []
    # a re-asked identical request would replay the same answer: one attempt, no back-off sleeps
    with swapped_engines(job.lms, lambda lm: ReplayEngine(endpoints[id(lm)], answers, wanted)), \
            dspy.context(adapter=retrying_adapter(None, RetryPolicy(attempts=1))):
        for position, pair in todo:
            with provisional_memos() as scratch:  # analyses count only once a pair that computed them finishes
                try:
                    row = judge_one(job.program, pair, position)
                except Pending:
                    still.append((position, pair))
                    continue
            commit_memos(scratch)
            job.store.record(job.run_id, row)
            report(row)
    return still, wanted


def chunks(lines: list[tuple[str, bytes]], max_requests: int, max_bytes: int):
    """Split (key, JSONL line) into files within the provider's limits."""
    batch, size = [], 0
    for key, line in lines:
        if len(line) > max_bytes:
            raise RequestError(f"one batch request is {len(line):,} bytes, over the {max_bytes:,}-byte file limit")
        if batch and (len(batch) >= max_requests or size + len(line) > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append((key, line))
        size += len(line)
    if batch:
        yield batch


def submit(store: RunStore, run_id: str, wanted: dict, opts: EngineOptions, progress: bool) -> None:
    """One batch per endpoint + model (+ split by limits) for the wanted requests."""
    groups: dict = {}
    for key, (endpoint, body) in wanted.items():
        groups.setdefault((endpoint.base_url, body["model"]), (endpoint, []))[1].append((key, body))
    for (base_url, model), (endpoint, requests) in groups.items():
        lines = [(key, (json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
                                    "body": body}) + "\n").encode()) for key, body in requests]
        for part in chunks(lines, opts.batch_max_requests, opts.batch_max_bytes):
            file_id = endpoint.client.upload(b"".join(line for _, line in part))
            keys = [key for key, _ in part]
            store.add_batch(run_id, base_url, model, file_id, keys)  # before create: a crash here is recoverable
            batch = endpoint.client.create(file_id, opts.batch_window, {"hiera_run": run_id})
            store.set_batch(run_id, file_id, batch["id"], batch.get("status") or "validating")
            if progress:
                print(f"batch {batch['id']}: {len(keys)} requests to {model} submitted", file=sys.stderr)


def wait(store: RunStore, run_id: str, clients: dict, opts: EngineOptions, progress: bool) -> None:
    """Poll every open batch of the run until each is finished and its answers are stored."""
    while True:
        open_batches = store.open_batches(run_id)
        if not open_batches:
            return
        for b in open_batches:
            client = clients.get(b["endpoint"])
            if client is None:
                raise RequestError(f"run {run_id} has an open batch at {b['endpoint']}, which no role LM of this "
                                 "command uses; rerun with the same --lm/--api-base")
            batch = client.retrieve(b["batch_id"]) if b["batch_id"] else client.find(b["input_file_id"])
            if batch is None:  # uploaded, never created: safe to create now (nothing was sent)
                batch = client.create(b["input_file_id"], opts.batch_window, {"hiera_run": run_id})
            if not b["batch_id"] or batch["status"] != b["status"]:
                store.set_batch(run_id, b["input_file_id"], batch["id"], batch["status"])
                if progress:
                    counts = batch.get("request_counts") or {}
                    print(f"batch {batch['id']}: {batch['status']} ({counts.get('completed', 0)}/"
                          f"{counts.get('total', len(b['keys']))} done)", file=sys.stderr)
            if batch["status"] in ("completed", "failed", "expired", "cancelled"):
                store.collect_batch(run_id, b["input_file_id"], batch["status"], collect(client, batch, b["keys"]))
        if store.open_batches(run_id):
            time.sleep(opts.poll_seconds)


def collect(client: BatchClient, batch: dict, keys: list[str]) -> dict:
    """key -> (response body JSON, error) for every request of a finished batch (missing ones are errors)."""
    answers: dict = {}
    for file_id in (batch.get("output_file_id"), batch.get("error_file_id")):
        if not file_id:
            continue
        for line in client.content(file_id).splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            response = item.get("response") or {}
            if item.get("error") or response.get("status_code") != 200:
                error = item.get("error") or response.get("body", {}).get("error") or response
                answers[item["custom_id"]] = (None, f"batch {batch['id']}: {json.dumps(error)[:300]}")
            else:
                answers[item["custom_id"]] = (json.dumps(response["body"]), None)
    for key in keys:
        answers.setdefault(key, (None, f"batch {batch['id']} {batch['status']} without an answer for this request"))
    return answers


class StoredAnswers(Mapping):
    """The run's collected batch answers, read from the store one request key at a time (never all at once)."""

    def __init__(self, store: RunStore, run_id: str):
        self.store, self.run_id = store, run_id

    def __getitem__(self, key: str) -> tuple[str | None, str | None]:
        answer = self.store.batch_answer(self.run_id, key)
        if answer is None:
            raise KeyError(key)
        return answer

    def __iter__(self):
        raise TypeError("StoredAnswers is looked up by key, never listed")

    def __len__(self) -> int:
        raise TypeError("StoredAnswers is looked up by key, never counted")


def run(job: Job) -> RunRows:
    """Judge the pending pairs through provider batches: finish open batches, then wave by wave (at most
    `batch_max_requests` pairs, read lazily) submit the missing requests level by level, wait, replay; return the
    run's rows."""
    if job.lms is None:
        raise RequestError("--engine batch needs the role LMs (Job.lms)")
    opts = job.options
    todo = pending(job.pairs, job.store, job.run_id, job.retry_errors, job.progress)
    report = Progress(todo.total, todo.done, job.progress)
    endpoints = {id(lm): Endpoint(lm) for lm in lm_objects(job.lms)}
    clients = {e.base_url: e.client for e in endpoints.values()}
    if job.retry_errors:
        job.store.forget_batch_errors(job.run_id)
    wait(job.store, job.run_id, clients, opts, job.progress)  # a restarted run: finish what is open, never resubmit
    answers = StoredAnswers(job.store, job.run_id)
    for wave in windows(todo, max(1, opts.batch_max_requests)):
        _levels(job, wave, answers, endpoints, clients, report)
    return run_rows(job.store, job.run_id, todo)


def _levels(job: Job, todo: list, answers: StoredAnswers, endpoints: dict, clients: dict, report) -> None:
    """Judge one wave of pairs: replay, submit what is missing, wait, until every pair of the wave has its row."""
    level = 0
    while todo:
        todo, wanted = replay_round(job, todo, answers, endpoints, report)
        if not todo:
            break
        level += 1
        # every batch is finished here (wait), and a finished batch stored an answer or an error for each request
        new = {k: v for k, v in wanted.items() if k not in answers}
        if not new:
            raise BatchRequestError(f"batch engine: {len(todo)} pairs wait for requests that were already answered "
                               "(a program whose requests change between replays cannot run as batches)")
        if job.progress:
            print(f"level {level}: {len(new)} requests for {len(todo)} pairs", file=sys.stderr)
        submit(job.store, job.run_id, new, job.options, job.progress)
        wait(job.store, job.run_id, clients, job.options, job.progress)
