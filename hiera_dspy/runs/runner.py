"""Judge the pairs of a split with worker threads, writing each judgment to the run store as it finishes.

Memory stays bounded whatever the split's size: the pairs are read as they are needed (any iterable, re-iterated
twice: a counting pass, then the judging pass), at most `threads x IN_FLIGHT` are in flight (`PREFETCH` for a program
that scores in batches: its `prefetch` gets each window of pairs before they are judged), finished rows live only in
the store, and the rows returned are streamed back from it (`RunRows`).

One bad pair never cancels the run: its exception becomes an error row (after the LM client's own bounded retries),
and `retry_errors=True` re-judges only those rows later. An endpoint that cannot be reached does
(hiera_dspy/lm/breaker.py): the run stops taking pairs and its rows come back with `stopped` set.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from queue import Empty, SimpleQueue

import dspy

from hiera_dspy.lm import breaker as breakers
from hiera_dspy.lm import ledger, query_demos, retention
from hiera_dspy.lm.breaker import CircuitBreaker, EndpointDown
from hiera_dspy.lm.retry import retrying
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.runs.progress import Display, Progress
from hiera_dspy.secrets import redact
from hiera_dspy.store.idset import IdSet
from hiera_dspy.store.run_store import RunStore
from hiera_dspy.untrusted.screen import manipulation_flags, program_inputs

WINDOW = 1000  # pairs checked against the store per query when finding what is left to judge
IN_FLIGHT = 4  # pairs submitted per worker thread ahead of the one it is judging
PREFETCH = 512  # pairs a program with a `prefetch` (the learned judges) scores in one batch before judging them


def judge_one(program: dspy.Module, pair: Pair, position: int | None = None) -> Judgment:
    """Judge one pair; never raises for a failure of the LM or the program (it becomes the row's `error`), except
    EndpointDown: the run's circuit breaker (bound by the engine, hiera_dspy/lm/breaker.py) has tripped, this pair
    was not judged and gets no row."""
    book = ledger.Ledger()
    start = time.perf_counter()
    prediction, error = None, None
    with ledger.bind(book), retrying(), retention.bounded(), query_demos.reading(program, pair) as demos:
        try:  # DSPy keeps its last 100 calls, not 10,000; the pair's known judgments are its prompts' demos
            prediction = program(**program_inputs(pair))  # the screened item: hiera_dspy.untrusted.screen
        except EndpointDown:
            raise
        except Exception as exc:  # noqa: BLE001 - one pair's failure must not stop the run
            error = exc
    return judgment_row(pair, position, book, prediction, error, time.perf_counter() - start, demos)


def judgment_row(pair: Pair, position: int | None, book: ledger.Ledger, prediction, error: Exception | None,
                 seconds: float, demos: tuple = ()) -> Judgment:
    """The run store's row for one finished judgment (every engine builds its rows here): the prediction's own
    outputs become its `fields` (`hiera_dspy.records.prediction_fields`), an exception its redacted `error`; an item
    the screen changed because it looked manipulated gets `fields["manipulation"]`, the screen's flags; a pair field
    cut to fit a prompt gets `fields["truncated"]`, field -> the pair's original characters; a pair whose prompts read
    its query's known judgments as demos (`hiera_dspy.lm.query_demos`) gets `fields["known_demos"]`, their item ids."""
    message = None if error is None else redact(f"{type(error).__name__}: {error}")[:500]  # a server may echo the key
    judgment = Judgment.of(pair, prediction, message, book, seconds, position)
    flags = manipulation_flags(pair)
    if flags:
        judgment.fields["manipulation"] = list(flags)
    if demos:
        judgment.fields["known_demos"] = [d.item_id for d in demos]
    if book.cuts:
        judgment.fields["truncated"] = {name: len(getattr(pair, name, None) or "") for name in sorted(book.cuts)}
    return judgment


def run_pairs(program: dspy.Module, pairs: Iterable[Pair], store: RunStore, run_id: str, threads: int = 1,
              retry_errors: bool = False, progress: bool | Display = True, lms=None,
              breaker: CircuitBreaker | None = None) -> RunRows:
    """Judge every pair of the split not yet finished in `run_id`; return the run's rows for these pairs (streamed
    from the store on demand, see RunRows). `progress`: False (silent), True (a bar on a terminal, else a log line
    every 10 s or 5%) or a `Display`. Before the first pair the endpoints of `lms` are checked (a health check); the run stops early
    when `breaker` (default: a new one) trips, and the rows' `stopped` says why (hiera_dspy/lm/breaker.py).

    The run's lease (see RunStore.start_run) is taken first if not held (RunBusy while another process writes the
    run) and released at the end: one writer per run. At most `threads x IN_FLIGHT` pairs are in memory at once
    (`PREFETCH` when the program has a `prefetch`: the learned judges score each window in batches)."""
    store.claim(run_id)
    try:
        return _run_pairs(program, pairs, store, run_id, threads, retry_errors, progress, lms,
                          breaker or CircuitBreaker())
    finally:
        store.release(run_id)


def pending(pairs: Iterable[Pair], store: RunStore, run_id: str, retry_errors: bool = False,
            progress: bool | Display = True) -> Todo:
    """The pairs of the split not yet finished in `run_id` (every engine starts here): a `Todo`, which counts the
    split once (one pass, one store query per window) and then yields (position, pair) lazily."""
    todo = Todo(pairs, store, run_id, retry_errors)
    if progress and todo.done:
        print(f"resuming run {run_id}: {todo.done} of {todo.total} judgments already done", file=sys.stderr)
    return todo


class Todo:
    """The unfinished (position, pair) of a split, found a window at a time (`WINDOW` pairs, one indexed store query
    each), never by loading the run's ids. Construction makes one counting pass: `total`, `done`, and `ids` (the
    split's ids as a compact IdSet, for `RunRows`); iteration makes a second pass and yields what is still missing
    at that moment. `len()` is the number pending at construction."""

    def __init__(self, pairs: Iterable[Pair], store: RunStore, run_id: str, retry_errors: bool = False):
        if iter(pairs) is pairs:  # a one-shot iterator cannot be read twice: keep it (callers pass lists or splits)
            pairs = list(pairs)
        self.pairs, self.store, self.run_id, self.retry_errors = pairs, store, run_id, retry_errors
        self.ids = IdSet()
        self.total = self.done = 0
        for window in windows(enumerate(pairs), WINDOW):
            for _, pair in window:
                self.ids.add(pair.id)
            self.total += len(window)
            self.done += len(self._finished(window))

    def _finished(self, window: list[tuple[int, Pair]]) -> set[str]:
        return self.store.finished_among(self.run_id, [p.id for _, p in window],
                                         include_errors=not self.retry_errors)

    def __len__(self) -> int:
        return self.total - self.done

    def __bool__(self) -> bool:
        return self.total > self.done

    def __iter__(self) -> Iterator[tuple[int, Pair]]:
        if not self:
            return
        for window in windows(enumerate(self.pairs), WINDOW):
            finished = self._finished(window)
            yield from ((i, p) for i, p in window if p.id not in finished)


def windows(items: Iterable, size: int) -> Iterator[list]:
    """`items` in consecutive lists of at most `size`."""
    it = iter(items)
    while window := list(islice(it, size)):
        yield window


class RunRows(Sequence):
    """The run's judgments of a split, in split order, streamed from the store each time it is iterated (rows of
    the run outside the split are left out). Indexing or slicing reads the rows into memory once (fine for a small
    run or a test); a million-row run is iterated."""

    def __init__(self, store: RunStore, run_id: str, ids: IdSet, stopped: EndpointDown | None = None):
        self.store, self.run_id, self.ids = store, run_id, ids
        self.stopped = stopped  # why the run stopped before its last pair (an unreachable endpoint), else None
        self._count: int | None = None
        self._list: list[Judgment] | None = None

    def __iter__(self) -> Iterator[Judgment]:
        if self._list is not None:
            yield from self._list
            return
        yield from (r for r in self.store.iter_rows(self.run_id) if r.id in self.ids)

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self)
        return self._count

    def with_gold(self) -> Iterator[Judgment]:
        """The rows of pairs that carry a gold label (the store filters; a labelling run usually has none)."""
        yield from (r for r in self.store.iter_rows(self.run_id, gold_only=True) if r.id in self.ids)

    def __getitem__(self, index):
        if self._list is None:
            self._list = list(self)
        return self._list[index]


def run_rows(store: RunStore, run_id: str, todo: Todo, breaker: CircuitBreaker | None = None) -> RunRows:
    """The run's judgments of the todo's split, in split order (what every engine returns); `stopped` is the
    breaker's EndpointDown when it tripped."""
    return RunRows(store, run_id, todo.ids, breaker.tripped if breaker is not None else None)


def check_endpoints_first(todo: Todo, lms, breaker: CircuitBreaker) -> bool:
    """Check the endpoints of `lms` (a health check) when there is something to judge; False (the breaker tripped) when one cannot
    be reached."""
    if not todo or lms is None:
        return True
    try:
        breaker.check_health(lms)
    except EndpointDown:
        return False
    return True


def warm(prefetch, pairs: Sequence[Pair]) -> None:
    """Let a program score `pairs` in batches before they are judged (`prefetch`, on the screened inputs each pair
    will be judged on). A failure here loses nothing: it is said once on stderr, and each pair is then scored on its
    own, a pair that fails becoming its own error row."""
    try:
        prefetch([pair._replace(**program_inputs(pair)) for pair in pairs])
    except Exception as exc:  # noqa: BLE001 - the pairs are still judged, one at a time
        print(f"batch scoring of {len(pairs)} pairs failed ({type(exc).__name__}: {redact(str(exc))[:200]}); "
              "judging them one at a time", file=sys.stderr)


def _run_pairs(program, pairs, store, run_id, threads, retry_errors, progress, lms, breaker) -> RunRows:
    todo = pending(pairs, store, run_id, retry_errors, progress)
    if not check_endpoints_first(todo, lms, breaker):
        return run_rows(store, run_id, todo, breaker)
    report = Progress(todo.total, todo.done, progress)

    def task(item):
        position, pair = item
        if breaker.tripped is not None:
            return None  # queued before the breaker tripped: not sent, no row
        try:
            with breakers.bound(breaker):
                row = judge_one(program, pair, position)
        except EndpointDown:
            return None
        store.record(run_id, row)
        return row

    def done(future) -> None:
        if (row := future.result()) is not None:
            report(row)

    workers = max(1, threads)
    pool = ThreadPoolExecutor(max_workers=workers)
    finished: SimpleQueue = SimpleQueue()  # futures as they finish: waiting for one costs the same whatever is in flight
    in_flight = 0
    prefetch = getattr(program, "prefetch", None)
    first = True  # the first pair is judged here, alone: what its path imports is imported before any worker runs

    def collect(block: bool) -> None:
        """Report the finished judgments: at least one when `block`, then those already finished."""
        nonlocal in_flight
        while in_flight:
            try:
                future = finished.get(block)
            except Empty:
                return
            in_flight -= 1
            done(future)
            block = False

    try:
        for window in windows(todo, PREFETCH if prefetch else 1):  # a pair is read only when it will soon be judged
            if breaker.tripped is not None:
                break
            if prefetch:  # the program keeps one batch of scores: the previous window finishes first
                while in_flight:
                    collect(block=True)
                warm(prefetch, [pair for _, pair in window])
            for item in window:
                if first:
                    first = False
                    if (row := task(item)) is not None:
                        report(row)
                    continue
                if in_flight >= workers * IN_FLIGHT and not prefetch:
                    collect(block=True)
                pool.submit(task, item).add_done_callback(finished.put)
                in_flight += 1
        while in_flight:
            collect(block=True)
    except BaseException:
        # Ctrl-C or a fatal error: judgments already running finish and are recorded; queued ones never start
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        report.close()
    pool.shutdown(wait=True)
    return run_rows(store, run_id, todo, breaker)
