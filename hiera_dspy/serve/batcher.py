"""Pairs that arrive together are judged together: requests wait in one queue, and each of `workers` tasks takes
what is queued (up to `max_batch` pairs), judges it in one call on a worker thread, and hands each request its own
verdicts back. A learned judge then embeds twenty waiting pairs in one pass instead of twenty passes; a request that
arrives alone is judged at once (no waiting for company)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from starlette.concurrency import run_in_threadpool


class Batcher:
    """`await submit(pairs)` -> `judge(pairs)`'s results for those pairs, judged with whatever else is queued."""

    def __init__(self, judge: Callable[[Sequence], list], max_batch: int, workers: int = 1):
        self.judge, self.max_batch, self.workers = judge, max_batch, workers
        self.queue: asyncio.Queue = asyncio.Queue()
        self.tasks: list[asyncio.Task] = []
        self.batches = 0

    def start(self) -> None:
        """Start the worker tasks (on the running event loop)."""
        self.tasks = [asyncio.create_task(self._work()) for _ in range(self.workers)]

    async def stop(self) -> None:
        """Cancel the workers; requests still queued get CancelledError."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        while not self.queue.empty():
            _, future = self.queue.get_nowait()
            future.cancel()

    async def submit(self, pairs: Sequence) -> list:
        """Queue `pairs` and wait for their results."""
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((list(pairs), future))
        return await future

    async def _work(self) -> None:
        carry = None  # a request taken from the queue that did not fit the last batch: the next one starts with it
        while True:
            jobs = [carry if carry is not None else await self.queue.get()]
            carry, size = None, len(jobs[0][0])
            while not self.queue.empty():
                job = self.queue.get_nowait()
                if size + len(job[0]) > self.max_batch:
                    carry = job
                    break
                jobs.append(job)
                size += len(job[0])
            live = [(pairs, future) for pairs, future in jobs if not future.cancelled()]
            if not live:
                continue
            try:
                results = await run_in_threadpool(self.judge, [p for pairs, _ in live for p in pairs])
            except Exception as exc:  # noqa: BLE001 - the judge's own failure goes to the requests, not the loop
                for _, future in live:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.batches += 1
            at = 0
            for pairs, future in live:
                if not future.done():
                    future.set_result(results[at:at + len(pairs)])
                at += len(pairs)
