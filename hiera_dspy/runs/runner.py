"""Judge a list of pairs with worker threads, writing each judgment to the run store as it finishes.

One bad pair never cancels the run: its exception becomes an error row (after the LM client's own bounded retries),
and `retry_errors=True` re-judges only those rows later.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

import dspy

from hiera_dspy.lm import ledger
from hiera_dspy.lm.retry import retrying
from hiera_dspy.lm.secrets import redact
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.runs.progress import Display, Progress
from hiera_dspy.runs.store import RunStore
from hiera_dspy.untrusted.screen import manipulation_flags, program_inputs


def judge_one(program: dspy.Module, pair: Pair, position: int | None = None) -> Judgment:
    """Judge one pair; never raises for a failure of the LM or the program (it becomes the row's `error`)."""
    book = ledger.Ledger()
    start = time.perf_counter()
    prediction, error = None, None
    with ledger.bind(book), retrying():
        try:
            prediction = program(**program_inputs(pair))  # the screened item: hiera_dspy.untrusted.screen
        except Exception as exc:  # noqa: BLE001 - one pair's failure must not stop the run
            error = exc
    return judgment_row(pair, position, book, prediction, error, time.perf_counter() - start)


def judgment_row(pair: Pair, position: int | None, book: ledger.Ledger, prediction, error: Exception | None,
                 seconds: float) -> Judgment:
    """The run store's row for one finished judgment (every engine builds its rows here): the prediction's own
    outputs become its `fields` (`hiera_dspy.records.prediction_fields`), an exception its redacted `error`; an item
    the screen changed because it looked manipulated gets `fields["manipulation"]`, the screen's flags."""
    message = None if error is None else redact(f"{type(error).__name__}: {error}")[:500]  # a server may echo the key
    judgment = Judgment.of(pair, prediction, message, book, seconds, position)
    flags = manipulation_flags(pair)
    if flags:
        judgment.fields["manipulation"] = list(flags)
    return judgment


def run_pairs(program: dspy.Module, pairs: list[Pair], store: RunStore, run_id: str, threads: int = 1,
              retry_errors: bool = False, progress: bool | Display = True) -> list[Judgment]:
    """Judge every pair of the split not yet finished in `run_id`; return all rows of the run for these pairs.
    `progress`: False (silent), True (a bar on a terminal, else a log line every 10 s or 5%) or a `Display`.

    The run's lease (see RunStore.start_run) is taken first if not held (RunBusy while another process writes the
    run) and released at the end: one writer per run."""
    store.claim(run_id)
    try:
        return _run_pairs(program, pairs, store, run_id, threads, retry_errors, progress)
    finally:
        store.release(run_id)


def pending(pairs: list[Pair], store: RunStore, run_id: str, retry_errors: bool = False,
            progress: bool | Display = True) -> list[tuple[int, Pair]]:
    """(position, pair) for every pair of the split not yet finished in `run_id` (every engine starts here)."""
    done = store.finished_ids(run_id, include_errors=not retry_errors)
    todo = [(i, p) for i, p in enumerate(pairs) if p.id not in done]
    if progress and done:
        print(f"resuming run {run_id}: {len(pairs) - len(todo)} of {len(pairs)} judgments already done",
              file=sys.stderr)
    return todo


def run_rows(store: RunStore, run_id: str, pairs: list[Pair]) -> list[Judgment]:
    """The run's judgments of these pairs, in split order (what every engine returns)."""
    wanted = {p.id for p in pairs}
    return [r for r in store.rows(run_id) if r.id in wanted]


def _run_pairs(program, pairs, store, run_id, threads, retry_errors, progress) -> list[Judgment]:
    todo = pending(pairs, store, run_id, retry_errors, progress)
    report = Progress(len(pairs), len(pairs) - len(todo), progress)

    def task(item):
        position, pair = item
        row = judge_one(program, pair, position)
        store.record(run_id, row)
        return row

    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    try:
        futures = [pool.submit(task, item) for item in todo]
        for future in as_completed(futures):
            report(future.result())
    except BaseException:
        # Ctrl-C or a fatal error: judgments already running finish and are recorded; queued ones never start
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        report.close()
    pool.shutdown(wait=True)
    return run_rows(store, run_id, pairs)
